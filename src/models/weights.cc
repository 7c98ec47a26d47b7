// Weight loading by scope, the way candle's VarBuilder does it: the names read like
// modeling_qwen3.py. Zero-copy when the file already holds the requested dtype on the CPU.
#include "models/weights.h"

#include "anvil/error.h"

namespace anvil {
namespace {

class Scope {
 public:
  Scope(const WeightSource& src, const ModelConfig& config, std::optional<DType> dtype,
        Device device)
      : src_(src), config_(config), dtype_(dtype), device_(device) {}

  Tensor get(const std::string& name, const Shape& shape) const {
    if (!src_.contains(name)) {
      throw Error("checkpoint has no tensor '" + name + "' (needed by " + config_.architecture +
                  ")");
    }
    const Shape stored = src_.shape(name);
    if (stored != shape) {
      throw Error(src_.describe(name) + " has shape " + shape_str(stored) +
                  ", but config.json implies " + shape_str(shape));
    }
    const DType stored_dtype = src_.dtype(name);
    if (!is_floating(stored_dtype) && !is_quantized(stored_dtype)) {
      throw Error(src_.describe(name) + " has integer dtype " +
                  std::string(dtype_name(stored_dtype)) + ", expected floating point weights");
    }
    Tensor t = src_.load(name);
    DType want = dtype_.value_or(t.dtype());
    // Kept as stored only when kernels read that dtype; other floats (f64, f8) become f32.
    if (!dtype_ && !is_quantized(want) && want != DType::f32 && want != DType::bf16 &&
        want != DType::f16) {
      want = DType::f32;
    }
    if (t.dtype() != want) {
      // Convert on the host, then move: checkpoints arrive as f32/bf16/f16/f8 or quantized.
      Tensor converted = Tensor::empty(t.shape(), want);
      converted.copy_from(t);
      t = converted;
    }
    return t.to(device_);
  }

  Tensor get_optional(bool present, const std::string& name, const Shape& shape) const {
    return present ? get(name, shape) : Tensor();
  }

 private:
  const WeightSource& src_;
  const ModelConfig& config_;
  std::optional<DType> dtype_;
  Device device_;
};

}  // namespace

std::vector<std::pair<std::string, Shape>> hf_weight_names(const ModelConfig& c) {
  const int64_t h = c.hidden_size, hd = c.head_dim, inter = c.intermediate_size;
  const int64_t q_out = c.num_attention_heads * hd, kv_out = c.num_key_value_heads * hd;
  std::vector<std::pair<std::string, Shape>> out;
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, h}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out.push_back({p + "input_layernorm.weight", {h}});
    if (c.fused_projections) {
      out.push_back({p + "self_attn.qkv_proj.weight", {q_out + 2 * kv_out, h}});
    } else {
      out.push_back({p + "self_attn.q_proj.weight", {q_out, h}});
      out.push_back({p + "self_attn.k_proj.weight", {kv_out, h}});
      out.push_back({p + "self_attn.v_proj.weight", {kv_out, h}});
    }
    out.push_back({p + "self_attn.o_proj.weight", {h, q_out}});
    if (c.qkv_bias) {
      out.push_back({p + "self_attn.q_proj.bias", {q_out}});
      out.push_back({p + "self_attn.k_proj.bias", {kv_out}});
      out.push_back({p + "self_attn.v_proj.bias", {kv_out}});
    }
    if (c.o_bias) out.push_back({p + "self_attn.o_proj.bias", {h}});
    if (c.qk_norm) {
      out.push_back({p + "self_attn.q_norm.weight", {hd}});
      out.push_back({p + "self_attn.k_norm.weight", {hd}});
    }
    out.push_back({p + "post_attention_layernorm.weight", {h}});
    if (c.fused_projections) {
      out.push_back({p + "mlp.gate_up_proj.weight", {2 * inter, h}});
    } else {
      out.push_back({p + "mlp.gate_proj.weight", {inter, h}});
      out.push_back({p + "mlp.up_proj.weight", {inter, h}});
    }
    out.push_back({p + "mlp.down_proj.weight", {h, inter}});
    if (c.mlp_bias) {
      out.push_back({p + "mlp.gate_proj.bias", {inter}});
      out.push_back({p + "mlp.up_proj.bias", {inter}});
      out.push_back({p + "mlp.down_proj.bias", {h}});
    }
  }
  out.push_back({"model.norm.weight", {h}});
  if (!c.tie_word_embeddings) out.push_back({"lm_head.weight", {c.vocab_size, h}});
  return out;
}

ModelWeights load_weights(const WeightSource& source, const ModelConfig& c,
                          std::optional<DType> dtype, Device device) {
  const Scope s(source, c, dtype, device);
  const int64_t h = c.hidden_size, hd = c.head_dim, inter = c.intermediate_size;
  const int64_t q_out = c.num_attention_heads * hd, kv_out = c.num_key_value_heads * hd;
  ModelWeights w;
  w.embed_tokens = s.get("model.embed_tokens.weight", {c.vocab_size, h});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.input_layernorm = s.get(p + "input_layernorm.weight", {h});
    if (c.fused_projections) {  // Phi-3: rows q, then k, then v; views, no copies
      const Tensor qkv = s.get(p + "self_attn.qkv_proj.weight", {q_out + 2 * kv_out, h});
      l.q_proj = qkv.narrow(0, 0, q_out);
      l.k_proj = qkv.narrow(0, q_out, kv_out);
      l.v_proj = qkv.narrow(0, q_out + kv_out, kv_out);
    } else {
      l.q_proj = s.get(p + "self_attn.q_proj.weight", {q_out, h});
      l.k_proj = s.get(p + "self_attn.k_proj.weight", {kv_out, h});
      l.v_proj = s.get(p + "self_attn.v_proj.weight", {kv_out, h});
    }
    l.o_proj = s.get(p + "self_attn.o_proj.weight", {h, q_out});
    l.q_bias = s.get_optional(c.qkv_bias, p + "self_attn.q_proj.bias", {q_out});
    l.k_bias = s.get_optional(c.qkv_bias, p + "self_attn.k_proj.bias", {kv_out});
    l.v_bias = s.get_optional(c.qkv_bias, p + "self_attn.v_proj.bias", {kv_out});
    l.o_bias = s.get_optional(c.o_bias, p + "self_attn.o_proj.bias", {h});
    l.q_norm = s.get_optional(c.qk_norm, p + "self_attn.q_norm.weight", {hd});
    l.k_norm = s.get_optional(c.qk_norm, p + "self_attn.k_norm.weight", {hd});
    l.post_attention_layernorm = s.get(p + "post_attention_layernorm.weight", {h});
    if (c.fused_projections) {  // gate the first half, as Phi3MLP's chunk(2)
      const Tensor gate_up = s.get(p + "mlp.gate_up_proj.weight", {2 * inter, h});
      l.gate_proj = gate_up.narrow(0, 0, inter);
      l.up_proj = gate_up.narrow(0, inter, inter);
    } else {
      l.gate_proj = s.get(p + "mlp.gate_proj.weight", {inter, h});
      l.up_proj = s.get(p + "mlp.up_proj.weight", {inter, h});
    }
    l.down_proj = s.get(p + "mlp.down_proj.weight", {h, inter});
    l.gate_bias = s.get_optional(c.mlp_bias, p + "mlp.gate_proj.bias", {inter});
    l.up_bias = s.get_optional(c.mlp_bias, p + "mlp.up_proj.bias", {inter});
    l.down_bias = s.get_optional(c.mlp_bias, p + "mlp.down_proj.bias", {h});
    w.layers.push_back(std::move(l));
  }
  w.norm = s.get("model.norm.weight", {h});
  // transformers ties the head to the embedding whenever the config says so, ignoring any
  // lm_head.weight in the file.
  w.lm_head = c.tie_word_embeddings ? w.embed_tokens : s.get("lm_head.weight", {c.vocab_size, h});
  return w;
}

}  // namespace anvil
