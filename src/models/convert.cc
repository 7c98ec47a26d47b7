// GGUF -> Hugging Face folder. Weights stream one tensor at a time through the same name mapping
// (and Llama q/k un-permutation) that loading uses, so a converted folder holds exactly what
// anvil runs from the GGUF.
#include "models/convert.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "anvil/error.h"
#include "anvil/safetensors.h"
#include "models/gguf_model.h"
#include "models/weights.h"
#include "tokenizer/gguf_vocab.h"

namespace anvil {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

void write_json(const fs::path& p, const Json& j) {
  std::ofstream f(p);
  f << j.dump(2, ' ', false) << "\n";
  if (!f) throw Error(p.string() + ": write failed");
}

const char* torch_name(DType d) {
  return d == DType::bf16 ? "bfloat16" : d == DType::f16 ? "float16" : "float32";
}

// The GGUF's RoPE scaling in config.json's words (rope_theta stays at the top level, the Hub's
// older style that transformers 4 and 5 both read).
Json rope_scaling(const RopeConfig& rope) {
  if (!rope.freq_factors.empty()) {
    throw Error(
        "convert: the GGUF's per-frequency RoPE divisors (rope_freqs.weight, llama.cpp's "
        "form of Llama 3.1's scaling) have no config.json form; the converted model "
        "would run without them");
  }
  if (rope.type == RopeType::linear) return Json{{"rope_type", "linear"}, {"factor", rope.factor}};
  if (rope.type == RopeType::longrope) {  // the original context goes at the top level (Phi-3)
    Json j{{"rope_type", "longrope"},
           {"short_factor", rope.short_factor},
           {"long_factor", rope.long_factor},
           {"factor", rope.factor}};
    if (rope.attention_factor != 0) j["attention_factor"] = rope.attention_factor;
    return j;
  }
  if (rope.type != RopeType::yarn) return nullptr;
  Json j{{"rope_type", "yarn"},
         {"factor", rope.factor},
         {"original_max_position_embeddings", rope.original_max_position_embeddings},
         {"beta_fast", rope.beta_fast},
         {"beta_slow", rope.beta_slow}};
  if (rope.mscale != 0 && rope.mscale_all_dim != 0) {
    j["mscale"] = rope.mscale;
    j["mscale_all_dim"] = rope.mscale_all_dim;
  }
  if (rope.attention_factor != 0) j["attention_factor"] = rope.attention_factor;
  return j;
}

// Gemma's fields as GemmaConfig / Gemma2Config / Gemma3TextConfig read them: GeGLU, attention
// biases, and for Gemma 2 / 3 query_pre_attn_scalar (the scale llama.cpp derived), the softcaps
// (null for none) and each layer's attention type; Gemma 3's sliding layers' RoPE base. Gemma 2
// sliding layers with a RoPE base of their own have no config field, and are refused.
void add_gemma_fields(const ModelConfig& c, Json& j) {
  j["attention_bias"] = c.qkv_bias;
  if (c.model_type == "gemma") {
    j["hidden_act"] = "gelu_pytorch_tanh";
    return;
  }
  j["hidden_activation"] = "gelu_pytorch_tanh";
  // An int where it is one: transformers 5's config classes validate the field as int.
  const double scalar = c.query_pre_attn_scalar.value_or(static_cast<double>(c.head_dim));
  const auto whole = static_cast<int64_t>(scalar);
  j["query_pre_attn_scalar"] = static_cast<double>(whole) == scalar ? Json(whole) : Json(scalar);
  const auto cap = [](double v) { return v > 0 ? Json(v) : Json(nullptr); };
  j["attn_logit_softcapping"] = cap(c.attn_logit_softcapping);
  j["final_logit_softcapping"] = cap(c.final_logit_softcapping);
  // Without a window every layer is full (a config without one reads Gemma's default 4096).
  j["sliding_window"] = c.sliding_window.value_or(4096);
  Json types = Json::array();
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    types.push_back(c.layer_window(l) > 0 ? "sliding_attention" : "full_attention");
  }
  j["layer_types"] = types;
  if (!c.sliding_rope) return;
  if (c.model_type != "gemma3_text" || c.sliding_rope->type != RopeType::standard) {
    throw Error("convert: this " + c.model_type +
                " GGUF's sliding layers rotate with a RoPE of their own that " + c.architecture +
                "'s config.json has no field for");
  }
  j["rope_local_base_freq"] = c.sliding_rope->theta;
}

// A mixture of experts' fields under each config class's names (Mixtral counts
// num_local_experts; every layer of a GGUF is sparse).
void add_moe_fields(const ModelConfig& c, Json& j) {
  const bool local = c.model_type == "mixtral" || c.stacked_experts;
  j[local ? "num_local_experts" : "num_experts"] = c.num_experts;
  j["num_experts_per_tok"] = c.num_experts_per_tok;
  if (c.model_type == "qwen3_moe" || c.model_type == "qwen2_moe") {
    j["moe_intermediate_size"] = c.moe_intermediate_size;
    j["decoder_sparse_step"] = 1;
    j["mlp_only_layers"] = Json::array();
  }
  if (c.model_type != "mixtral") j["norm_topk_prob"] = c.norm_topk_prob;
  if (c.shared_expert_intermediate_size > 0) {
    j[c.stacked_experts ? "shared_intermediate_size" : "shared_expert_intermediate_size"] =
        c.shared_expert_intermediate_size;
  }
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (!c.is_moe_layer(l)) {
      throw Error("convert: a model with dense layers between sparse ones has no GGUF source");
    }
  }
}

// GraniteMoe's stacks (the Hub's layout) from the per-expert slices a GGUF holds: each stack's
// parts in order, every expert's gate then up rows, the experts' downs, the shared MLP's gate
// then up rows.
std::map<std::string, std::vector<std::string>> stacked_parts(const ModelConfig& c) {
  std::map<std::string, std::vector<std::string>> stacks;
  if (!c.stacked_experts) return stacks;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const MoeNames n = moe_names(c, l);
    auto& gate_up = stacks[n.stacked_gate_up];
    auto& down = stacks[n.stacked_down];
    for (int64_t e = 0; e < c.num_experts; ++e) {
      gate_up.push_back(n.gate(e));
      gate_up.push_back(n.up(e));
      down.push_back(n.down(e));
    }
    if (c.shared_expert_intermediate_size > 0)
      stacks[n.shared_gate_up] = {n.shared_gate, n.shared_up};
  }
  return stacks;
}

Json hf_config(const ModelConfig& c, DType dtype) {
  Json j;
  j["architectures"] = {c.architecture};
  j["model_type"] = c.model_type;
  j["vocab_size"] = c.vocab_size;
  j["hidden_size"] = c.hidden_size;
  j["intermediate_size"] = c.intermediate_size;
  j["num_hidden_layers"] = c.num_hidden_layers;
  j["num_attention_heads"] = c.num_attention_heads;
  j["num_key_value_heads"] = c.num_key_value_heads;
  j["head_dim"] = c.head_dim;
  j["max_position_embeddings"] = c.max_position_embeddings;
  j["rms_norm_eps"] = c.rms_norm_eps;
  j["rope_theta"] = c.rope.theta;
  j["rope_scaling"] = rope_scaling(c.rope);
  if (c.rope.type == RopeType::longrope) {
    j["original_max_position_embeddings"] = c.rope.original_max_position_embeddings;
  }
  if (c.rope.rotary_dim > 0) {
    j["partial_rotary_factor"] =
        static_cast<double>(c.rope.rotary_dim) / static_cast<double>(c.head_dim);
  }
  // Null where there is none: MistralConfig reads an absent field as 4096 (LlamaConfig has none).
  if (c.model_type != "llama") {
    j["sliding_window"] = c.sliding_window ? Json(*c.sliding_window) : Json(nullptr);
  }
  if (c.model_type == "qwen2" || c.model_type == "qwen3") {
    j["use_sliding_window"] = c.sliding_window.has_value();
    Json types = Json::array();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      types.push_back(c.layer_window(l) > 0 ? "sliding_attention" : "full_attention");
    }
    j["layer_types"] = types;
  }
  const bool gemma = c.model_type.rfind("gemma", 0) == 0;
  if (gemma) {
    add_gemma_fields(c, j);
  } else {
    j["hidden_act"] = "silu";
  }
  if (c.model_type == "smollm3") {  // llama.cpp's every 4th layer, said per layer
    Json flags = Json::array();
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) flags.push_back(c.layer_rotates(l) ? 1 : 0);
    j["no_rope_layers"] = flags;
  }
  j["tie_word_embeddings"] = c.tie_word_embeddings;
  if (c.model_type.rfind("granite", 0) == 0) {  // the multipliers llama.cpp applied
    j["attention_bias"] = c.qkv_bias;
    if (c.model_type == "granite") j["mlp_bias"] = c.mlp_bias;
    j["embedding_multiplier"] = c.embedding_scale;
    j["residual_multiplier"] = c.residual_multiplier;
    j["logits_scaling"] = c.logits_scaling;
    j["attention_multiplier"] =
        c.attention_multiplier.value_or(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  }
  if (c.model_type == "llama") {
    j["attention_bias"] = c.qkv_bias;
    j["mlp_bias"] = c.mlp_bias;
  } else if (c.model_type == "qwen3" || c.model_type == "qwen3_moe" || c.model_type == "olmoe") {
    j["attention_bias"] = c.qkv_bias;
  } else if (c.model_type == "qwen2_moe") {
    j["qkv_bias"] = c.qkv_bias;
  }
  if (c.num_experts > 0) add_moe_fields(c, j);
  if (c.bos_token_id) j["bos_token_id"] = *c.bos_token_id;
  if (!c.eos_token_ids.empty()) j["eos_token_id"] = c.eos_token_ids[0];
  if (c.pad_token_id) j["pad_token_id"] = *c.pad_token_id;
  j["torch_dtype"] = torch_name(dtype);
  return j;
}

}  // namespace

void convert_gguf_to_hf(const std::string& gguf_path, const std::string& out_dir, DType dtype) {
  if (dtype != DType::f32 && dtype != DType::bf16 && dtype != DType::f16) {
    throw Error("convert: --dtype must be f32, bf16 or f16");
  }
  GgufModel m = open_gguf_model(gguf_path);
  // llama.cpp stores Gemma's norms as 1 + w; its config.json form holds w (GemmaRMSNorm adds 1).
  const bool norms_minus_one = m.config.model_type.rfind("gemma", 0) == 0;
  // Everything that can be refused is checked before the folder is made, so a refused file
  // leaves no half-written model behind (a vocabulary-only GGUF had left its tokenizer).
  const WeightSource& src = *m.weights;
  const std::map<std::string, std::vector<std::string>> stacks = stacked_parts(m.config);
  for (const auto& [name, shape] : hf_weight_names(m.config)) {
    const auto parts = stacks.find(name);
    for (const std::string& part :
         parts != stacks.end() ? parts->second : std::vector<std::string>{name}) {
      if (!src.contains(part)) throw Error(gguf_path + ": no tensor for '" + part + "'");
    }
  }
  const Json config = hf_config(m.config, dtype);
  const nlohmann::json tok = tokenizer_json_from_gguf(m.vocab, gguf_path);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error(out_dir + ": cannot create folder: " + ec.message());
  const fs::path out(out_dir);

  write_json(out / "config.json", config);
  Json gen;
  if (m.config.bos_token_id) gen["bos_token_id"] = *m.config.bos_token_id;
  if (m.config.eos_token_ids.size() == 1) gen["eos_token_id"] = m.config.eos_token_ids[0];
  if (m.config.eos_token_ids.size() > 1) gen["eos_token_id"] = m.config.eos_token_ids;
  if (m.config.pad_token_id) gen["pad_token_id"] = *m.config.pad_token_id;
  write_json(out / "generation_config.json", gen);

  {
    std::ofstream f(out / "tokenizer.json");
    f << tok.dump(-1, ' ', false) << "\n";
    if (!f) throw Error((out / "tokenizer.json").string() + ": write failed");
  }
  Json tc;
  auto token = [&](const std::optional<int64_t>& id) -> Json {
    if (!id) return nullptr;
    return m.vocab.tokens[static_cast<size_t>(*id)];
  };
  tc["tokenizer_class"] = "PreTrainedTokenizerFast";
  tc["bos_token"] = token(m.vocab.bos);
  tc["eos_token"] = token(m.vocab.eos);
  tc["pad_token"] = token(m.vocab.pad);
  tc["unk_token"] = token(m.vocab.unk);
  tc["add_bos_token"] = m.vocab.add_bos.value_or(m.vocab.model == "llama");
  tc["add_eos_token"] = m.vocab.add_eos.value_or(false);
  tc["clean_up_tokenization_spaces"] = false;
  tc["model_max_length"] = m.config.max_position_embeddings;
  if (!m.chat_template.empty()) tc["chat_template"] = m.chat_template;
  write_json(out / "tokenizer_config.json", tc);

  SafetensorsWriter w((out / "model.safetensors").string());
  w.set_metadata("format", "pt");
  for (const auto& [name, shape] : hf_weight_names(m.config)) {
    if (const auto parts = stacks.find(name); parts != stacks.end()) {
      w.add(name, dtype, shape, [&src, dtype, names = parts->second](std::span<std::byte> bytes) {
        size_t at = 0;
        for (const std::string& part : names) {
          const Tensor stored = src.load(part);
          Tensor converted = Tensor::empty(stored.shape(), dtype);
          converted.copy_from(stored);
          if (at + converted.nbytes() > bytes.size()) throw Error("convert: a stack overflows");
          std::memcpy(bytes.data() + at, converted.raw(), converted.nbytes());
          at += converted.nbytes();
        }
      });
      continue;
    }
    const bool minus_one = norms_minus_one && name.ends_with("norm.weight");
    w.add(name, dtype, shape, [&src, name, dtype, minus_one](std::span<std::byte> bytes) {
      Tensor stored = src.load(name);
      if (minus_one) {
        std::vector<float> v = stored.to_f32_vector();
        for (float& x : v) x -= 1.0f;
        stored = Tensor::from_f32(v, stored.shape());
      }
      Tensor converted = Tensor::empty(stored.shape(), dtype);
      converted.copy_from(stored);
      std::memcpy(bytes.data(), converted.raw(), bytes.size());
    });
  }
  w.finish();
}

}  // namespace anvil
