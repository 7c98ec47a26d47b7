// The architectures the one decoder serves. Each is a short description of how its config maps
// onto the decoder's switches (biases, q/k norm, Gemma's norms and softcaps); the weight names
// are Hugging Face's and shared.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "anvil/config.h"

namespace anvil {

struct Architecture {
  const char* class_name;  ///< "Qwen3ForCausalLM"
  const char* model_type;  ///< "qwen3"
  /// max_position_embeddings when config.json leaves it out (the config class's default).
  int64_t default_max_positions;
  /// rms_norm_eps when config.json leaves it out.
  double default_rms_norm_eps;
  /// The config class's own top-level original_max_position_embeddings (Phi3Config: 4096),
  /// which the RoPE scalings take before their parameters'; 0 when the class has none.
  int64_t default_original_context;
  /// The config class reads rope types "su" and "yarn" as longrope (Phi3Config).
  bool yarn_means_longrope;
  /// The attention rotates only int(head_dim * partial_rotary_factor) dimensions of each head
  /// (Phi3Attention); the other classes' apply_rotary_pos_emb fails on such a factor.
  bool partial_rotary;
  /// Sets the architecture's flags on `config` from the raw config.json.
  void (*apply)(const nlohmann::json& raw, ModelConfig& config, const std::string& source);
  /// rope_theta when config.json leaves it out.
  double default_rope_theta = 10000.0;
  /// rope_parameters may hold one set per layer type, {"full_attention": ...,
  /// "sliding_attention": ...} (Gemma3TextConfig).
  bool rope_per_layer_type = false;
  /// head_dim when config.json leaves it out (0: hidden_size / num_attention_heads).
  int64_t default_head_dim = 0;
  /// num_key_value_heads when config.json leaves it out (0: num_attention_heads).
  int64_t default_kv_heads = 0;
  /// tie_word_embeddings when config.json leaves it out (Gemma's configs: true).
  bool default_tie_word_embeddings = false;
};

/// Finds the architecture named by config.json's `architectures[0]` (or, when absent, its
/// `model_type`); throws naming the file and listing what anvil supports.
const Architecture& find_architecture(const nlohmann::json& raw, const std::string& source);

}  // namespace anvil
