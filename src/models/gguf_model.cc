// GGUF -> the decoder. llama.cpp's converter permutes the rows of Llama's q and k projections so
// its interleaved RoPE can use them (convert_hf_to_gguf.py's `permute`); anvil's RoPE is
// transformers' half-split one, so those rows are put back. Qwen2/Qwen3, Phi-3 and Gemma files
// are not permuted (llama.cpp runs them with NEOX, i.e. half-split, RoPE).
#include "models/gguf_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <vector>

#include "anvil/error.h"
#include "anvil/gguf.h"
#include "core/quant_types.h"
#include "formats/ggml_quants.h"
#include "models/rope_table.h"

namespace anvil {
namespace {

struct ArchInfo {
  const char* gguf;
  const char* hf_class;
  const char* model_type;
  bool permuted_qk;
};

constexpr ArchInfo kArchs[] = {
    {"llama", "LlamaForCausalLM", "llama", true},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", false},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", false},
    {"phi3", "Phi3ForCausalLM", "phi3", false},
    {"gemma", "GemmaForCausalLM", "gemma", false},
    {"gemma2", "Gemma2ForCausalLM", "gemma2", false},
    {"gemma3", "Gemma3ForCausalLM", "gemma3_text", false},
    {"smollm3", "SmolLM3ForCausalLM", "smollm3", true},
    {"olmo2", "Olmo2ForCausalLM", "olmo2", false},
    {"qwen3moe", "Qwen3MoeForCausalLM", "qwen3_moe", false},
    {"qwen2moe", "Qwen2MoeForCausalLM", "qwen2_moe", false},
    {"olmoe", "OlmoeForCausalLM", "olmoe", false},
    {"granite", "GraniteForCausalLM", "granite", true},
    {"granitemoe", "GraniteMoeForCausalLM", "granitemoe", true},
};

// Hugging Face name -> GGUF name. `sandwich`: Gemma 2 / 3's four norms a layer, where
// post_attention_layernorm is the attention output's norm (llama.cpp's post_attention_norm) and
// the MLP's input norm is pre_feedforward_layernorm (ffn_norm).
std::string gguf_name(const std::string& hf, bool sandwich = false) {
  static const std::pair<const char*, const char*> kLayer[] = {
      {"input_layernorm.weight", "attn_norm.weight"},
      {"self_attn.q_proj.weight", "attn_q.weight"},
      {"self_attn.k_proj.weight", "attn_k.weight"},
      {"self_attn.v_proj.weight", "attn_v.weight"},
      {"self_attn.o_proj.weight", "attn_output.weight"},
      {"self_attn.q_proj.bias", "attn_q.bias"},
      {"self_attn.k_proj.bias", "attn_k.bias"},
      {"self_attn.v_proj.bias", "attn_v.bias"},
      {"self_attn.o_proj.bias", "attn_output.bias"},
      {"self_attn.q_norm.weight", "attn_q_norm.weight"},
      {"self_attn.k_norm.weight", "attn_k_norm.weight"},
      {"post_attention_layernorm.weight", "ffn_norm.weight"},
      {"mlp.gate_proj.weight", "ffn_gate.weight"},
      {"mlp.up_proj.weight", "ffn_up.weight"},
      {"mlp.down_proj.weight", "ffn_down.weight"},
      {"mlp.gate_proj.bias", "ffn_gate.bias"},
      {"mlp.up_proj.bias", "ffn_up.bias"},
      {"mlp.down_proj.bias", "ffn_down.bias"},
      // Phi-3's fused projections (gate the first half of ffn_up, as transformers stores it)
      {"self_attn.qkv_proj.weight", "attn_qkv.weight"},
      {"mlp.gate_up_proj.weight", "ffn_up.weight"},
      // Mixture-of-experts routers (Mixtral's under block_sparse_moe) and Qwen2-MoE's shared
      // expert; the experts themselves are slices of ffn_{gate,up,down}_exps (expert_slice).
      {"mlp.gate.weight", "ffn_gate_inp.weight"},
      {"block_sparse_moe.gate.weight", "ffn_gate_inp.weight"},
      {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight"},
      {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight"},
      {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight"},
      {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight"},
      // GraniteMoe's router, and its shared MLP as llama.cpp splits input_linear (gate rows
      // first) into ffn_gate_shexp and ffn_up_shexp.
      {"block_sparse_moe.router.layer.weight", "ffn_gate_inp.weight"},
      {"shared_mlp.gate_proj.weight", "ffn_gate_shexp.weight"},
      {"shared_mlp.up_proj.weight", "ffn_up_shexp.weight"},
      {"shared_mlp.output_linear.weight", "ffn_down_shexp.weight"},
  };
  static const std::pair<const char*, const char*> kSandwich[] = {
      {"post_attention_layernorm.weight", "post_attention_norm.weight"},
      {"pre_feedforward_layernorm.weight", "ffn_norm.weight"},
      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight"},
  };
  if (hf == "model.embed_tokens.weight") return "token_embd.weight";
  if (hf == "model.norm.weight") return "output_norm.weight";
  if (hf == "lm_head.weight") return "output.weight";
  const std::string prefix = "model.layers.";
  if (hf.rfind(prefix, 0) == 0) {
    const auto dot = hf.find('.', prefix.size());
    const std::string layer = hf.substr(prefix.size(), dot - prefix.size());
    const std::string rest = hf.substr(dot + 1);
    if (sandwich) {
      for (const auto& [h, g] : kSandwich) {
        if (rest == h) return "blk." + layer + "." + g;
      }
    }
    for (const auto& [h, g] : kLayer) {
      if (rest == h) return "blk." + layer + "." + g;
    }
  }
  return "";
}

// An expert's projection (model.layers.L.mlp.experts.E.gate_proj.weight, Mixtral's
// block_sparse_moe.experts.E.w1.weight, ...): llama.cpp stacks a layer's experts in one 3D
// tensor (blk.L.ffn_gate_exps.weight, {in, out, experts}); E is its slice. Empty gguf: not one.
struct ExpertSlice {
  std::string gguf;
  int64_t expert = -1;
};

ExpertSlice expert_slice(const std::string& hf) {
  static const std::pair<const char*, const char*> kProjections[] = {
      {"gate_proj.weight", "ffn_gate_exps.weight"}, {"up_proj.weight", "ffn_up_exps.weight"},
      {"down_proj.weight", "ffn_down_exps.weight"}, {"w1.weight", "ffn_gate_exps.weight"},
      {"w3.weight", "ffn_up_exps.weight"},          {"w2.weight", "ffn_down_exps.weight"},
  };
  const std::string prefix = "model.layers.";
  if (hf.rfind(prefix, 0) != 0) return {};
  const auto dot = hf.find('.', prefix.size());
  if (dot == std::string::npos) return {};
  const std::string layer = hf.substr(prefix.size(), dot - prefix.size());
  std::string rest = hf.substr(dot + 1);
  for (const char* scope : {"mlp.experts.", "block_sparse_moe.experts."}) {
    if (rest.rfind(scope, 0) != 0) continue;
    rest = rest.substr(std::string(scope).size());
    const auto end = rest.find('.');
    if (end == std::string::npos || end == 0 || rest.find_first_not_of("0123456789") != end) {
      return {};
    }
    const int64_t expert = std::stoll(rest.substr(0, end));
    const std::string projection = rest.substr(end + 1);
    for (const auto& [h, g] : kProjections) {
      if (projection == h) return {"blk." + layer + "." + g, expert};
    }
  }
  return {};
}

class GgufSource : public WeightSource {
 public:
  GgufSource(std::shared_ptr<const GgufFile> file, bool permuted_qk, int64_t heads,
             int64_t kv_heads, bool sandwich)
      : file_(std::move(file)),
        permuted_qk_(permuted_qk),
        sandwich_(sandwich),
        heads_(heads),
        kv_heads_(kv_heads) {}

  bool contains(const std::string& name) const override { return info(name) != nullptr; }

  Shape shape(const std::string& name) const override {
    const GgufTensorInfo& t = need(name);
    Shape s;
    for (size_t i = t.dims.size(); i-- > 0;) s.push_back(static_cast<int64_t>(t.dims[i]));
    if (expert_slice(name).expert >= 0) return Shape(s.begin() + 1, s.end());  // one expert's
    // Qwen2-MoE's shared-expert gate: llama.cpp stores the [1, hidden] row as a vector.
    if (s.size() == 1 && name.ends_with("mlp.shared_expert_gate.weight")) return {1, s[0]};
    return s;
  }

  DType dtype(const std::string& name) const override {
    const GgufTensorInfo& t = need(name);
    auto d = dtype_of_ggml(t.type);
    if (!d) {
      throw Error(describe(name) + " has type " + std::string(ggml_type_name(t.type)) +
                  ", which anvil cannot run");
    }
    return *d;
  }

  Tensor load(const std::string& name) const override {
    const GgufTensorInfo& t = need(name);
    const Shape s = shape(name);
    const DType d = dtype(name);
    auto* data = const_cast<uint8_t*>(file_->tensor_data(t));
    if (const int64_t e = expert_slice(name).expert; e >= 0) {  // its rows in the stack
      data += static_cast<size_t>(e) * static_cast<size_t>(s[0]) * ggml_row_bytes(t.type, s[1]);
    }
    Tensor stored = Tensor::from_blob(data, s, d, Device::cpu(),
                                      std::const_pointer_cast<void>(file_->keepalive()));
    const int64_t heads = permute_heads(name);
    return heads ? unpermute_rows(stored, heads) : stored;
  }

  std::string describe(const std::string& name) const override {
    return file_->path() + ": tensor '" + gguf_of(name) + "' (" + name + ")";
  }

 private:
  const GgufTensorInfo* info(const std::string& name) const {
    if (const ExpertSlice x = expert_slice(name); !x.gguf.empty()) {
      const GgufTensorInfo* t = file_->find_tensor(x.gguf);
      // A stack of 3 dims holding this expert, else the name is not in the file.
      return t && t->dims.size() == 3 && x.expert < static_cast<int64_t>(t->dims[2]) ? t : nullptr;
    }
    const std::string g = gguf_name(name, sandwich_);
    return g.empty() ? nullptr : file_->find_tensor(g);
  }
  // The file's name for `name` (an expert: its stack and slice).
  std::string gguf_of(const std::string& name) const {
    const ExpertSlice x = expert_slice(name);
    if (x.gguf.empty()) return gguf_name(name, sandwich_);
    return x.gguf + "[" + std::to_string(x.expert) + "]";
  }
  const GgufTensorInfo& need(const std::string& name) const {
    const GgufTensorInfo* t = info(name);
    if (!t) throw Error(file_->path() + ": no tensor '" + gguf_of(name) + "' (" + name + ")");
    return *t;
  }
  // Heads whose rows llama.cpp permuted for this tensor, or 0.
  int64_t permute_heads(const std::string& name) const {
    if (!permuted_qk_) return 0;
    const auto ends = [&](const char* suffix) {
      const std::string s(suffix);
      return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
    };
    if (ends("self_attn.q_proj.weight") || ends("self_attn.q_proj.bias")) return heads_;
    if (ends("self_attn.k_proj.weight") || ends("self_attn.k_proj.bias")) return kv_heads_;
    return 0;
  }
  // Within each head, GGUF row 2i holds HF row i and row 2i+1 holds HF row i + d/2. Rows are
  // whole blocks, so quantized data moves without being decoded.
  static Tensor unpermute_rows(const Tensor& t, int64_t heads) {
    const int64_t rows = t.size(0);
    const int64_t dim = rows / heads, half = dim / 2;
    const size_t row_bytes =
        t.dim() == 1 ? dtype_nbytes(t.dtype(), 1) : dtype_nbytes(t.dtype(), t.size(1));
    Tensor out = Tensor::empty(t.shape(), t.dtype());
    const auto* src = static_cast<const uint8_t*>(t.raw());
    auto* dst = static_cast<uint8_t*>(out.raw());
    for (int64_t h = 0; h < heads; ++h) {
      for (int64_t j = 0; j < dim; ++j) {
        const int64_t from = j < half ? 2 * j : 2 * (j - half) + 1;
        std::memcpy(dst + static_cast<size_t>(h * dim + j) * row_bytes,
                    src + static_cast<size_t>(h * dim + from) * row_bytes, row_bytes);
      }
    }
    return out;
  }

  std::shared_ptr<const GgufFile> file_;
  bool permuted_qk_, sandwich_;
  int64_t heads_, kv_heads_;
};

int64_t meta_int(const GgufFile& f, const std::string& key, std::optional<int64_t> fallback = {}) {
  const GgufValue* v = f.find(key);
  if (!v) {
    if (fallback) return *fallback;
    throw Error(f.path() + ": metadata key '" + key + "' is missing");
  }
  return static_cast<int64_t>(v->as_u64());
}

double meta_float(const GgufFile& f, const std::string& key, double fallback) {
  const GgufValue* v = f.find(key);
  return v ? v->as_f64() : fallback;
}

// YaRN's parameters as llama.cpp reads them (llama_context's constructor): the original context
// (default the training context) and rope.scaling.attn_factor multiplying the attention factor;
// also yarn_beta_fast / yarn_beta_slow (default 32 / 1) and yarn_log_multiplier (transformers'
// mscale_all_dim beside an mscale of 1), which llama.cpp reads for some other architectures
// only; a file that sets them means them. llama.cpp always truncates the ramp's ends.
void read_gguf_yarn(const GgufFile& f, const std::string& a, const std::string& path,
                    ModelConfig& c) {
  c.rope.original_max_position_embeddings =
      meta_int(f, a + "rope.scaling.original_context_length", c.max_position_embeddings);
  if (c.rope.original_max_position_embeddings <= 0) {
    throw Error(path + ": rope.scaling.original_context_length must be positive");
  }
  c.rope.beta_fast = meta_float(f, a + "rope.scaling.yarn_beta_fast", 32.0);
  c.rope.beta_slow = meta_float(f, a + "rope.scaling.yarn_beta_slow", 1.0);
  if (!(c.rope.beta_fast > 0) || !(c.rope.beta_slow > 0)) {
    throw Error(path + ": rope.scaling.yarn_beta_fast and yarn_beta_slow must be positive");
  }
  if (const double ext = meta_float(f, a + "rope.scaling.yarn_ext_factor", 1.0); ext != 1.0) {
    throw Error(path + ": rope.scaling.yarn_ext_factor " + std::to_string(ext) +
                " is not implemented (anvil does YaRN's full ramp, 1.0)");
  }
  if (const double log_mul = meta_float(f, a + "rope.scaling.yarn_log_multiplier", 0.0);
      log_mul != 0.0) {
    c.rope.mscale = 1.0;
    c.rope.mscale_all_dim = log_mul;
  }
  const double attn = meta_float(f, a + "rope.scaling.attn_factor", 1.0);
  if (!(attn > 0)) throw Error(path + ": rope.scaling.attn_factor must be positive");
  if (attn != 1.0) c.rope.attention_factor = yarn_attention_factor(c.rope) * attn;
}

// One F32 vector of head_dim / 2 per-frequency values (llama.cpp's RoPE factor tensors).
std::vector<float> frequency_vector(const GgufFile& f, const GgufTensorInfo& t,
                                    const std::string& name, const ModelConfig& c) {
  const int64_t half = c.rotary_dims() / 2;
  if (t.type != GgmlType::f32 || t.dims.size() != 1 || static_cast<int64_t>(t.dims[0]) != half) {
    throw Error(f.path() + ": " + name +
                " must be F32 with rope.dimension_count/2 = " + std::to_string(half) + " entries");
  }
  std::vector<float> v(static_cast<size_t>(half));
  std::memcpy(v.data(), f.tensor_data(t), v.size() * sizeof(float));
  for (float x : v) {
    if (!(x > 0)) throw Error(f.path() + ": " + name + " holds a value that is not positive");
  }
  return v;
}

// Phi-3 as llama.cpp's converter writes it (Phi3MiniModel): q/k/v and gate/up fused, the window
// as attention.sliding_window (0: none), a partial rotary factor (Phi-4-mini) as a
// rope.dimension_count below the head size, and longrope as rope_factors_long / rope_factors_short
// with rope.scaling.original_context_length and rope.scaling.attn_factor, the attention factor
// itself. Generation follows transformers' Phi-3 (factors per step, the cache recomputed at the
// switch), not llama.cpp's (one set for the whole context size).
void read_gguf_phi3(const GgufFile& f, const std::string& a, const std::string& path,
                    ModelConfig& c) {
  c.fused_projections = true;
  const int64_t rotary = meta_int(f, a + "rope.dimension_count", c.head_dim);
  if (rotary < 2 || rotary > c.head_dim || rotary % 2 != 0) {
    throw Error(path + ": rope.dimension_count is " + std::to_string(rotary) +
                "; it must be even and within the head size " + std::to_string(c.head_dim));
  }
  if (rotary < c.head_dim) c.rope.rotary_dim = rotary;
  if (const int64_t w = meta_int(f, a + "attention.sliding_window", 0); w > 0) {
    c.sliding_window = w;
  }
  const GgufTensorInfo* long_factors = f.find_tensor("rope_factors_long.weight");
  const GgufTensorInfo* short_factors = f.find_tensor("rope_factors_short.weight");
  if (!long_factors && !short_factors) return;
  if (!long_factors || !short_factors) {
    throw Error(path +
                ": has one of rope_factors_long.weight and rope_factors_short.weight "
                "without the other");
  }
  c.rope.type = RopeType::longrope;
  c.rope.long_factor = frequency_vector(f, *long_factors, "rope_factors_long.weight", c);
  c.rope.short_factor = frequency_vector(f, *short_factors, "rope_factors_short.weight", c);
  c.rope.original_max_position_embeddings =
      meta_int(f, a + "rope.scaling.original_context_length", 4096);
  if (c.rope.original_max_position_embeddings <= 0) {
    throw Error(path + ": rope.scaling.original_context_length must be positive");
  }
  c.rope.factor = static_cast<double>(c.max_position_embeddings) /
                  static_cast<double>(c.rope.original_max_position_embeddings);
  if (const GgufValue* attn = f.find(a + "rope.scaling.attn_factor")) {
    if (!(attn->as_f64() > 0)) throw Error(path + ": rope.scaling.attn_factor must be positive");
    c.rope.attention_factor = attn->as_f64();
  }
  c.recompute_cache_past = c.rope.original_max_position_embeddings;
}

// Gemma as llama.cpp reads it (src/models/gemma*.cpp): the norms already hold 1 + w (the
// converter adds the 1), the embedding scaled by sqrt(embedding_length), GeGLU; Gemma 2 / 3 add
// the four norms a layer, softcaps (attn_logit_softcapping / final_logit_softcapping; Gemma 2's
// default 50 and 30, Gemma 3's final none), the sliding layers from
// attention.sliding_window_pattern (an array of flags, or every n-th layer full: Gemma 2's
// default 2, Gemma 3's 6; 0 makes every layer sliding), a window of attention.sliding_window
// (Gemma 2's default 4096; Gemma 3 has none without it), the sliding layers' RoPE base
// rope.freq_base_swa (Gemma 2: the full layers'; Gemma 3: default 1e4, unscaled), and scores
// scaled by 1/sqrt(embedding_length / head_count) for the 27B shapes (46 / 62 layers), else
// 1/sqrt(head_dim), which is the rule llama.cpp keeps in place of query_pre_attn_scalar.
void read_gguf_gemma(const GgufFile& f, const std::string& arch, const std::string& a,
                     const std::string& path, ModelConfig& c) {
  c.hidden_act = Activation::gelu_tanh;
  c.norm_plus_one = false;  // stored as 1 + w already
  c.embedding_scale = std::sqrt(static_cast<double>(c.hidden_size));
  if (arch == "gemma") return;
  c.sandwich_norms = true;
  c.qk_norm = arch == "gemma3";
  const bool gemma2 = arch == "gemma2";
  const bool big = c.num_hidden_layers == (gemma2 ? 46 : 62);
  c.query_pre_attn_scalar = big ? static_cast<double>(c.hidden_size / c.num_attention_heads)
                                : static_cast<double>(c.head_dim);
  c.attn_logit_softcapping = gemma2 ? meta_float(f, a + "attn_logit_softcapping", 50.0) : 0.0;
  c.final_logit_softcapping = meta_float(f, a + "final_logit_softcapping", gemma2 ? 30.0 : 0.0);
  if (c.attn_logit_softcapping < 0 || c.final_logit_softcapping < 0) {
    throw Error(path + ": softcapping values must not be negative");
  }
  const int64_t window = meta_int(f, a + "attention.sliding_window", gemma2 ? 4096 : 0);
  if (window <= 0) return;  // Gemma 3 without a window: every layer full, one RoPE
  c.sliding_window = window;
  const auto n = static_cast<size_t>(c.num_hidden_layers);
  c.sliding_layers.assign(n, false);
  const GgufValue* pattern = f.find(a + "attention.sliding_window_pattern");
  if (pattern && pattern->is_array()) {
    const std::vector<GgufValue> flags = pattern->elements();
    if (flags.size() != n) {
      throw Error(path + ": attention.sliding_window_pattern has " + std::to_string(flags.size()) +
                  " entries for " + std::to_string(n) + " layers");
    }
    for (size_t l = 0; l < n; ++l) c.sliding_layers[l] = flags[l].as_bool();
  } else {
    const int64_t every = pattern ? static_cast<int64_t>(pattern->as_u64()) : (gemma2 ? 2 : 6);
    for (size_t l = 0; l < n; ++l) {
      c.sliding_layers[l] = every == 0 || static_cast<int64_t>(l) % every < every - 1;
    }
  }
  // Gemma 2's sliding layers keep the full layers' scaling; Gemma 3's rotate unscaled.
  RopeConfig local = gemma2 ? c.rope : RopeConfig{};
  local.theta = meta_float(f, a + "rope.freq_base_swa", gemma2 ? c.rope.theta : 10000.0);
  if (!(local.theta > 0)) throw Error(path + ": rope.freq_base_swa must be positive");
  if (gemma2 && local.theta == c.rope.theta) return;  // one RoPE for every layer
  c.sliding_rope = local;
}

}  // namespace

bool is_gguf_path(const std::string& path) {
  return std::filesystem::path(path).extension() == ".gguf";
}

std::string folder_gguf(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path d(dir);
  if (fs::exists(d / "model.safetensors") || fs::exists(d / "model.safetensors.index.json")) {
    return "";
  }
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(d, ec)) {
    if (e.is_regular_file() && is_gguf_path(e.path().string())) found.push_back(e.path().string());
  }
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    std::string names;
    for (const auto& f : found)
      names += (names.empty() ? "" : ", ") + fs::path(f).filename().string();
    throw Error(dir + ": holds several .gguf files (" + names +
                ") and no safetensors weights; "
                "name the file to load");
  }
  return found.empty() ? "" : found[0];
}

GgufVocab read_gguf_vocab(const GgufFile& f) {
  GgufVocab v;
  const GgufValue* model = f.find("tokenizer.ggml.model");
  if (!model) throw Error(f.path() + ": has no tokenizer (tokenizer.ggml.model is missing)");
  v.model = std::string(model->as_string());
  if (const GgufValue* pre = f.find("tokenizer.ggml.pre")) v.pre = std::string(pre->as_string());
  const GgufValue* tokens = f.find("tokenizer.ggml.tokens");
  if (!tokens) throw Error(f.path() + ": metadata key 'tokenizer.ggml.tokens' is missing");
  for (std::string_view t : tokens->as_string_array()) v.tokens.emplace_back(t);
  if (const GgufValue* t = f.find("tokenizer.ggml.token_type")) {
    for (int64_t x : t->as_int_array()) v.token_types.push_back(static_cast<int32_t>(x));
  }
  if (const GgufValue* s = f.find("tokenizer.ggml.scores")) {
    v.scores = s->as_float_array();
  }
  if (const GgufValue* m = f.find("tokenizer.ggml.merges")) {
    for (std::string_view x : m->as_string_array()) v.merges.emplace_back(x);
  }
  auto opt_id = [&](const char* key) -> std::optional<int64_t> {
    const GgufValue* x = f.find(key);
    if (!x) return std::nullopt;
    return static_cast<int64_t>(x->as_u64());
  };
  auto opt_bool = [&](const char* key) -> std::optional<bool> {
    const GgufValue* x = f.find(key);
    if (!x) return std::nullopt;
    return x->as_bool();
  };
  v.bos = opt_id("tokenizer.ggml.bos_token_id");
  v.eos = opt_id("tokenizer.ggml.eos_token_id");
  v.unk = opt_id("tokenizer.ggml.unknown_token_id");
  v.pad = opt_id("tokenizer.ggml.padding_token_id");
  v.add_bos = opt_bool("tokenizer.ggml.add_bos_token");
  v.add_eos = opt_bool("tokenizer.ggml.add_eos_token");
  v.add_space_prefix = opt_bool("tokenizer.ggml.add_space_prefix");
  return v;
}

// A mixture of experts as llama.cpp's build_moe_ffn runs it: expert_count experts,
// expert_used_count a token, expert_feed_forward_length wide (llama's and olmoe's: the
// feed_forward_length), softmax routing renormalised over the picked experts for qwen3moe and
// llama (Mixtral) and not for qwen2moe and olmoe, Qwen2-MoE's shared expert
// (expert_shared_feed_forward_length); a llama file with experts is Mixtral. A gating function
// or a weight scale llama.cpp applies to other architectures is refused.
void read_gguf_moe(const GgufFile& f, const std::string& arch, const std::string& a,
                   const std::string& path, ModelConfig& c) {
  if (arch != "llama" && arch != "qwen3moe" && arch != "qwen2moe" && arch != "olmoe" &&
      arch != "granitemoe") {
    throw Error(path + ": " + arch + " with experts (" + a + "expert_count) is not supported");
  }
  c.num_experts = meta_int(f, a + "expert_count");
  c.num_experts_per_tok = meta_int(f, a + "expert_used_count");
  if (c.num_experts <= 0 || c.num_experts_per_tok <= 0 || c.num_experts_per_tok > c.num_experts) {
    throw Error(path + ": " + a + "expert_used_count " + std::to_string(c.num_experts_per_tok) +
                " must be between 1 and " + a + "expert_count " + std::to_string(c.num_experts));
  }
  const bool own_width = arch == "qwen3moe" || arch == "qwen2moe";
  c.moe_intermediate_size =
      own_width ? meta_int(f, a + "expert_feed_forward_length") : c.intermediate_size;
  if (c.moe_intermediate_size <= 0) {
    throw Error(path + ": " + a + "expert_feed_forward_length must be positive");
  }
  if (const GgufValue* g = f.find(a + "expert_gating_func"); g && g->as_u64() != 1) {
    throw Error(path + ": " + a + "expert_gating_func " + std::to_string(g->as_u64()) +
                " (not softmax) is not implemented");
  }
  if (const double scale = meta_float(f, a + "expert_weights_scale", 0.0);
      scale != 0.0 && scale != 1.0) {
    throw Error(path + ": " + a + "expert_weights_scale " + std::to_string(scale) +
                " is not implemented");
  }
  c.norm_topk_prob = arch == "qwen3moe" || arch == "llama" || arch == "granitemoe";
  c.router_weights_in_act_dtype = arch != "llama";
  c.moe_layers.clear();
  if (arch == "qwen2moe") {
    c.shared_expert_intermediate_size =
        meta_int(f, a + "expert_shared_feed_forward_length", c.intermediate_size);
  }
  if (arch == "granitemoe") {  // an ungated shared MLP where the file has one
    c.stacked_experts = true;
    c.shared_expert_intermediate_size = meta_int(f, a + "expert_shared_feed_forward_length", 0);
    c.shared_expert_gated = false;
    if (c.shared_expert_intermediate_size > 0) {
      c.architecture = "GraniteMoeSharedForCausalLM";
      c.model_type = "granitemoeshared";
    }
  }
  if (arch == "llama") {
    c.architecture = "MixtralForCausalLM";
    c.model_type = "mixtral";
  }
  if (arch == "olmoe") {  // q and k normalised over whole projections (attn_q_norm [hidden])
    c.qk_norm = false;
    c.qk_norm_full = true;
  }
}

// Granite's four multipliers as llama.cpp's converter writes them (embedding_scale,
// residual_scale, attention.scale, logit_scale; llama.cpp's defaults where absent: 1, 1,
// head_dim^-0.5 and 1).
void read_gguf_granite(const GgufFile& f, const std::string& a, const std::string& path,
                       ModelConfig& c) {
  const auto factor = [&](const std::string& key, double absent) {
    const double v = meta_float(f, a + key, absent);
    if (!std::isfinite(v) || v == 0.0) {
      throw Error(path + ": " + a + key + " must be a finite non-zero number");
    }
    return v;
  };
  c.embedding_scale = factor("embedding_scale", 1.0);
  c.residual_multiplier = factor("residual_scale", 1.0);
  c.logits_scaling = factor("logit_scale", 1.0);
  if (f.find(a + "attention.scale")) c.attention_multiplier = factor("attention.scale", 1.0);
}

GgufModel open_gguf_model(const std::string& path) {
  auto file = std::make_shared<const GgufFile>(GgufFile::open(path));
  const GgufFile& f = *file;
  const GgufValue* arch_value = f.find("general.architecture");
  if (!arch_value) throw Error(path + ": metadata key 'general.architecture' is missing");
  const std::string arch(arch_value->as_string());
  const ArchInfo* info = nullptr;
  for (const auto& a : kArchs) {
    if (arch == a.gguf) info = &a;
  }
  if (!info) {
    throw Error(path + ": architecture '" + arch +
                "' is not supported (anvil runs llama, qwen2, qwen3, phi3, gemma, gemma2, gemma3, "
                "smollm3, olmo2, qwen3moe, qwen2moe, olmoe, granite, granitemoe)");
  }
  GgufModel m;
  ModelConfig& c = m.config;
  c.architecture = info->hf_class;
  c.model_type = info->model_type;
  const std::string a = arch + ".";
  c.num_hidden_layers = meta_int(f, a + "block_count");
  c.hidden_size = meta_int(f, a + "embedding_length");
  c.intermediate_size = meta_int(f, a + "feed_forward_length");
  c.num_attention_heads = meta_int(f, a + "attention.head_count");
  c.num_key_value_heads = meta_int(f, a + "attention.head_count_kv", c.num_attention_heads);
  if (c.num_hidden_layers <= 0 || c.hidden_size <= 0 || c.intermediate_size <= 0 ||
      c.num_attention_heads <= 0 || c.num_key_value_heads <= 0 ||
      c.num_attention_heads % c.num_key_value_heads != 0) {
    throw Error(path + ": inconsistent model dimensions in the " + arch + ".* metadata");
  }
  c.head_dim = meta_int(f, a + "attention.key_length", c.hidden_size / c.num_attention_heads);
  if (c.head_dim <= 0 || c.head_dim % 2 != 0) throw Error(path + ": head dimension must be even");
  c.max_position_embeddings = meta_int(f, a + "context_length", 2048);
  c.rms_norm_eps =
      meta_float(f, a + "attention.layer_norm_rms_epsilon", arch == "phi3" ? 1e-5 : 1e-6);
  c.rope.theta = meta_float(f, a + "rope.freq_base", 10000.0);
  if (const GgufValue* scaling = f.find(a + "rope.scaling.type")) {
    const std::string type(scaling->as_string());
    if (type == "linear" || type == "yarn") {
      c.rope.type = type == "linear" ? RopeType::linear : RopeType::yarn;
      c.rope.factor = meta_float(f, a + "rope.scaling.factor", 1.0);
      if (!(c.rope.factor > 0)) throw Error(path + ": rope.scaling.factor must be positive");
    } else if (type == "longrope" && arch == "phi3") {
      // Phi-3's factor tensors say it (read_gguf_phi3)
    } else if (type != "none") {
      throw Error(path + ": RoPE scaling '" + type +
                  "' is not implemented (anvil does linear and yarn, and Phi-3's longrope)");
    }
    if (c.rope.type == RopeType::yarn) read_gguf_yarn(f, a, path, c);
  }
  if (arch == "phi3") read_gguf_phi3(f, a, path, c);
  if (arch == "granite" || arch == "granitemoe") read_gguf_granite(f, a, path, c);
  if (arch.rfind("gemma", 0) == 0) read_gguf_gemma(f, arch, a, path, c);
  if (arch == "smollm3") {
    // llama.cpp's smollm3 (src/models/smollm3.cpp): every 4th layer a NoPE layer, not stored.
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) c.rope_layers.push_back((l + 1) % 4 != 0);
  }
  if (const GgufTensorInfo* freqs = f.find_tensor("rope_freqs.weight")) {
    // Llama 3.1's scaling, baked by llama.cpp into one divisor per frequency.
    if (freqs->type != GgmlType::f32 || freqs->dims.size() != 1 ||
        static_cast<int64_t>(freqs->dims[0]) != c.head_dim / 2) {
      throw Error(path + ": rope_freqs.weight must be F32 with head_dim/2 entries");
    }
    c.rope.freq_factors.resize(static_cast<size_t>(c.head_dim / 2));
    std::memcpy(c.rope.freq_factors.data(), f.tensor_data(*freqs),
                c.rope.freq_factors.size() * sizeof(float));
  }
  m.vocab = read_gguf_vocab(f);
  c.vocab_size = static_cast<int64_t>(m.vocab.tokens.size());
  c.tie_word_embeddings = f.find_tensor("output.weight") == nullptr;
  c.qkv_bias = f.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.o_bias = f.find_tensor("blk.0.attn_output.bias") != nullptr;
  c.mlp_bias = f.find_tensor("blk.0.ffn_up.bias") != nullptr;
  c.qk_norm = f.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
  if (const GgufTensorInfo* emb = f.find_tensor("token_embd.weight")) {
    if (emb->dims.size() == 2 && static_cast<int64_t>(emb->dims[1]) != c.vocab_size) {
      throw Error(path + ": token_embd.weight has " + std::to_string(emb->dims[1]) +
                  " rows but the tokenizer has " + std::to_string(c.vocab_size) + " tokens");
    }
  }
  if (m.vocab.eos) c.eos_token_ids = {*m.vocab.eos};
  if (const GgufValue* eot = f.find("tokenizer.ggml.eot_token_id")) {
    const auto id = static_cast<int64_t>(eot->as_u64());
    if (c.eos_token_ids.empty() || c.eos_token_ids[0] != id) c.eos_token_ids.push_back(id);
  }
  if (meta_int(f, a + "expert_count", 0) > 0 || arch == "qwen3moe" || arch == "qwen2moe" ||
      arch == "olmoe" || arch == "granitemoe") {
    read_gguf_moe(f, arch, a, path, c);
  }
  if (arch == "olmo2") {
    // llama.cpp's olmo2 (src/models/olmo2.cpp): no input norms, attn_q_norm / attn_k_norm over
    // the whole projections, post_attention_norm and post_ffw_norm on the outputs. A window
    // (OLMo 3's, in the same architecture) is not implemented.
    if (meta_int(f, a + "attention.sliding_window", 0) > 0) {
      throw Error(path + ": olmo2 with attention.sliding_window (OLMo 3) is not implemented");
    }
    c.qk_norm = false;
    c.qk_norm_full = true;
    c.output_norms_only = true;
  }
  c.bos_token_id = m.vocab.bos;
  c.pad_token_id = m.vocab.pad;
  m.generation = GenerationConfig::from_model_config(c);
  if (const GgufValue* t = f.find("tokenizer.chat_template")) {
    m.chat_template = std::string(t->as_string());
  }
  m.weights =
      std::make_unique<GgufSource>(file, info->permuted_qk, c.num_attention_heads,
                                   c.num_key_value_heads, c.sandwich_norms || c.output_norms_only);
  m.file = file;
  return m;
}

}  // namespace anvil
