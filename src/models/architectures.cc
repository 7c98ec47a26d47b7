// LlamaForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM: the
// differences between them, as in modeling_llama.py, modeling_mistral.py, modeling_phi3.py,
// modeling_qwen2.py and modeling_qwen3.py.
#include "models/architectures.h"

#include "anvil/error.h"
#include "formats/json_fields.h"

namespace anvil {
namespace {

namespace jf = json_fields;

void apply_llama(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
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
  c.qkv_bias = c.o_bias = c.mlp_bias = c.qk_norm = false;
  read_sliding_window(raw, c, source, 4096);
}

// Phi-3: Llama's layers with q/k/v fused into qkv_proj and gate/up into gate_up_proj (gate the
// first half), no biases, and a sliding window only when the config sets one (Phi3Config's
// default is none). Its RoPE (longrope) is read with the others (hf_config.cc).
void apply_phi3(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  c.qkv_bias = c.o_bias = c.mlp_bias = c.qk_norm = false;
  c.fused_projections = true;
  // Phi3ForCausalLM.prepare_inputs_for_generation: the cache dropped once the sequence reaches
  // original_max_position_embeddings + 1 (only longrope computes anything different from it).
  if (c.rope.type == RopeType::longrope) {
    c.recompute_cache_past = c.rope.original_max_position_embeddings;
  }
  read_sliding_window(raw, c, source, std::nullopt);
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
  if (!c.sliding_window) return;
  const auto n = static_cast<size_t>(c.num_hidden_layers);
  const nlohmann::json* types = jf::find(raw, "layer_types");
  if (types && !types->is_null()) {
    if (!types->is_array() || types->size() != n) {
      jf::fail(
          source, "layer_types",
          "must list one type per layer (" + std::to_string(n) + "), got " +
              (types->is_array() ? std::to_string(types->size()) + " entries" : types->dump()));
    }
    for (const nlohmann::json& t : *types) {
      if (t == "sliding_attention" || t == "full_attention") {
        c.sliding_layers.push_back(t == "sliding_attention");
      } else {
        jf::fail(source, "layer_types",
                 "holds " + t.dump() + "; expected \"full_attention\" or \"sliding_attention\"");
      }
    }
    return;
  }
  const int64_t first = jf::opt_int(raw, "max_window_layers", source).value_or(28);
  for (size_t l = 0; l < n; ++l) c.sliding_layers.push_back(static_cast<int64_t>(l) >= first);
}

void apply_qwen2(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  c.qkv_bias = true;  // Qwen2Attention: q/k/v always biased, o_proj never
  c.o_bias = false;
  c.mlp_bias = false;
  c.qk_norm = false;
  read_qwen_window(raw, c, source);
}

void apply_qwen3(const nlohmann::json& raw, ModelConfig& c, const std::string& source) {
  const bool bias = jf::opt_bool(raw, "attention_bias", source).value_or(false);
  c.qkv_bias = bias;
  c.o_bias = bias;
  c.mlp_bias = false;
  c.qk_norm = true;
  read_qwen_window(raw, c, source);
}

constexpr Architecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", 2048, 1e-6, 0, false, false, &apply_llama},
    {"MistralForCausalLM", "mistral", 4096 * 32, 1e-6, 0, false, false, &apply_mistral},
    {"Phi3ForCausalLM", "phi3", 4096, 1e-5, 4096, true, true, &apply_phi3},
    {"Qwen2ForCausalLM", "qwen2", 32768, 1e-6, 0, false, false, &apply_qwen2},
    {"Qwen3ForCausalLM", "qwen3", 32768, 1e-6, 0, false, false, &apply_qwen3},
};

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
    }
    throw Error(source + ": unknown architecture '" + name + "' (anvil supports " +
                supported_list() + ")");
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
