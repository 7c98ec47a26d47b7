// The decoder's weights under Hugging Face's names (model.layers.{i}.self_attn.q_proj.weight,
// ...), loaded from a checkpoint onto a device in one dtype, every shape checked against the
// config so a mismatched file is named, not run.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "anvil/config.h"
#include "anvil/tensor.h"
#include "models/weight_source.h"

namespace anvil {

struct LayerWeights {
  Tensor input_layernorm;
  Tensor q_proj, k_proj, v_proj, o_proj;
  Tensor q_bias, k_bias, v_bias, o_bias;  ///< undefined when the architecture has none
  Tensor q_norm, k_norm;  ///< per head [head_dim] (Qwen3, Gemma 3), or whole [heads * head_dim]
                          ///< (OLMo 2's qk_norm_full)
  /// The MLP's input norm: post_attention_layernorm, or Gemma 2 / 3's pre_feedforward_layernorm.
  Tensor post_attention_layernorm;
  /// Gemma 2 / 3 (sandwich_norms): the norms of the attention's output (their
  /// post_attention_layernorm) and of the MLP's (post_feedforward_layernorm); else undefined.
  Tensor attn_out_norm, mlp_out_norm;
  Tensor gate_proj, up_proj, down_proj;
  Tensor gate_bias, up_bias, down_bias;
};

struct ModelWeights {
  Tensor embed_tokens;
  std::vector<LayerWeights> layers;
  Tensor norm;
  Tensor lm_head;  ///< the embedding itself when tied
};

/// The Hugging Face names and shapes of every weight the config calls for, in checkpoint order
/// (the tied lm_head is left out).
std::vector<std::pair<std::string, Shape>> hf_weight_names(const ModelConfig& config);

/// Loads every weight the config calls for from `source` onto `device`. With `dtype` set, every
/// weight is converted to it; unset, each keeps the dtype it is stored in (a GGUF's quantized
/// blocks stay quantized). Gemma's norm weights (norm_plus_one) come back as 1 + w, added in
/// float32 before any conversion.
ModelWeights load_weights(const WeightSource& source, const ModelConfig& config,
                          std::optional<DType> dtype, Device device);

}  // namespace anvil
