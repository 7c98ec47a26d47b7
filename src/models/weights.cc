// Weight loading by scope, the way candle's VarBuilder does it: the names read like
// modeling_qwen3.py. Zero-copy when the file already holds the requested dtype on the CPU.
#include "models/weights.h"

#include <algorithm>
#include <cstring>

#include "anvil/error.h"

namespace anvil {
namespace {

// A host tensor's rows (whole rows, so any dtype, quantized blocks included) in a new order.
Tensor reorder_rows(const Tensor& t, const std::vector<int64_t>& rows) {
  const Tensor src = t.contiguous();
  Tensor out = Tensor::empty(src.shape(), src.dtype());
  const size_t row_bytes = src.nbytes() / static_cast<size_t>(src.size(0));
  const auto* from = static_cast<const uint8_t*>(src.raw());
  auto* to = static_cast<uint8_t*>(out.raw());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(to + i * row_bytes, from + static_cast<size_t>(rows[i]) * row_bytes, row_bytes);
  }
  return out;
}

// Partial rotary (Phi-4-mini): transformers rotates dimension i of a head with i + r/2 for i
// below r/2 (r = rotary_dims) and leaves dimensions r.. alone; the decoder's RoPE kernels pair
// i with i + head_dim/2 across the whole head. Each head's q and k rows reordered so that the
// rotated pairs land on (i, i + head_dim/2) for i < r/2 and the unrotated dimensions fill the
// other slots, whose frequencies are 0 (rope_table.cc: cos 1, sin 0, the identity), give
// transformers' rotation with no kernel knowing; q.k sums the same products in another order
// (v and the output are not reordered). The order, new row -> stored row, for `heads` heads
// starting at row `first` of a tensor of `total` rows; empty when every dimension rotates.
std::vector<int64_t> rotary_row_order(const ModelConfig& c, int64_t heads, int64_t first,
                                      int64_t total) {
  const int64_t d = c.head_dim, r = c.rotary_dims();
  if (r == d) return {};
  std::vector<int64_t> order(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) order[i] = i;
  const int64_t half = d / 2, rotated = r / 2, passed = half - rotated;
  for (int64_t h = 0; h < heads; ++h) {
    const int64_t base = first + h * d;
    for (int64_t i = 0; i < rotated; ++i) {
      order[base + i] = base + i;                   // the pair's first element
      order[base + half + i] = base + rotated + i;  // its partner
    }
    for (int64_t i = 0; i < passed; ++i) {  // unrotated: r .. r + passed, then the rest
      order[base + rotated + i] = base + r + i;
      order[base + half + rotated + i] = base + r + passed + i;
    }
  }
  return order;
}

class Scope {
 public:
  Scope(const WeightSource& src, const ModelConfig& config, std::optional<DType> dtype,
        Device device)
      : src_(src),
        config_(config),
        dtype_(dtype),
        device_(device),
        base_(!src.contains("model.embed_tokens.weight") && src.contains("embed_tokens.weight")) {}
  /// Whether the checkpoint is a base model's (transformers' Qwen3Model, LlamaModel, ...: the
  /// decoder's names without the "model." prefix, and no lm_head of its own).
  bool base_model() const { return base_; }
  bool contains(const std::string& name) const { return src_.contains(stored(name)); }

  /// `rows`: when given, row i of the result is row rows[i] of the stored tensor (elements for
  /// a vector), reordered on the host before it moves to the device.
  Tensor get(const std::string& hf_name, const Shape& shape,
             const std::vector<int64_t>* rows = nullptr) const {
    const std::string name = stored(hf_name);
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
    if (rows) t = reorder_rows(t, *rows);
    return t.to(device_);
  }

  /// An RMSNorm weight: as stored, or 1 + w (GemmaRMSNorm) added in float32 on the host, as
  /// transformers computes (1.0 + weight.float()), before the conversion to the wanted dtype.
  Tensor get_norm(const std::string& name, int64_t size,
                  const std::vector<int64_t>* rows = nullptr) const {
    if (!config_.norm_plus_one) return get(name, {size}, rows);
    const Scope f32(src_, config_, DType::f32, Device::cpu());  // the same base_ from src_
    Tensor t = Tensor::empty({size}, DType::f32);
    t.copy_from(f32.get(name, {size}, rows));  // a copy: the loaded one may map the file
    float* w = t.data<float>();
    for (int64_t i = 0; i < size; ++i) w[i] += 1.0f;
    // Unset dtype: kept in float32, where 1 + w is exact as transformers computes it.
    const DType want = dtype_.value_or(DType::f32);
    if (want != DType::f32) {
      Tensor converted = Tensor::empty(t.shape(), want);
      converted.copy_from(t);
      t = converted;
    }
    return t.to(device_);
  }

  Tensor get_optional(bool present, const std::string& name, const Shape& shape,
                      const std::vector<int64_t>* rows = nullptr) const {
    return present ? get(name, shape, rows) : Tensor();
  }

 private:
  std::string stored(const std::string& name) const {
    return base_ && name.starts_with("model.") ? name.substr(6) : name;
  }

  const WeightSource& src_;
  const ModelConfig& config_;
  std::optional<DType> dtype_;
  Device device_;
  bool base_;
};

// GraniteMoe's experts and shared MLP from their stacks: each expert's gate, up and down (and
// the shared MLP's gate and up) as row views of the stack, gate rows first as the modules'
// chunk(2) reads them.
void load_stacked_experts(const Scope& s, const MoeNames& n, const ModelConfig& c,
                          LayerWeights& l) {
  const int64_t h = c.hidden_size, mi = c.moe_intermediate_size, e_count = c.num_experts;
  const Tensor gate_up = s.get(n.stacked_gate_up, {e_count, 2 * mi, h}).view({e_count * 2 * mi, h});
  const Tensor down = s.get(n.stacked_down, {e_count, h, mi}).view({e_count * h, mi});
  for (int64_t e = 0; e < e_count; ++e) {
    l.expert_gate.push_back(gate_up.narrow(0, e * 2 * mi, mi));
    l.expert_up.push_back(gate_up.narrow(0, e * 2 * mi + mi, mi));
    l.expert_down.push_back(down.narrow(0, e * h, h));
  }
  if (const int64_t si = c.shared_expert_intermediate_size; si > 0) {
    const Tensor shared = s.get(n.shared_gate_up, {2 * si, h});
    l.shared_gate_proj = shared.narrow(0, 0, si);
    l.shared_up_proj = shared.narrow(0, si, si);
    l.shared_down_proj = s.get(n.shared_down, {h, si});
  }
}

}  // namespace

MoeNames moe_names(const ModelConfig& c, int64_t layer) {
  const std::string p = "model.layers." + std::to_string(layer) + ".";
  MoeNames n;
  if (c.model_type == "mixtral") {
    n.router = p + "block_sparse_moe.gate.weight";
    n.experts = p + "block_sparse_moe.experts.";
    n.gate_suffix = ".w1.weight";
    n.up_suffix = ".w3.weight";
    n.down_suffix = ".w2.weight";
    return n;
  }
  if (c.stacked_experts) {  // GraniteMoe (the per-expert names are the GGUF's slices)
    n.router = p + "block_sparse_moe.router.layer.weight";
    n.experts = p + "block_sparse_moe.experts.";
    n.gate_suffix = ".gate_proj.weight";
    n.up_suffix = ".up_proj.weight";
    n.down_suffix = ".down_proj.weight";
    n.stacked_gate_up = p + "block_sparse_moe.input_linear.weight";
    n.stacked_down = p + "block_sparse_moe.output_linear.weight";
    n.shared_gate_up = p + "shared_mlp.input_linear.weight";
    n.shared_gate = p + "shared_mlp.gate_proj.weight";
    n.shared_up = p + "shared_mlp.up_proj.weight";
    n.shared_down = p + "shared_mlp.output_linear.weight";
    return n;
  }
  n.router = p + "mlp.gate.weight";
  n.experts = p + "mlp.experts.";
  n.gate_suffix = ".gate_proj.weight";
  n.up_suffix = ".up_proj.weight";
  n.down_suffix = ".down_proj.weight";
  n.shared_gate = p + "mlp.shared_expert.gate_proj.weight";
  n.shared_up = p + "mlp.shared_expert.up_proj.weight";
  n.shared_down = p + "mlp.shared_expert.down_proj.weight";
  n.shared_expert_gate = p + "mlp.shared_expert_gate.weight";
  return n;
}

std::vector<std::pair<std::string, Shape>> hf_weight_names(const ModelConfig& c) {
  const int64_t h = c.hidden_size, hd = c.head_dim, inter = c.intermediate_size;
  const int64_t q_out = c.num_attention_heads * hd, kv_out = c.num_key_value_heads * hd;
  std::vector<std::pair<std::string, Shape>> out;
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, h}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    if (!c.output_norms_only) out.push_back({p + "input_layernorm.weight", {h}});
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
    if (c.qk_norm_full) {
      out.push_back({p + "self_attn.q_norm.weight", {q_out}});
      out.push_back({p + "self_attn.k_norm.weight", {kv_out}});
    }
    out.push_back({p + "post_attention_layernorm.weight", {h}});
    if (c.output_norms_only) out.push_back({p + "post_feedforward_layernorm.weight", {h}});
    if (c.sandwich_norms) {
      out.push_back({p + "pre_feedforward_layernorm.weight", {h}});
      out.push_back({p + "post_feedforward_layernorm.weight", {h}});
    }
    if (c.is_moe_layer(i)) {
      const MoeNames n = moe_names(c, i);
      const int64_t mi = c.moe_intermediate_size, si = c.shared_expert_intermediate_size;
      out.push_back({n.router, {c.num_experts, h}});
      if (c.stacked_experts) {
        out.push_back({n.stacked_gate_up, {c.num_experts, 2 * mi, h}});
        out.push_back({n.stacked_down, {c.num_experts, h, mi}});
        if (si > 0) {
          out.push_back({n.shared_gate_up, {2 * si, h}});
          out.push_back({n.shared_down, {h, si}});
        }
        continue;
      }
      for (int64_t e = 0; e < c.num_experts; ++e) {
        out.push_back({n.gate(e), {mi, h}});
        out.push_back({n.up(e), {mi, h}});
        out.push_back({n.down(e), {h, mi}});
      }
      if (si > 0) {
        out.push_back({n.shared_gate, {si, h}});
        out.push_back({n.shared_up, {si, h}});
        out.push_back({n.shared_down, {h, si}});
        out.push_back({n.shared_expert_gate, {1, h}});
      }
      continue;
    }
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
  // Partial rotary's reordering of q and k rows (empty orders: none).
  const std::vector<int64_t> q_rows = rotary_row_order(c, c.num_attention_heads, 0, q_out);
  const std::vector<int64_t> k_rows = rotary_row_order(c, c.num_key_value_heads, 0, kv_out);
  const std::vector<int64_t> head_rows = rotary_row_order(c, 1, 0, hd);
  std::vector<int64_t> qkv_rows;
  if (!q_rows.empty()) {
    qkv_rows = rotary_row_order(c, c.num_attention_heads, 0, q_out + 2 * kv_out);
    const auto k_part = rotary_row_order(c, c.num_key_value_heads, q_out, q_out + 2 * kv_out);
    std::copy(k_part.begin() + q_out, k_part.begin() + q_out + kv_out, qkv_rows.begin() + q_out);
  }
  const auto order = [](const std::vector<int64_t>& rows) {
    return rows.empty() ? nullptr : &rows;
  };
  ModelWeights w;
  w.embed_tokens = s.get("model.embed_tokens.weight", {c.vocab_size, h});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    if (!c.output_norms_only) l.input_layernorm = s.get_norm(p + "input_layernorm.weight", h);
    if (c.fused_projections) {  // Phi-3: rows q, then k, then v; views, no copies
      const Tensor qkv =
          s.get(p + "self_attn.qkv_proj.weight", {q_out + 2 * kv_out, h}, order(qkv_rows));
      l.q_proj = qkv.narrow(0, 0, q_out);
      l.k_proj = qkv.narrow(0, q_out, kv_out);
      l.v_proj = qkv.narrow(0, q_out + kv_out, kv_out);
    } else {
      l.q_proj = s.get(p + "self_attn.q_proj.weight", {q_out, h}, order(q_rows));
      l.k_proj = s.get(p + "self_attn.k_proj.weight", {kv_out, h}, order(k_rows));
      l.v_proj = s.get(p + "self_attn.v_proj.weight", {kv_out, h});
    }
    l.o_proj = s.get(p + "self_attn.o_proj.weight", {h, q_out});
    l.q_bias = s.get_optional(c.qkv_bias, p + "self_attn.q_proj.bias", {q_out}, order(q_rows));
    l.k_bias = s.get_optional(c.qkv_bias, p + "self_attn.k_proj.bias", {kv_out}, order(k_rows));
    l.v_bias = s.get_optional(c.qkv_bias, p + "self_attn.v_proj.bias", {kv_out});
    l.o_bias = s.get_optional(c.o_bias, p + "self_attn.o_proj.bias", {h});
    if (c.qk_norm) {
      l.q_norm = s.get_norm(p + "self_attn.q_norm.weight", hd, order(head_rows));
      l.k_norm = s.get_norm(p + "self_attn.k_norm.weight", hd, order(head_rows));
    }
    if (c.qk_norm_full) {  // OLMo 2: over the whole projections
      l.q_norm = s.get_norm(p + "self_attn.q_norm.weight", q_out);
      l.k_norm = s.get_norm(p + "self_attn.k_norm.weight", kv_out);
    }
    if (c.output_norms_only) {  // OLMo 2: the norms of the attention's and the MLP's outputs
      l.attn_out_norm = s.get_norm(p + "post_attention_layernorm.weight", h);
      l.mlp_out_norm = s.get_norm(p + "post_feedforward_layernorm.weight", h);
    } else if (c.sandwich_norms) {  // Gemma 2 / 3: post_attention_layernorm is the attention's
                                    // output's
      l.attn_out_norm = s.get_norm(p + "post_attention_layernorm.weight", h);
      l.post_attention_layernorm = s.get_norm(p + "pre_feedforward_layernorm.weight", h);
      l.mlp_out_norm = s.get_norm(p + "post_feedforward_layernorm.weight", h);
    } else {
      l.post_attention_layernorm = s.get_norm(p + "post_attention_layernorm.weight", h);
    }
    if (c.is_moe_layer(i)) {
      const MoeNames n = moe_names(c, i);
      const int64_t mi = c.moe_intermediate_size, si = c.shared_expert_intermediate_size;
      l.router = s.get(n.router, {c.num_experts, h});
      if (c.stacked_experts && !source.contains(n.gate(0))) {
        load_stacked_experts(s, n, c, l);
        w.layers.push_back(std::move(l));
        continue;
      }
      for (int64_t e = 0; e < c.num_experts; ++e) {
        l.expert_gate.push_back(s.get(n.gate(e), {mi, h}));
        l.expert_up.push_back(s.get(n.up(e), {mi, h}));
        l.expert_down.push_back(s.get(n.down(e), {h, mi}));
      }
      if (si > 0) {  // GraniteMoeShared's (from a GGUF) has no gate
        l.shared_gate_proj = s.get(n.shared_gate, {si, h});
        l.shared_up_proj = s.get(n.shared_up, {si, h});
        l.shared_down_proj = s.get(n.shared_down, {h, si});
        if (c.shared_expert_gated) l.shared_expert_gate = s.get(n.shared_expert_gate, {1, h});
      }
      w.layers.push_back(std::move(l));
      continue;
    }
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
  w.norm = s.get_norm("model.norm.weight", h);
  // transformers ties the head to the embedding whenever the config says so, ignoring any
  // lm_head.weight in the file. A base model's checkpoint with an untied head has none: it
  // gives hidden states, and the decoder refuses logits (transformers would draw a random head).
  if (c.tie_word_embeddings) {
    w.lm_head = w.embed_tokens;
  } else if (!s.base_model() || s.contains("lm_head.weight")) {
    w.lm_head = s.get("lm_head.weight", {c.vocab_size, h});
  }
  return w;
}

}  // namespace anvil
