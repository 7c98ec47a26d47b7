// The decoder's weights under Hugging Face's names (model.layers.{i}.self_attn.q_proj.weight,
// ...), loaded from a checkpoint onto a device in one dtype, every shape checked against the
// config so a mismatched file is named, not run.
#pragma once

#include <string>
#include <vector>

#include "anvil/config.h"
#include "anvil/safetensors.h"
#include "anvil/tensor.h"

namespace anvil {

struct LayerWeights {
  Tensor input_layernorm;
  Tensor q_proj, k_proj, v_proj, o_proj;
  Tensor q_bias, k_bias, v_bias, o_bias;  ///< undefined when the architecture has none
  Tensor q_norm, k_norm;                  ///< Qwen3 only
  Tensor post_attention_layernorm;
  Tensor gate_proj, up_proj, down_proj;
  Tensor gate_bias, up_bias, down_bias;
};

struct ModelWeights {
  Tensor embed_tokens;
  std::vector<LayerWeights> layers;
  Tensor norm;
  Tensor lm_head;  ///< the embedding itself when tied
};

/// Loads every weight the config calls for from `checkpoint`, converted to `dtype` on `device`.
ModelWeights load_weights(const Checkpoint& checkpoint, const ModelConfig& config, DType dtype,
                          Device device);

}  // namespace anvil
