// The decoder's forward pass, a line-for-line companion of transformers' LlamaDecoderLayer /
// Qwen3DecoderLayer. Activations are [tokens, features] with tokens = batch * seq, row-major.
#include "models/decoder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "anvil/error.h"
#include "core/kernels.h"
#include "models/rope_table.h"
#include "models/weights_fingerprint.h"

namespace anvil {

Decoder::Decoder(ModelConfig config, ModelWeights weights, DType dtype, Device device,
                 ops::AttentionImpl attention, std::optional<DType> kv_dtype)
    : config_(std::move(config)),
      weights_(std::move(weights)),
      dtype_(dtype),
      act_dtype_(backend_for(device).activation_dtype(dtype)),
      kv_dtype_(kv_dtype.value_or(backend_for(device).kv_cache_dtype(dtype))),
      device_(device),
      attention_(attention) {
  fingerprint_ = weights_fingerprint(config_, weights_, dtype_, kv_dtype_);
  // Refused here, naming the dtypes that work, rather than at the first attention.
  if (!find_kernel_raw(ops::kAttention, device.type, act_dtype_, kv_dtype_)) {
    std::string usable;
    for (DType d : {DType::f32, DType::f16, DType::bf16}) {
      if (find_kernel_raw(ops::kAttention, device.type, act_dtype_, d)) {
        usable += (usable.empty() ? "" : ", ") + std::string(dtype_name(d));
      }
    }
    throw Error("KV cache dtype " + std::string(dtype_name(kv_dtype_)) + ": the " +
                std::string(device_type_name(device.type)) +
                " backend has no attention over such a cache beside " +
                std::string(dtype_name(act_dtype_)) + " activations (it has: " + usable + ")");
  }
  if (config_.num_experts > 0 &&
      (!find_kernel_raw(ops::kGatherRows, device.type, act_dtype_, act_dtype_) ||
       !find_kernel_raw(ops::kScatterAddRows, device.type, act_dtype_, act_dtype_))) {
    throw Error(config_.architecture +
                ": mixture-of-experts layers need the gather_rows and "
                "scatter_add_rows kernels, which the " +
                std::string(device_type_name(device.type)) + " backend does not have for " +
                std::string(dtype_name(act_dtype_)) + " activations");
  }
  const RopeFrequencies f = rope_frequencies(config_.rope, config_.head_dim);
  inv_freq_ = Tensor::from_f32(f.inv_freq, {static_cast<int64_t>(f.inv_freq.size())}).to(device_);
  rope_scaling_ = f.attention_scaling;
  rope_length_ = config_.rope.original_max_position_embeddings;
  if (config_.sliding_rope) {  // Gemma 3's sliding layers (static: default, linear, yarn, ...)
    const RopeFrequencies s = rope_frequencies(*config_.sliding_rope, config_.head_dim);
    sliding_inv_freq_ =
        Tensor::from_f32(s.inv_freq, {static_cast<int64_t>(s.inv_freq.size())}).to(device_);
    sliding_rope_scaling_ = s.attention_scaling;
  }
  if (!config_.rope_layers.empty()) {
    // A frequency of 0 leaves its pair as it is, unscaled (ops::RopeArgs): no rotation at all.
    const std::vector<float> zeros(static_cast<size_t>(config_.head_dim / 2), 0.0f);
    no_rope_inv_freq_ = Tensor::from_f32(zeros, {config_.head_dim / 2}).to(device_);
  }
  // Gemma multiplies by the scale as a tensor of the weights' dtype (embed_scale.to(
  // weight.dtype)): the factor rounded to it; Granite by a Python float.
  embedding_scale_ = static_cast<float>(config_.embedding_scale);
  if (config_.embedding_scale_rounded) embedding_scale_ = round_to_dtype(embedding_scale_, dtype_);
}

const Decoder& Decoder::first_layers(int64_t layers) const {
  if (layers < 1 || layers > config_.num_hidden_layers) {
    throw Error("assistant_early_exit: " + std::to_string(layers) +
                " layers asked for, but the model has " +
                std::to_string(config_.num_hidden_layers) + " (1 to " +
                std::to_string(config_.num_hidden_layers) + ")");
  }
  std::unique_ptr<Decoder>& kept = first_layers_[layers];
  if (!kept) {
    ModelConfig config = config_;
    config.num_hidden_layers = layers;
    const auto n = static_cast<size_t>(layers);
    for (std::vector<bool>* per_layer :
         {&config.sliding_layers, &config.rope_layers, &config.moe_layers}) {
      if (per_layer->size() > n) per_layer->resize(n);
    }
    ModelWeights weights = weights_;  // tensors share their storage
    weights.layers.resize(n);
    kept = std::make_unique<Decoder>(std::move(config), std::move(weights), dtype_, device_,
                                     attention_, kv_dtype_);
  }
  return *kept;
}

void Decoder::follow_rope_length(const std::vector<int32_t>& positions) const {
  const RopeType type = config_.rope.type;
  if ((type != RopeType::dynamic && type != RopeType::longrope) || positions.empty()) return;
  const int64_t seq_len = *std::max_element(positions.begin(), positions.end()) + int64_t{1};
  const int64_t original = config_.rope.original_max_position_embeddings;
  int64_t length = rope_length_;
  if (type == RopeType::longrope) {
    // longrope_frequency_update: the long factors while the sequence is past the original
    // context, the short ones otherwise; no other state.
    length = seq_len > original ? original + 1 : original;
  } else if (seq_len > rope_length_) {
    // dynamic_rope_update: grow past the longest sequence so far; back to the original
    // frequencies once a sequence within the original length follows a longer one.
    length = seq_len;
  } else if (seq_len < original && rope_length_ > original) {
    length = original;
  }
  if (length == rope_length_) return;
  rope_length_ = length;
  const std::vector<float> inv = frequencies_for_length(config_.rope, config_.head_dim, length);
  backend_for(device_).copy_from_host_queued(inv_freq_.raw(), inv.data(),
                                             inv.size() * sizeof(float), device_);
}

KvCache Decoder::new_cache(int64_t batch, int64_t capacity) const {
  return KvCache::allocate(config_, batch, capacity, kv_dtype_, device_);
}

int64_t Decoder::decode_weight_bytes() const {
  int64_t bytes = 0;
  auto add = [&](const Tensor& t) {
    if (t.defined()) bytes += static_cast<int64_t>(t.nbytes());
  };
  for (const LayerWeights& l : weights_.layers) {
    for (const Tensor* t :
         {&l.input_layernorm, &l.q_proj,       &l.k_proj,    &l.v_proj,
          &l.o_proj,          &l.q_bias,       &l.k_bias,    &l.v_bias,
          &l.o_bias,          &l.q_norm,       &l.k_norm,    &l.post_attention_layernorm,
          &l.attn_out_norm,   &l.mlp_out_norm, &l.gate_proj, &l.up_proj,
          &l.down_proj,       &l.gate_bias,    &l.up_bias,   &l.down_bias}) {
      add(*t);
    }
  }
  // A MoE layer reads its router, the shared expert, and top_k of its experts a token.
  for (const LayerWeights& l : weights_.layers) {
    for (const Tensor* t : {&l.router, &l.shared_gate_proj, &l.shared_up_proj, &l.shared_down_proj,
                            &l.shared_expert_gate}) {
      add(*t);
    }
    for (size_t e = 0;
         e < l.expert_gate.size() && static_cast<int64_t>(e) < config_.num_experts_per_tok; ++e) {
      add(l.expert_gate[e]);
      add(l.expert_up[e]);
      add(l.expert_down[e]);
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

Tensor Decoder::scratch_i32(const std::string& slot, const Shape& shape) const {
  const int64_t need = shape_numel(shape);
  Tensor& buf = scratch_i32_[slot];
  if (!buf.defined() || buf.numel() < need) buf = Tensor::empty({need}, DType::i32, device_);
  return buf.narrow(0, 0, need).view(shape);
}

ops::MoeScratch Decoder::moe_scratch(int64_t n) const {
  ops::MoeScratch s;
  const LayerWeights* L = first_moe_layer();
  if (!L) return s;
  const int64_t h = config_.hidden_size, experts = L->router.size(0);
  s.logits = scratch("moe_logits", {n, experts});
  s.sum = scratch("moe_sum", {n, h});
  if (L->shared_gate_proj.defined()) {
    const int64_t width = L->shared_gate_proj.size(0);
    s.shared_gate = scratch("moe_shared_gate", {n, width});
    s.shared_up = scratch("moe_shared_up", {n, width});
    s.shared_y = scratch("moe_shared_y", {n, h});
    if (L->shared_expert_gate.defined()) s.shared_logit = scratch("moe_shared_logit", {n, 1});
  }
  if (moe_on_device(n)) {
    const int64_t top_k = config_.num_experts_per_tok, picks = n * top_k;
    s.rows = scratch("moe_rows", {picks, h});
    s.hidden = scratch("moe_hidden", {picks, L->expert_gate[0].size(0)});
    s.y = scratch("moe_y", {picks, h});
    s.plan = scratch_i32("moe_plan", {ops::moe_plan_words(n, experts, top_k)});
  }
  return s;
}

Tensor Decoder::scratch_f32(const std::string& slot, const Shape& shape) const {
  const int64_t need = shape_numel(shape);
  Tensor& buf = scratch_f32_[slot];
  if (!buf.defined() || buf.numel() < need) buf = Tensor::empty({need}, DType::f32, device_);
  return buf.narrow(0, 0, need).view(shape);
}

Tensor Decoder::upload_i32(const std::vector<int32_t>& v, const Shape& shape) const {
  Tensor host = Tensor::empty(shape, DType::i32);
  std::copy(v.begin(), v.end(), host.data<int32_t>());
  return host.to(device_);
}

void Decoder::check_step(const StepInput& step, const KvCache& cache) const {
  const ModelConfig& c = config_;
  const int64_t b = step.batch, s = step.seq, n = b * s, past = cache.length;
  if (step.device_ids.defined() &&
      (s != 1 || step.device_ids.dtype() != DType::i64 || step.device_ids.numel() != b ||
       step.device_ids.device() != device_ || !step.device_ids.is_contiguous())) {
    throw Error("decoder step: device ids must be i64 [batch] on " + device_.str() +
                " for a one-token step");
  }
  const int64_t host_ids = step.device_ids.defined() && step.ids.empty() ? 0 : n;
  if (static_cast<int64_t>(step.ids.size()) != host_ids ||
      static_cast<int64_t>(step.positions.size()) != n ||
      static_cast<int64_t>(step.key_mask.size()) != b * (past + s)) {
    throw Error("decoder step: inconsistent input sizes");
  }
  if (step.logits_from < 0 || step.logits_from >= std::max<int64_t>(s, 1) ||
      (step.logits_from > 0 && !step.all_logits)) {
    throw Error("decoder step: logits_from " + std::to_string(step.logits_from) +
                " must lie in [0, " + std::to_string(s) + ") and comes with all_logits");
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
}

bool Decoder::queues_steps(int64_t rows) const {
  // A MoE layer whose picks go through the host cannot be recorded.
  return device_.type != DeviceType::cpu && (config_.num_experts == 0 || moe_on_device(rows)) &&
         supports(ops::kMaskColumn, device_.type, DType::i32, DType::i32);
}

const LayerWeights* Decoder::first_moe_layer() const {
  for (const LayerWeights& L : weights_.layers) {
    if (L.router.defined() && !L.expert_gate.empty()) return &L;
  }
  return nullptr;
}

bool Decoder::moe_on_device(int64_t rows) const {
  const LayerWeights* L = first_moe_layer();
  return L && ops::moe_experts_on_device(device_.type, act_dtype_, L->expert_gate[0].dtype(), rows,
                                         L->router.size(0), config_.num_experts_per_tok,
                                         config_.hidden_size, L->expert_gate[0].size(0));
}

Tensor Decoder::forward(const StepInput& step, KvCache& cache) const {
  check_step(step, cache);
  follow_rope_length(step.positions);  // once, from the whole step's positions
  const int64_t b = step.batch, s = step.seq, n = b * s, past = cache.length;
  if (!step.hidden_states && !weights_.lm_head.defined()) {
    throw Error(
        "this checkpoint is a base model's (no lm_head.weight, tie_word_embeddings false): it "
        "gives hidden states (CausalLM::hidden_states, anvil embed), not logits");
  }
  if (s == 1 && !step.all_logits && !step.hidden_states && queues_steps(b)) {
    return forward_graph(step, cache);
  }
  StepTensors in;
  in.ids =
      step.device_ids.defined() ? step.device_ids : Tensor::from_i64(step.ids, {n}).to(device_);
  in.positions = upload_i32(step.positions, {n});
  in.key_mask = upload_i32(step.key_mask, {b, past + s});
  // Hidden states: every row's final-norm output, [n, hidden]; else the wanted rows' logits.
  const int64_t first_logit = step.all_logits ? step.logits_from : s - 1;
  const int64_t out_seq = step.hidden_states ? s : s - first_logit;
  const int64_t width = step.hidden_states ? config_.hidden_size : config_.vocab_size;
  Tensor out = scratch_f32(step.hidden_states ? "hidden_states" : "logits", {b * out_seq, width});
  run(in, b, s, past, first_logit, cache, out, step.hidden_states);
  cache.length = past + s;
  return out.view({b, out_seq, width});
}

std::shared_ptr<const ops::MoeTensors> Decoder::moe_tensors(const LayerWeights& l) const {
  if (!l.router.defined()) return nullptr;
  auto m = std::make_shared<ops::MoeTensors>();
  m->router = l.router;
  m->gate = l.expert_gate;
  m->up = l.expert_up;
  m->down = l.expert_down;
  m->top_k = config_.num_experts_per_tok;
  m->norm_topk = config_.norm_topk_prob;
  m->weights_in_act_dtype = config_.router_weights_in_act_dtype;
  m->shared_gate = l.shared_gate_proj;
  m->shared_up = l.shared_up_proj;
  m->shared_down = l.shared_down_proj;
  m->shared_expert_gate = l.shared_expert_gate;
  return m;
}

void Decoder::run(const StepTensors& in, int64_t b, int64_t s, int64_t past, int64_t first_logit,
                  KvCache& cache, const Tensor& logits, bool hidden_states) const {
  const ModelConfig& c = config_;
  const int64_t n = b * s;
  const int64_t h = c.hidden_size, hd = c.head_dim;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads;

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
  const float scale = c.attention_multiplier
                          ? static_cast<float>(*c.attention_multiplier)
                          : 1.0f / std::sqrt(static_cast<float>(
                                       c.query_pre_attn_scalar.value_or(static_cast<double>(hd))));

  ops::embedding(in.ids, weights_.embed_tokens, x, embedding_scale_);
  // Norms are fused into the products that read them and residual adds into the products that
  // feed them; where a device has no fused kernel, the ops run composed (normed, proj scratch).
  // Qwen3 normalises each head's q and k before RoPE; the others have no q/k norm.
  // The weights' part is built once; the caches are this step's, dropped after it so the
  // decoder holds no cache.
  if (layer_tensors_.size() != weights_.layers.size()) {
    layer_tensors_.clear();
    layer_tensors_.reserve(weights_.layers.size());
    for (size_t li = 0; li < weights_.layers.size(); ++li) {
      const LayerWeights& L = weights_.layers[li];
      const bool own_rope =
          sliding_inv_freq_.defined() && c.is_sliding_layer(static_cast<int64_t>(li));
      const bool no_rope = !c.layer_rotates(static_cast<int64_t>(li));
      layer_tensors_.push_back({.input_norm = L.input_layernorm,
                                .q = L.q_proj,
                                .k = L.k_proj,
                                .v = L.v_proj,
                                .q_bias = L.q_bias,
                                .k_bias = L.k_bias,
                                .v_bias = L.v_bias,
                                .q_norm = c.qk_norm ? L.q_norm : Tensor(),
                                .k_norm = c.qk_norm ? L.k_norm : Tensor(),
                                .o = L.o_proj,
                                .o_bias = L.o_bias,
                                .post_norm = L.post_attention_layernorm,
                                .gate = L.gate_proj,
                                .gate_bias = L.gate_bias,
                                .up = L.up_proj,
                                .up_bias = L.up_bias,
                                .down = L.down_proj,
                                .down_bias = L.down_bias,
                                .k_cache = Tensor(),
                                .v_cache = Tensor(),
                                .window = c.layer_window(static_cast<int64_t>(li)),
                                .attn_out_norm = L.attn_out_norm,
                                .mlp_out_norm = L.mlp_out_norm,
                                .inv_freq = no_rope    ? no_rope_inv_freq_
                                            : own_rope ? sliding_inv_freq_
                                                       : Tensor(),
                                .rope_scaling = own_rope && !no_rope ? sliding_rope_scaling_ : 1.0f,
                                .q_full_norm = c.qk_norm_full ? L.q_norm : Tensor(),
                                .k_full_norm = c.qk_norm_full ? L.k_norm : Tensor(),
                                .moe = moe_tensors(L)});
    }
  }
  for (size_t li = 0; li < layer_tensors_.size(); ++li) {
    layer_tensors_[li].k_cache = cache.keys[li];
    layer_tensors_[li].v_cache = cache.values[li];
  }
  ops::DecodeLayersArgs layers{.x = x,
                               .layers = layer_tensors_,
                               .batch = b,
                               .seq = s,
                               .heads = nh,
                               .kv_heads = nkv,
                               .head_dim = hd,
                               .eps = eps,
                               .scale = scale,
                               .positions = in.positions,
                               .inv_freq = inv_freq_,
                               .rope_scaling = rope_scaling_,
                               .key_mask = in.key_mask,
                               .past = past,
                               .past_on_device = in.past,
                               .impl = attention_,
                               .normed = normed,
                               .q = q,
                               .k = k,
                               .v = v,
                               .attn = attn,
                               .proj = proj,
                               .gate = gate,
                               .up = up,
                               .act = c.hidden_act == Activation::gelu_tanh
                                          ? ops::GluActivation::gelu_tanh
                                          : ops::GluActivation::silu,
                               .softcap = static_cast<float>(c.attn_logit_softcapping),
                               .residual_scale = static_cast<float>(c.residual_multiplier),
                               .moe = moe_scratch(n)};
  ops::decode_layers(layers);
  for (ops::DecoderLayerTensors& L : layer_tensors_) L.k_cache = L.v_cache = Tensor();

  if (hidden_states) {  // every row through the final norm, no head; `logits` takes them
    const Tensor normed_rows = act_dtype_ == DType::f32 ? logits : scratch("final_normed", {n, h});
    ops::rms_norm(x, weights_.norm, eps, normed_rows);
    if (act_dtype_ != DType::f32) ops::cast(normed_rows, logits);
    return;
  }
  // Only the rows whose logits are wanted go through the final norm and the (large) head.
  Tensor rows = x;
  const int64_t kept = s - first_logit;
  const int64_t m = b * kept;
  if (first_logit > 0) {
    rows = scratch("logit_rows", {m, h});
    for (int64_t r = 0; r < b; ++r) {  // contiguous row copies stay on the device
      rows.narrow(0, r * kept, kept).copy_from(x.narrow(0, r * s + first_logit, kept));
    }
  }
  Tensor final_normed = scratch("final_normed", {m, h});
  const Tensor head = act_dtype_ == DType::f32 ? logits : scratch("head", {m, c.vocab_size});
  ops::linear_group(
      {rows, {weights_.lm_head}, {Tensor()}, {head}, 1, weights_.norm, eps, final_normed});
  // Granite: logits / logits_scaling in the activations' dtype, as its head computes them.
  if (c.logits_scaling != 1.0) ops::scale(head, static_cast<float>(1.0 / c.logits_scaling));
  if (act_dtype_ != DType::f32) ops::cast(head, logits);
  if (c.final_logit_softcapping > 0) {  // Gemma 2, on the float32 logits as transformers does
    ops::softcap(logits, static_cast<float>(c.final_logit_softcapping));
  }
}

// The recorded one-token step of one cache: inputs in one device buffer (ids, positions, the
// past length, the new mask column), a mask of the cache's width, float32 logits, the graph.
struct Decoder::GraphState {
  Tensor inputs;  // bytes on the device
  StepTensors in;
  Tensor mask_column;
  Tensor logits;
  std::vector<int32_t> mask_mirror;  // what the device mask holds, [batch, capacity]
  std::vector<uint8_t> staging;
  std::unique_ptr<StepGraph> graph;
  bool captured = false;
  // The scratch buffers the graph writes, kept alive should a later, larger step replace them.
  std::map<std::string, Tensor> graph_scratch;
};

Tensor Decoder::forward_graph(const StepInput& step, KvCache& cache) const {
  const int64_t b = step.batch, past = cache.length, cap = cache.capacity;
  auto state = std::static_pointer_cast<GraphState>(cache.step_graph);
  if (!state) {
    state = std::make_shared<GraphState>();
    const int64_t ids_bytes = b * 8, i32_bytes = (2 * b + 1) * 4;
    state->inputs = Tensor::empty({ids_bytes + i32_bytes}, DType::u8, device_);
    auto* base = static_cast<uint8_t*>(state->inputs.raw());
    const auto owner = std::shared_ptr<void>(state->inputs.raw(), [keep = state->inputs](void*) {});
    state->in.ids = Tensor::from_blob(base, {b}, DType::i64, device_, owner);
    state->in.positions = Tensor::from_blob(base + ids_bytes, {b}, DType::i32, device_, owner);
    state->in.past = Tensor::from_blob(base + ids_bytes + b * 4, {1}, DType::i32, device_, owner);
    state->mask_column =
        Tensor::from_blob(base + ids_bytes + b * 4 + 4, {b}, DType::i32, device_, owner);
    state->in.key_mask = Tensor::zeros({b, cap}, DType::i32, device_);
    state->mask_mirror.assign(static_cast<size_t>(b * cap), 0);
    state->logits = Tensor::empty({b, config_.vocab_size}, DType::f32, device_);
    state->staging.resize(static_cast<size_t>(ids_bytes + i32_bytes));
    cache.step_graph = state;
  }
  // The mask's earlier columns normally stay as they were; when they do not, upload them all.
  bool prefix_changed = false;
  for (int64_t r = 0; r < b && !prefix_changed; ++r) {
    prefix_changed = !std::equal(step.key_mask.begin() + r * (past + 1),
                                 step.key_mask.begin() + r * (past + 1) + past,
                                 state->mask_mirror.begin() + r * cap);
  }
  for (int64_t r = 0; r < b; ++r) {
    std::copy(step.key_mask.begin() + r * (past + 1), step.key_mask.begin() + (r + 1) * (past + 1),
              state->mask_mirror.begin() + r * cap);
  }
  if (prefix_changed) {
    Tensor host = Tensor::empty({b, cap}, DType::i32);
    std::copy(state->mask_mirror.begin(), state->mask_mirror.end(), host.data<int32_t>());
    state->in.key_mask.copy_from(host);
  }
  uint8_t* st = state->staging.data();
  if (!step.device_ids.defined()) std::memcpy(st, step.ids.data(), static_cast<size_t>(b) * 8);
  std::memcpy(st + b * 8, step.positions.data(), static_cast<size_t>(b) * 4);
  const auto past32 = static_cast<int32_t>(past);
  std::memcpy(st + b * 12, &past32, 4);
  for (int64_t r = 0; r < b; ++r) {
    std::memcpy(st + b * 12 + 4 + r * 4, &step.key_mask[r * (past + 1) + past], 4);
  }
  // Queued behind the previous step: the host goes on to queue this one without waiting.
  Backend& backend = backend_for(device_);
  if (step.device_ids.defined()) {
    const size_t ids_bytes = static_cast<size_t>(b) * 8;
    backend.copy_on_device(state->inputs.raw(), step.device_ids.raw(), ids_bytes, device_);
    backend.copy_from_host_queued(static_cast<uint8_t*>(state->inputs.raw()) + ids_bytes,
                                  st + ids_bytes, state->staging.size() - ids_bytes, device_);
  } else {
    backend.copy_from_host_queued(state->inputs.raw(), st, state->staging.size(), device_);
  }

  const auto body = [&, state] {
    ops::write_mask_column(state->in.key_mask, state->mask_column, state->in.past);
    run(state->in, b, 1, past, 0, cache, state->logits);
  };
  if (state->graph) {
    state->graph->replay();
  } else {
    body();  // the first step runs eagerly: it sizes every scratch buffer the graph will use
    if (!state->captured) {
      state->captured = true;
      state->graph = backend_for(device_).capture(device_, body);
      state->graph_scratch = scratch_;
      for (const auto& [slot, t] : scratch_i32_) state->graph_scratch["i32/" + slot] = t;
    }
  }
  cache.length = past + 1;
  return state->logits.view({b, 1, config_.vocab_size});
}

}  // namespace anvil
