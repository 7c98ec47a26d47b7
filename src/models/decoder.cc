// The decoder's forward pass, a line-for-line companion of transformers' LlamaDecoderLayer /
// Qwen3DecoderLayer. Activations are [tokens, features] with tokens = batch * seq, row-major.
#include "models/decoder.h"

#include <cmath>

#include "anvil/error.h"
#include "models/rope_table.h"

namespace anvil {

Decoder::Decoder(ModelConfig config, ModelWeights weights, DType dtype, Device device,
                 ops::AttentionImpl attention)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      dtype_(dtype),
      act_dtype_(backend_for(device).activation_dtype(dtype)),
      device_(device),
      attention_(attention) {
  const RopeFrequencies f = rope_frequencies(config_.rope, config_.head_dim);
  inv_freq_ = Tensor::from_f32(f.inv_freq, {static_cast<int64_t>(f.inv_freq.size())}).to(device_);
  rope_scaling_ = f.attention_scaling;
}

KvCache Decoder::new_cache(int64_t batch, int64_t capacity) const {
  return KvCache::allocate(config_, batch, capacity, act_dtype_, device_);
}

int64_t Decoder::decode_weight_bytes() const {
  int64_t bytes = 0;
  auto add = [&](const Tensor& t) {
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  };
  for (const LayerWeights& l : weights_.layers) {
    for (const Tensor* t :
         {&l.input_layernorm, &l.q_proj, &l.k_proj, &l.v_proj, &l.o_proj, &l.q_bias, &l.k_bias,
          &l.v_bias, &l.o_bias, &l.q_norm, &l.k_norm, &l.post_attention_layernorm, &l.gate_proj,
          &l.up_proj, &l.down_proj, &l.gate_bias, &l.up_bias, &l.down_bias}) {
      add(*t);
    }
  }
  add(weights_.norm);
  add(weights_.lm_head);
  bytes += static_cast<int64_t>(weights_.embed_tokens.nbytes()) / config_.vocab_size;
  return bytes;
}

Tensor Decoder::scratch(const std::string& slot, const Shape& shape) const {
  const int64_t need = shape_numel(shape);
  Tensor& buf = scratch_[slot];
  if (!buf.defined() || buf.numel() < need) buf = Tensor::empty({need}, act_dtype_, device_);
  return buf.narrow(0, 0, need).view(shape);
}

Tensor Decoder::upload_i32(const std::vector<int32_t>& v, const Shape& shape) const {
  Tensor host = Tensor::empty(shape, DType::i32);
  std::copy(v.begin(), v.end(), host.data<int32_t>());
  return host.to(device_);
}

Tensor Decoder::forward(const StepInput& step, KvCache& cache) const {
  const ModelConfig& c = config_;
  const int64_t b = step.batch, s = step.seq, n = b * s, past = cache.length;
  const int64_t h = c.hidden_size, hd = c.head_dim;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads;
  if (static_cast<int64_t>(step.ids.size()) != n ||
      static_cast<int64_t>(step.positions.size()) != n ||
      static_cast<int64_t>(step.key_mask.size()) != b * (past + s)) {
    throw Error("decoder step: inconsistent input sizes");
  }
  if (cache.batch != b || past + s > cache.capacity) {
    throw Error("decoder step: " + std::to_string(past + s) + " positions exceed the KV cache (" +
                std::to_string(cache.capacity) + ")");
  }
  for (size_t i = 0; i < step.ids.size(); ++i) {
    if (step.ids[i] < 0 || step.ids[i] >= c.vocab_size) {
      throw Error("input id " + std::to_string(step.ids[i]) + " (row " +
                  std::to_string(static_cast<int64_t>(i) / s) + ", position " +
                  std::to_string(static_cast<int64_t>(i) % s) +
                  ") is out of range for vocab_size " + std::to_string(c.vocab_size));
    }
  }

  const Tensor ids = Tensor::from_i64(step.ids, {n}).to(device_);
  const Tensor positions = upload_i32(step.positions, {n});
  const Tensor key_mask = upload_i32(step.key_mask, {b, past + s});

  Tensor x = scratch("x", {n, h});
  Tensor normed = scratch("normed", {n, h});
  Tensor q = scratch("q", {n, nh * hd});
  Tensor k = scratch("k", {n, nkv * hd});
  Tensor v = scratch("v", {n, nkv * hd});
  Tensor attn = scratch("attn", {n, nh * hd});
  Tensor proj = scratch("proj", {n, h});
  Tensor gate = scratch("gate", {n, c.intermediate_size});
  Tensor up = scratch("up", {n, c.intermediate_size});
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  ops::embedding(ids, weights_.embed_tokens, x);
  for (size_t li = 0; li < weights_.layers.size(); ++li) {
    const LayerWeights& L = weights_.layers[li];
    // Self-attention block.
    ops::rms_norm(x, L.input_layernorm, eps, normed);
    ops::linear(normed, L.q_proj, L.q_bias, q);
    ops::linear(normed, L.k_proj, L.k_bias, k);
    ops::linear(normed, L.v_proj, L.v_bias, v);
    if (c.qk_norm) {  // Qwen3: RMSNorm over each head's vector, before RoPE
      ops::rms_norm(q.view({n * nh, hd}), L.q_norm, eps, q.view({n * nh, hd}));
      ops::rms_norm(k.view({n * nkv, hd}), L.k_norm, eps, k.view({n * nkv, hd}));
    }
    ops::rope(q.view({n, nh, hd}), positions, inv_freq_, rope_scaling_);
    ops::rope(k.view({n, nkv, hd}), positions, inv_freq_, rope_scaling_);
    ops::store_kv(k.view({b, s, nkv, hd}), cache.keys[li], past);
    ops::store_kv(v.view({b, s, nkv, hd}), cache.values[li], past);
    ops::attention({q.view({b, s, nh, hd}), cache.keys[li], cache.values[li], key_mask,
                    attn.view({b, s, nh, hd}), past, scale, attention_});
    ops::linear(attn, L.o_proj, L.o_bias, proj);
    ops::add(x, proj, x);
    // MLP block.
    ops::rms_norm(x, L.post_attention_layernorm, eps, normed);
    ops::linear(normed, L.gate_proj, L.gate_bias, gate);
    ops::linear(normed, L.up_proj, L.up_bias, up);
    ops::swiglu(gate, up, gate);
    ops::linear(gate, L.down_proj, L.down_bias, proj);
    ops::add(x, proj, x);
  }
  cache.length = past + s;

  // Only the rows whose logits are wanted go through the norm and the (large) head.
  Tensor rows = x;
  int64_t out_seq = s;
  if (!step.all_logits && s > 1) {
    rows = x.view({b, s, h}).select(1, s - 1).contiguous();
    out_seq = 1;
  }
  const int64_t m = b * out_seq;
  Tensor final_normed = scratch("final_normed", {m, h});
  ops::rms_norm(rows, weights_.norm, eps, final_normed);
  Tensor logits = Tensor::empty({m, c.vocab_size}, act_dtype_, device_);
  ops::linear(final_normed, weights_.lm_head, Tensor(), logits);
  return logits.to(DType::f32).view({b, out_seq, c.vocab_size});
}

}  // namespace anvil
