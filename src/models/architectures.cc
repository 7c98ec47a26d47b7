// LlamaForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
// GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, SmolLM3ForCausalLM, Olmo2ForCausalLM,
// the MoEs (Qwen2/3-MoE, Mixtral, OLMoE) and Granite (dense, MoE, MoE with a shared MLP): the
// differences between them, as in their modeling_*.py.
#include "models/architectures.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "anvil/error.h"
#include "formats/json_fields.h"

namespace anvil {
namespace {

namespace jf = json_fields;

// The MLP's activation from `key` (hidden_act, or Gemma 2 / 3's hidden_activation), `absent`
// when missing. ACT2FN's names for what the decoder implements: SiLU and GELU's tanh
// approximation (gelu_new and gelu_pytorch_tanh are the same function). `gelu_is_tanh`:
// GemmaConfig reads the legacy "gelu" as the tanh form; elsewhere it is the exact (erf) GELU,
// which the decoder does not implement.
void read_activation(const nlohmann::json& raw, ModelConfig& c, const std::string& source,
                     const char* key, const char* absent, bool gelu_is_tanh) {
  const std::string act = jf::opt_string(raw, key, source).value_or(absent);
  if (act == "silu" || act == "swish") {
    c.hidden_act = Activation::silu;
  } else if (act == "gelu_pytorch_tanh" || act == "gelu_new" || (gelu_is_tanh && act == "gelu")) {
    c.hidden_act = Activation::gelu_tanh;
  } else {
    jf::fail(source, key,
             "is '" + act +
                 "'; anvil's decoder implements silu (SwiGLU) and gelu_pytorch_tanh / gelu_new "
                 "(GeGLU)");
  }
}

void apply_llama(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  const bool bias = jf::opt_bool(raw, "attention_bias", source).value_or(false);
  c.qkv_bias = bias;
  c.o_bias = bias;
  c.mlp_bias = jf::opt_bool(raw, "mlp_bias", source).value_or(false);
  c.qk_norm = false;
}

// sliding_window: `absent` when the field is missing (the config class's default), none when
// null, else a positive window.
void read_sliding_window(const nlohmann::json& raw, ModelConfig& c, const std::string& source,
                         std::optional<int64_t> absent) {
  if (!raw.contains("sliding_window")) {
    c.sliding_window = absent;
  } else if (auto w = jf::opt_int(raw, "sliding_window", source)) {
    if (*w <= 0) jf::fail(source, "sliding_window", "must be positive, got " + std::to_string(*w));
    c.sliding_window = *w;
  }
}

// Mistral: Llama without biases (MistralAttention ignores attention_bias), and a sliding window
// over every layer: MistralConfig's default 4096 when the field is absent, none when null
// (MistralModel reads no layer_types, so neither does this).
void apply_mistral(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  c.qkv_bias = c.o_bias = c.mlp_bias = c.qk_norm = false;
  read_sliding_window(raw, c, source, 4096);
}

// Phi-3: Llama's layers with q/k/v fused into qkv_proj and gate/up into gate_up_proj (gate the
// first half), no biases, and a sliding window only when the config sets one (Phi3Config's
// default is none). Its RoPE (longrope) is read with the others (hf_config.cc).
void apply_phi3(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  c.qkv_bias = c.o_bias = c.mlp_bias = c.qk_norm = false;
  c.fused_projections = true;
  // Phi3ForCausalLM.prepare_inputs_for_generation: the cache dropped once the sequence reaches
  // original_max_position_embeddings + 1 (only longrope computes anything different from it).
  if (c.rope.type == RopeType::longrope) {
    c.recompute_cache_past = c.rope.original_max_position_embeddings;
  }
  read_sliding_window(raw, c, source, std::nullopt);
}

// layer_types, one "sliding_attention" or "full_attention" per layer, into c.sliding_layers;
// false when absent or null.
bool read_layer_types(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  const auto n = static_cast<size_t>(c.num_hidden_layers);
  const nlohmann::json* types = jf::find(raw, "layer_types");
  if (!types || types->is_null()) return false;
  if (!types->is_array() || types->size() != n) {
    jf::fail(source, "layer_types",
             "must list one type per layer (" + std::to_string(n) + "), got " +
                 (types->is_array() ? std::to_string(types->size()) + " entries" : types->dump()));
  }
  c.sliding_layers.clear();
  for (const nlohmann::json& t : *types) {
    if (t == "sliding_attention" || t == "full_attention") {
      c.sliding_layers.push_back(t == "sliding_attention");
    } else {
      jf::fail(source, "layer_types",
               "holds " + t.dump() + "; expected \"full_attention\" or \"sliding_attention\"");
    }
  }
  return true;
}

// Qwen2Config / Qwen3Config: a window only with use_sliding_window (sliding_window, default
// 4096, is otherwise dropped), on the layers layer_types names "sliding_attention", or when
// layer_types is absent on the layers from max_window_layers (default 28) on. Without a window
// layer_types means nothing to the decoder and is not read (a config edited to another layer
// count, keeping the layer_types transformers 5 saved, still loads).
void read_qwen_window(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  c.sliding_window.reset();
  c.sliding_layers.clear();
  if (jf::opt_bool(raw, "use_sliding_window", source).value_or(false)) {
    read_sliding_window(raw, c, source, 4096);
  }
  if (!c.sliding_window || read_layer_types(raw, c, source)) return;
  const int64_t first = jf::opt_int(raw, "max_window_layers", source).value_or(28);
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) c.sliding_layers.push_back(l >= first);
}

void apply_qwen2(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  c.qkv_bias = true;  // Qwen2Attention: q/k/v always biased, o_proj never
  c.o_bias = false;
  c.mlp_bias = false;
  c.qk_norm = false;
  read_qwen_window(raw, c, source);
}

void apply_qwen3(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  const bool bias = jf::opt_bool(raw, "attention_bias", source).value_or(false);
  c.qkv_bias = bias;
  c.o_bias = bias;
  c.mlp_bias = false;
  c.qk_norm = true;
  read_qwen_window(raw, c, source);
}

// What every Gemma shares (GemmaRMSNorm's (1 + w), the embedding scaled by sqrt(hidden_size),
// attention_bias on q/k/v/o, no MLP bias), and Gemma 2 / 3's additions: hidden_activation, the
// four norms a layer, query_pre_attn_scalar (default 256), softcapping (Gemma2Config's defaults
// 50 and 30, Gemma3's none; null: none) and windows on the layers layer_types names, else every
// `pattern`-th layer full and the others sliding.
void apply_gemma_common(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  c.norm_plus_one = true;
  c.embedding_scale = std::sqrt(static_cast<double>(c.hidden_size));
  c.embedding_scale_rounded = true;
  const bool bias = jf::opt_bool(raw, "attention_bias", source).value_or(false);
  c.qkv_bias = c.o_bias = bias;
  c.mlp_bias = c.qk_norm = false;
}

void apply_gemma(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "gelu_pytorch_tanh", true);
  apply_gemma_common(raw, c, source);
}

void apply_gemma_sandwich(const nlohmann::json& raw, ModelConfig& c, const std::string& source,
                          double attn_softcap, double final_softcap, int64_t pattern) {
  read_activation(raw, c, source, "hidden_activation", "gelu_pytorch_tanh", false);
  apply_gemma_common(raw, c, source);
  if (jf::opt_bool(raw, "use_bidirectional_attention", source).value_or(false)) {
    jf::fail(source, "use_bidirectional_attention",
             "is true (an encoder's attention); anvil's decoder is causal");
  }
  c.sandwich_norms = true;
  const double scalar = jf::opt_number(raw, "query_pre_attn_scalar", source).value_or(256.0);
  if (!(scalar > 0)) jf::fail(source, "query_pre_attn_scalar", "must be positive");
  c.query_pre_attn_scalar = scalar;
  const auto softcap = [&](const char* key, double absent) {
    const double v = raw.contains(key) ? jf::opt_number(raw, key, source).value_or(0.0) : absent;
    if (v < 0) jf::fail(source, key, "must be positive or null");
    return v;
  };
  c.attn_logit_softcapping = softcap("attn_logit_softcapping", attn_softcap);
  c.final_logit_softcapping = softcap("final_logit_softcapping", final_softcap);
  read_sliding_window(raw, c, source, 4096);
  if (!read_layer_types(raw, c, source)) {
    c.sliding_layers.clear();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l)
      c.sliding_layers.push_back((l + 1) % pattern != 0);
  }
}

void apply_gemma2(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  apply_gemma_sandwich(raw, c, source, 50.0, 30.0, 2);
}

// Gemma3TextConfig: Gemma 2's layer with q/k norms, no final softcapping by default, the pattern
// from sliding_window_pattern (the Hub's configs; default 6), and the sliding layers rotating with
// rope_local_base_freq (default 1e4) where rope_parameters does not give them their own.
void apply_gemma3(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  std::optional<int64_t> pattern = jf::opt_int(raw, "sliding_window_pattern", source);
  if (!pattern) pattern = jf::opt_int(raw, "_sliding_window_pattern", source);
  if (pattern && *pattern <= 0) jf::fail(source, "sliding_window_pattern", "must be positive");
  apply_gemma_sandwich(raw, c, source, 0.0, 0.0, pattern.value_or(6));
  // Gemma3Attention keeps attn_logit_softcapping but never hands it to the attention: a config
  // that sets it computes uncapped scores in transformers, and so here.
  c.attn_logit_softcapping = 0.0;
  c.qk_norm = true;
  if (!c.sliding_rope) {  // not given per layer type in rope_parameters
    RopeConfig local;
    local.theta = jf::opt_number(raw, "rope_local_base_freq", source).value_or(10000.0);
    if (!(local.theta > 0)) jf::fail(source, "rope_local_base_freq", "must be positive");
    c.sliding_rope = local;
  }
  const RopeType t = c.sliding_rope->type;
  if (t == RopeType::dynamic || t == RopeType::longrope) {
    jf::fail(source, "rope_parameters.sliding_attention",
             "uses a RoPE that follows the sequence length (dynamic / longrope), which anvil "
             "implements for the full layers' parameters only");
  }
}

// SmolLM3Config: Llama's layer (attention_bias on q/k/v/o, mlp_bias) where the layers
// no_rope_layers marks 0 skip RoPE (NoPE), by default every no_rope_layer_interval-th (4); a
// window, with use_sliding_window and a sliding_window, on the layers layer_types names, by
// default the NoPE ones.
void apply_smollm3(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  const bool bias = jf::opt_bool(raw, "attention_bias", source).value_or(false);
  c.qkv_bias = c.o_bias = bias;
  c.mlp_bias = jf::opt_bool(raw, "mlp_bias", source).value_or(false);
  c.qk_norm = false;
  const auto n = static_cast<size_t>(c.num_hidden_layers);
  c.rope_layers.clear();
  const nlohmann::json* flags = jf::find(raw, "no_rope_layers");
  if (flags && !flags->is_null()) {
    if (!flags->is_array() || flags->size() != n) {
      jf::fail(source, "no_rope_layers",
               "must list one 0 or 1 per layer (" + std::to_string(n) + "), got " + flags->dump());
    }
    for (const nlohmann::json& f : *flags) {
      if (!f.is_number_integer() || (f != 0 && f != 1)) {
        jf::fail(source, "no_rope_layers", "holds " + f.dump() + "; expected 0 or 1");
      }
      c.rope_layers.push_back(f == 1);
    }
  } else {
    const int64_t every = jf::opt_int(raw, "no_rope_layer_interval", source).value_or(4);
    if (every <= 0) jf::fail(source, "no_rope_layer_interval", "must be positive");
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) c.rope_layers.push_back((l + 1) % every != 0);
  }
  c.sliding_window.reset();
  c.sliding_layers.clear();
  if (!jf::opt_bool(raw, "use_sliding_window", source).value_or(false)) return;
  read_sliding_window(raw, c, source, std::nullopt);
  if (!c.sliding_window || read_layer_types(raw, c, source)) return;
  for (size_t l = 0; l < n; ++l) c.sliding_layers.push_back(!c.rope_layers[l]);
}

// Olmo2Config: no input norms (post_attention_layernorm and post_feedforward_layernorm
// normalise the attention's and the MLP's outputs before their residual adds), q and k each
// RMS-normalised as a whole projection before RoPE, attention_bias on q/k/v/o.
void apply_olmo2(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  const bool bias = jf::opt_bool(raw, "attention_bias", source).value_or(false);
  c.qkv_bias = c.o_bias = bias;
  c.mlp_bias = c.qk_norm = false;
  c.qk_norm_full = true;
  c.output_norms_only = true;
}

// The sparse MoE fields every MoE config shares: the experts' count (`experts_key`: Mixtral's
// num_local_experts), how many a token takes, their width (Mixtral's experts are
// intermediate_size wide), norm_topk_prob, and which layers are sparse: (l + 1) %
// decoder_sparse_step == 0 and not in mlp_only_layers (the Qwen MoEs; the others: all).
// The count is read under the config class's own field or its attribute_map alias
// (transformers 5 saves Qwen3-MoE's num_experts as num_local_experts).
void read_moe(const nlohmann::json& raw, ModelConfig& c, const std::string& source,
              const char* experts_key, const char* alias, int64_t experts, int64_t per_tok,
              int64_t width, bool norm_topk) {
  std::optional<int64_t> count = jf::opt_int(raw, experts_key, source);
  if (!count && alias) count = jf::opt_int(raw, alias, source);
  c.num_experts = count.value_or(experts);
  c.num_experts_per_tok = jf::opt_int(raw, "num_experts_per_tok", source).value_or(per_tok);
  c.moe_intermediate_size = width;
  c.norm_topk_prob = jf::opt_bool(raw, "norm_topk_prob", source).value_or(norm_topk);
  if (c.num_experts < 0) jf::fail(source, experts_key, "must not be negative");
  if (c.num_experts == 0) return;  // every MLP dense
  if (c.num_experts_per_tok <= 0 || c.num_experts_per_tok > c.num_experts) {
    jf::fail(source, "num_experts_per_tok",
             "must be between 1 and the " + std::to_string(c.num_experts) + " experts, got " +
                 std::to_string(c.num_experts_per_tok));
  }
  if (c.moe_intermediate_size <= 0) {
    jf::fail(source, "moe_intermediate_size", "must be positive for a mixture of experts");
  }
  const int64_t step = jf::opt_int(raw, "decoder_sparse_step", source).value_or(1);
  if (step <= 0) jf::fail(source, "decoder_sparse_step", "must be positive");
  const std::vector<int64_t> dense = jf::int_or_list(raw, "mlp_only_layers", source);
  c.moe_layers.clear();
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const bool listed = std::find(dense.begin(), dense.end(), l) != dense.end();
    c.moe_layers.push_back(!listed && (l + 1) % step == 0);
  }
}

// Qwen3MoeConfig: Qwen3's attention (q/k norms; a window on every layer with
// use_sliding_window), sparse MLPs of 128 experts, 8 a token, 768 wide.
void apply_qwen3_moe(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  apply_qwen3(raw, c, source);
  c.sliding_window.reset();
  c.sliding_layers.clear();
  if (jf::opt_bool(raw, "use_sliding_window", source).value_or(false)) {
    read_sliding_window(raw, c, source, 4096);
  }
  read_moe(raw, c, source, "num_local_experts", "num_experts", 128, 8,
           jf::opt_int(raw, "moe_intermediate_size", source).value_or(768), false);
}

// Qwen2MoeConfig: Qwen2's attention (q/k/v biases from qkv_bias, default true), 60 experts, 4 a
// token, 1,408 wide, and a shared expert (shared_expert_intermediate_size, 5,632) gated by
// sigmoid(x . shared_expert_gate).
void apply_qwen2_moe(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  apply_qwen2(raw, c, source);
  c.qkv_bias = jf::opt_bool(raw, "qkv_bias", source).value_or(true);
  read_moe(raw, c, source, "num_experts", nullptr, 60, 4,
           jf::opt_int(raw, "moe_intermediate_size", source).value_or(1408), false);
  c.shared_expert_intermediate_size =
      jf::opt_int(raw, "shared_expert_intermediate_size", source).value_or(5632);
  if (c.num_experts > 0 && c.shared_expert_intermediate_size <= 0) {
    jf::fail(source, "shared_expert_intermediate_size", "must be positive");
  }
}

// MixtralConfig: Mistral's attention (no biases; a window on every layer only when
// sliding_window is set), every MLP sparse: num_local_experts (8) experts of intermediate_size, 2
// a token, always renormalised, the routing weights kept in float32.
void apply_mixtral(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  c.qkv_bias = c.o_bias = c.mlp_bias = c.qk_norm = false;
  read_sliding_window(raw, c, source, std::nullopt);
  read_moe(raw, c, source, "num_local_experts", "num_experts", 8, 2, c.intermediate_size, true);
  if (c.num_experts == 0) jf::fail(source, "num_local_experts", "must be positive");
  c.norm_topk_prob = true;
  c.router_weights_in_act_dtype = false;
}

// OlmoeConfig: Llama's layer with q and k RMS-normalised as whole projections before RoPE,
// attention_bias on q/k/v/o, 64 experts, 8 a token, intermediate_size wide. clip_qkv (clamping
// q, k and v) is not implemented.
void apply_olmoe(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  read_activation(raw, c, source, "hidden_act", "silu", false);
  const bool bias = jf::opt_bool(raw, "attention_bias", source).value_or(false);
  c.qkv_bias = c.o_bias = bias;
  c.mlp_bias = c.qk_norm = false;
  c.qk_norm_full = true;
  if (jf::opt_number(raw, "clip_qkv", source)) {
    jf::fail(source, "clip_qkv", "is set; clamping q, k and v is not implemented");
  }
  read_moe(raw, c, source, "num_experts", "num_local_experts", 64, 8, c.intermediate_size, false);
  if (c.num_experts == 0) jf::fail(source, "num_experts", "must be positive");
}

// GraniteConfig: Llama's layer (attention_bias on q/k/v/o, mlp_bias) with four multipliers:
// the embeddings times embedding_multiplier, attention scores scaled by attention_multiplier
// (not head_dim^-0.5), each block's output times residual_multiplier before its residual add,
// and the logits divided by logits_scaling. Each defaults to 1.
void apply_granite(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  apply_llama(raw, c, source);
  const auto factor = [&](const char* key) {
    const double v = jf::opt_number(raw, key, source).value_or(1.0);
    if (!std::isfinite(v) || v == 0.0) jf::fail(source, key, "must be a finite non-zero number");
    return v;
  };
  c.embedding_scale = factor("embedding_multiplier");
  c.attention_multiplier = factor("attention_multiplier");
  c.residual_multiplier = factor("residual_multiplier");
  c.logits_scaling = factor("logits_scaling");
}

// GraniteMoeConfig: Granite's attention and multipliers, every MLP sparse: num_local_experts
// (8) experts intermediate_size wide, 2 a token, softmax over the picked experts' logits (the
// renormalised top-k), the weights rounded to the activations' dtype; the experts stored as
// stacks (input_linear: gate then up rows; output_linear). No MLP biases.
void apply_granitemoe(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  apply_granite(raw, c, source);
  c.mlp_bias = false;
  read_moe(raw, c, source, "num_local_experts", nullptr, 8, 2, c.intermediate_size, true);
  if (c.num_experts == 0) jf::fail(source, "num_local_experts", "must be positive");
  c.norm_topk_prob = true;
  c.stacked_experts = true;
}

// GraniteMoeSharedConfig: GraniteMoe with an ungated shared MLP of shared_intermediate_size
// (0: none) added to the experts' sum.
void apply_granitemoeshared(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  apply_granitemoe(raw, c, source);
  c.shared_expert_intermediate_size =
      jf::opt_int(raw, "shared_intermediate_size", source).value_or(0);
  if (c.shared_expert_intermediate_size < 0) {
    jf::fail(source, "shared_intermediate_size", "must not be negative");
  }
  c.shared_expert_gated = false;
}

constexpr Architecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", 2048, 1e-6, 0, false, false, &apply_llama},
    {"MistralForCausalLM", "mistral", 4096 * 32, 1e-6, 0, false, false, &apply_mistral},
    {"Phi3ForCausalLM", "phi3", 4096, 1e-5, 4096, true, true, &apply_phi3},
    {"Qwen2ForCausalLM", "qwen2", 32768, 1e-6, 0, false, false, &apply_qwen2},
    {"Qwen3ForCausalLM", "qwen3", 32768, 1e-6, 0, false, false, &apply_qwen3},
    {"GemmaForCausalLM", "gemma", 8192, 1e-6, 0, false, false, &apply_gemma, 10000.0, false, 256,
     16, true},
    {"Gemma2ForCausalLM", "gemma2", 8192, 1e-6, 0, false, false, &apply_gemma2, 10000.0, false, 256,
     4, true},
    {"Gemma3ForCausalLM", "gemma3_text", 131072, 1e-6, 0, false, false, &apply_gemma3, 1e6, true,
     256, 4, true},
    {"SmolLM3ForCausalLM", "smollm3", 32768, 1e-6, 0, false, false, &apply_smollm3, 10000.0, false,
     0, 4, true},
    {"Olmo2ForCausalLM", "olmo2", 2048, 1e-5, 0, false, false, &apply_olmo2},
    {"Qwen3MoeForCausalLM", "qwen3_moe", 32768, 1e-6, 0, false, false, &apply_qwen3_moe},
    {"Qwen2MoeForCausalLM", "qwen2_moe", 32768, 1e-6, 0, false, false, &apply_qwen2_moe},
    {"MixtralForCausalLM", "mixtral", 4096 * 32, 1e-5, 0, false, false, &apply_mixtral, 1e6},
    {"OlmoeForCausalLM", "olmoe", 4096, 1e-5, 0, false, false, &apply_olmoe},
    {"GraniteForCausalLM", "granite", 2048, 1e-6, 0, false, false, &apply_granite},
    {"GraniteMoeForCausalLM", "granitemoe", 2048, 1e-6, 0, false, false, &apply_granitemoe},
    {"GraniteMoeSharedForCausalLM", "granitemoeshared", 2048, 1e-6, 0, false, false,
     &apply_granitemoeshared},
};

// The base model's class (Qwen3Model for Qwen3ForCausalLM; Gemma 3's text decoder is
// Gemma3TextModel, Gemma3Model being the multimodal one): a checkpoint saved from it holds the
// same decoder without the head.
std::string base_class_name(const Architecture& a) {
  const std::string_view causal = a.class_name;
  const std::string stem(causal.substr(0, causal.size() - std::string_view("ForCausalLM").size()));
  return stem + (std::string_view(a.model_type) == "gemma3_text" ? "TextModel" : "Model");
}

std::string supported_list() {
  std::string s;
  for (const auto& a : kArchitectures) {
    if (!s.empty()) s += ", ";
    s += a.class_name;
  }
  return s;
}

}  // namespace

const Architecture& find_architecture(const nlohmann::json& raw, const std::string& source) {
  const nlohmann::json* archs = jf::find(raw, "architectures");
  if (archs) {
    if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
      jf::fail(source, "architectures", "must be a list of class names, got " + archs->dump());
    }
    const std::string name = (*archs)[0].get<std::string>();
    for (const auto& a : kArchitectures) {
      if (name == a.class_name) return a;
      if (name == base_class_name(a)) return a;
    }
    throw Error(source + ": unknown architecture '" + name + "' (anvil supports " +
                supported_list() + ", and their base models' checkpoints: Qwen3Model, ...)");
  }
  const auto type = jf::opt_string(raw, "model_type", source);
  if (!type) throw Error(source + ": has neither 'architectures' nor 'model_type'");
  for (const auto& a : kArchitectures) {
    if (*type == a.model_type) return a;
  }
  throw Error(source + ": unknown model_type '" + *type + "' (anvil supports " + supported_list() +
              ")");
}

}  // namespace anvil
