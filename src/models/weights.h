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
  /// A sparse mixture-of-experts MLP (ModelConfig::is_moe_layer; the dense tensors above are
  /// then undefined): the router [experts, hidden], each expert's gate / up [moe_inter, hidden]
  /// and down [hidden, moe_inter]; Qwen2-MoE's shared expert and its gate [1, hidden].
  Tensor router;
  std::vector<Tensor> expert_gate, expert_up, expert_down;
  Tensor shared_gate_proj, shared_up_proj, shared_down_proj, shared_expert_gate;
};

struct ModelWeights {
  Tensor embed_tokens;
  std::vector<LayerWeights> layers;
  Tensor norm;
  Tensor lm_head;  ///< the embedding itself when tied
};

/// The Hugging Face names of a sparse MoE layer's weights: the router, expert e's three
/// projections (Mixtral's block_sparse_moe.experts.{e}.w1 / w3 / w2, the others'
/// mlp.experts.{e}.gate_proj / up_proj / down_proj) and the shared expert's.
struct MoeNames {
  std::string router, shared_gate, shared_up, shared_down, shared_expert_gate;
  /// GraniteMoe's stacks (ModelConfig::stacked_experts): every expert's gate and up rows, every
  /// expert's down, the shared MLP's gate and up rows; empty for the other architectures. A
  /// GGUF holds the experts as llama.cpp splits them, under the per-expert names.
  std::string stacked_gate_up, stacked_down, shared_gate_up;
  std::string gate(int64_t e) const { return experts + std::to_string(e) + gate_suffix; }
  std::string up(int64_t e) const { return experts + std::to_string(e) + up_suffix; }
  std::string down(int64_t e) const { return experts + std::to_string(e) + down_suffix; }
  std::string experts, gate_suffix, up_suffix, down_suffix;
};
MoeNames moe_names(const ModelConfig& config, int64_t layer);

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
