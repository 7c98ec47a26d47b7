// Op front ends: validate shapes, dtypes and devices once, then call the registered kernel.
#include "ops/ops.h"

#include <cmath>
#include <string>

#include "anvil/error.h"
#include "core/kernels.h"
#include "ops/op_checks.h"
#include "ops/op_profile.h"

namespace anvil::ops {

void embedding(const Tensor& ids, const Tensor& table, const Tensor& out, float scale) {
  OpTimer timer([&] { return "embedding " + shape_str(ids.shape()); });
  expect_rank(kEmbedding, "ids", ids, 1);
  expect_rank(kEmbedding, "table", table, 2);
  expect_dtype(kEmbedding, "ids", ids, DType::i64);
  expect_shape(kEmbedding, "out", out, {ids.size(0), table.size(1)});
  expect_contiguous(kEmbedding, "table", table);
  expect_contiguous(kEmbedding, "out", out);
  expect_same_device(kEmbedding, table, ids);
  expect_same_device(kEmbedding, table, out);
  if (!std::isfinite(scale)) fail(kEmbedding, "scale " + std::to_string(scale) + " is not finite");
  get_kernel<EmbeddingArgs>(kEmbedding, out.device().type, out.dtype(),
                            table.dtype())({ids, table, out, scale});
}

void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out) {
  OpTimer timer([&] { return "rms_norm " + shape_str(x.shape()); });
  expect_rank(kRmsNorm, "x", x, 2);
  expect_shape(kRmsNorm, "weight", weight, {x.size(1)});
  expect_shape(kRmsNorm, "out", out, x.shape());
  expect_dtype(kRmsNorm, "out", out, x.dtype());
  expect_contiguous(kRmsNorm, "x", x);
  expect_contiguous(kRmsNorm, "out", out);
  expect_same_device(kRmsNorm, x, weight);
  expect_same_device(kRmsNorm, x, out);
  get_kernel<RmsNormArgs>(kRmsNorm, x.device().type, x.dtype(),
                          weight.dtype())({x, weight, out, eps});
}

void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out) {
  OpTimer timer(
      [&] { return "linear " + shape_str(x.shape()) + " x " + shape_str(weight.shape()); });
  expect_rank(kLinear, "x", x, 2);
  expect_rank(kLinear, "weight", weight, 2);
  if (weight.size(1) != x.size(1)) {
    fail(kLinear, "x has shape " + shape_str(x.shape()) + " but weight has shape " +
                      shape_str(weight.shape()));
  }
  if (bias.defined()) {
    expect_shape(kLinear, "bias", bias, {weight.size(0)});
    if (!is_floating(bias.dtype())) fail(kLinear, "bias must be floating point");
  }
  expect_shape(kLinear, "out", out, {x.size(0), weight.size(0)});
  expect_dtype(kLinear, "out", out, x.dtype());
  expect_contiguous(kLinear, "x", x);
  expect_contiguous(kLinear, "weight", weight);
  expect_contiguous(kLinear, "out", out);
  expect_same_device(kLinear, x, weight);
  expect_same_device(kLinear, x, bias);
  expect_same_device(kLinear, x, out);
  get_kernel<LinearArgs>(kLinear, x.device().type, x.dtype(),
                         weight.dtype())({x, weight, bias, out});
}

void rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq, float scaling) {
  expect_rank(kRope, "x", x, 3);
  if (x.size(2) % 2 != 0) fail(kRope, "head_dim must be even, got " + std::to_string(x.size(2)));
  expect_shape(kRope, "positions", positions, {x.size(0)});
  expect_dtype(kRope, "positions", positions, DType::i32);
  expect_shape(kRope, "inv_freq", inv_freq, {x.size(2) / 2});
  expect_dtype(kRope, "inv_freq", inv_freq, DType::f32);
  expect_contiguous(kRope, "x", x);
  expect_same_device(kRope, x, positions);
  expect_same_device(kRope, x, inv_freq);
  get_kernel<RopeArgs>(kRope, x.device().type, x.dtype(),
                       x.dtype())({x, positions, inv_freq, scaling});
}

void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out, GluActivation act) {
  OpTimer timer([&] { return "swiglu " + shape_str(gate.shape()); });
  expect_shape(kSwiglu, "up", up, gate.shape());
  expect_shape(kSwiglu, "out", out, gate.shape());
  expect_dtype(kSwiglu, "up", up, gate.dtype());
  expect_dtype(kSwiglu, "out", out, gate.dtype());
  for (const Tensor* t : {&gate, &up, &out}) expect_contiguous(kSwiglu, "operand", *t);
  expect_same_device(kSwiglu, gate, up);
  expect_same_device(kSwiglu, gate, out);
  if (act == GluActivation::gelu_tanh &&
      !find_kernel_raw(kGluGeluTanh, gate.device().type, gate.dtype(), gate.dtype())) {
    fail(kSwiglu, "the " + std::string(device_type_name(gate.device().type)) +
                      " backend has no GELU-gated (GeGLU) kernel for " +
                      std::string(dtype_name(gate.dtype())) + " activations");
  }
  get_kernel<SwigluArgs>(kSwiglu, gate.device().type, gate.dtype(),
                         gate.dtype())({gate, up, out, act});
}

void softcap(const Tensor& x, float cap) {
  OpTimer timer([&] { return "softcap " + shape_str(x.shape()); });
  if (!(cap > 0) || !std::isfinite(cap)) fail(kSoftcap, "cap must be positive and finite");
  expect_dtype(kSoftcap, "x", x, DType::f32);
  expect_contiguous(kSoftcap, "x", x);
  get_kernel<SoftcapArgs>(kSoftcap, x.device().type, DType::f32, DType::f32)({x, cap});
}

void scale(const Tensor& x, float factor) {
  OpTimer timer([&] { return "scale " + shape_str(x.shape()); });
  if (!std::isfinite(factor)) fail(kScale, "factor must be finite");
  expect_contiguous(kScale, "x", x);
  get_kernel<ScaleArgs>(kScale, x.device().type, x.dtype(), x.dtype())({x, factor});
}

void add(const Tensor& a, const Tensor& b, const Tensor& out) {
  expect_shape(kAdd, "b", b, a.shape());
  expect_shape(kAdd, "out", out, a.shape());
  expect_dtype(kAdd, "b", b, a.dtype());
  expect_dtype(kAdd, "out", out, a.dtype());
  for (const Tensor* t : {&a, &b, &out}) expect_contiguous(kAdd, "operand", *t);
  expect_same_device(kAdd, a, b);
  expect_same_device(kAdd, a, out);
  get_kernel<AddArgs>(kAdd, a.device().type, a.dtype(), a.dtype())({a, b, out});
}

// A position kept in device memory for graph replay. On the CPU (no graphs) it must agree with
// the host value, which is what the CPU kernels use.
static void expect_device_scalar(const char* op, const char* name, const Tensor& t,
                                 const Tensor& like, int64_t host_value = -1) {
  if (!t.defined()) return;
  expect_shape(op, name, t, {1});
  expect_dtype(op, name, t, DType::i32);
  expect_same_device(op, like, t);
  if (t.device().type == DeviceType::cpu && host_value >= 0 && *t.data<int32_t>() != host_value) {
    fail(op, std::string(name) + " holds " + std::to_string(*t.data<int32_t>()) + ", expected " +
                 std::to_string(host_value));
  }
}

void store_kv(const Tensor& src, const Tensor& cache, int64_t start,
              const Tensor& start_on_device) {
  expect_rank(kStoreKv, "src", src, 4);
  expect_rank(kStoreKv, "cache", cache, 4);
  if (src.size(0) != cache.size(0) || src.size(2) != cache.size(1) ||
      src.size(3) != cache.size(3)) {
    fail(kStoreKv,
         "src " + shape_str(src.shape()) + " does not fit cache " + shape_str(cache.shape()));
  }
  if (start < 0 || start + src.size(1) > cache.size(2)) {
    fail(kStoreKv, "positions [" + std::to_string(start) + ", " +
                       std::to_string(start + src.size(1)) + ") exceed the cache capacity " +
                       std::to_string(cache.size(2)));
  }
  expect_cache_dtype(kStoreKv, cache, src.dtype());
  expect_contiguous(kStoreKv, "src", src);
  expect_contiguous(kStoreKv, "cache", cache);
  expect_same_device(kStoreKv, src, cache);
  expect_device_scalar(kStoreKv, "start_on_device", start_on_device, src, start);
  get_kernel<StoreKvArgs>(kStoreKv, src.device().type, src.dtype(),
                          cache.dtype())({src, cache, start, start_on_device});
}

namespace {

void check_attention(const AttentionArgs& a) {
  expect_rank(kAttention, "q", a.q, 4);
  expect_rank(kAttention, "k_cache", a.k_cache, 4);
  const int64_t batch = a.q.size(0), seq = a.q.size(1), heads = a.q.size(2), dim = a.q.size(3);
  const int64_t kv_heads = a.k_cache.size(1), total = a.past + seq;
  if (a.k_cache.size(0) != batch || a.k_cache.size(3) != dim) {
    fail(kAttention,
         "k_cache " + shape_str(a.k_cache.shape()) + " does not match q " + shape_str(a.q.shape()));
  }
  expect_shape(kAttention, "v_cache", a.v_cache, a.k_cache.shape());
  if (kv_heads <= 0 || heads % kv_heads != 0) {
    fail(kAttention, std::to_string(heads) + " query heads are not a multiple of " +
                         std::to_string(kv_heads) + " key/value heads");
  }
  if (a.window < 0) fail(kAttention, "window " + std::to_string(a.window) + " is negative");
  if (a.softcap < 0 || !std::isfinite(a.softcap)) {
    fail(kAttention, "softcap " + std::to_string(a.softcap) + " must be 0 (none) or positive");
  }
  if (a.softcap > 0 &&
      !find_kernel_raw(kAttentionSoftcap, a.q.device().type, a.q.dtype(), a.k_cache.dtype())) {
    fail(kAttention, "the " + std::string(device_type_name(a.q.device().type)) +
                         " backend has no attention with logit softcapping (Gemma 2) over " +
                         std::string(dtype_name(a.k_cache.dtype())) + " caches");
  }
  if (a.past < 0 || total > a.k_cache.size(2)) {
    fail(kAttention, "past " + std::to_string(a.past) + " + " + std::to_string(seq) +
                         " new tokens exceed the cache capacity " +
                         std::to_string(a.k_cache.size(2)));
  }
  // Graph replay (device backends only) keeps one mask of the cache's width.
  if (a.past_on_device.defined() && a.q.device().type != DeviceType::cpu) {
    expect_device_scalar(kAttention, "past_on_device", a.past_on_device, a.q, a.past);
    expect_rank(kAttention, "key_mask", a.key_mask, 2);
    if (a.key_mask.size(0) != batch || a.key_mask.size(1) < total) {
      fail(kAttention, "key_mask has shape " + shape_str(a.key_mask.shape()) + ", expected [" +
                           std::to_string(batch) + ", >= " + std::to_string(total) + "]");
    }
  } else {
    expect_device_scalar(kAttention, "past_on_device", a.past_on_device, a.q, a.past);
    expect_shape(kAttention, "key_mask", a.key_mask, {batch, total});
  }
  expect_dtype(kAttention, "key_mask", a.key_mask, DType::i32);
  expect_shape(kAttention, "out", a.out, a.q.shape());
  expect_dtype(kAttention, "out", a.out, a.q.dtype());
  expect_cache_dtype(kAttention, a.k_cache, a.q.dtype());
  expect_dtype(kAttention, "v_cache", a.v_cache, a.k_cache.dtype());
  for (const Tensor* t : {&a.q, &a.k_cache, &a.v_cache, &a.key_mask, &a.out}) {
    expect_contiguous(kAttention, "operand", *t);
    expect_same_device(kAttention, a.q, *t);
  }
}

}  // namespace

void attention(const AttentionArgs& a) {
  check_attention(a);
  get_kernel<AttentionArgs>(kAttention, a.q.device().type, a.q.dtype(), a.k_cache.dtype())(a);
}

void cast(const Tensor& src, const Tensor& out) {
  expect_shape(kCast, "out", out, src.shape());
  if (!is_floating(src.dtype()) || !is_floating(out.dtype())) {
    fail(kCast, "only floating-point tensors are converted on a device");
  }
  expect_contiguous(kCast, "src", src);
  expect_contiguous(kCast, "out", out);
  expect_same_device(kCast, src, out);
  get_kernel<CastArgs>(kCast, src.device().type, out.dtype(), src.dtype())({src, out});
}

void argmax(const Tensor& x, const Tensor& out) {
  OpTimer timer([&] { return "argmax " + shape_str(x.shape()); });
  expect_rank(kArgmax, "x", x, 2);
  expect_shape(kArgmax, "out", out, {x.size(0)});
  expect_dtype(kArgmax, "out", out, DType::i64);
  expect_contiguous(kArgmax, "x", x);
  expect_same_device(kArgmax, x, out);
  if (x.size(1) == 0) fail(kArgmax, "rows are empty");
  get_kernel<ArgmaxArgs>(kArgmax, x.device().type, x.dtype(), x.dtype())({x, out});
}

void token_nll(const Tensor& logits, const Tensor& targets, const Tensor& out) {
  OpTimer timer([&] { return "token_nll " + shape_str(logits.shape()); });
  expect_rank(kTokenNll, "logits", logits, 2);
  expect_dtype(kTokenNll, "logits", logits, DType::f32);
  expect_shape(kTokenNll, "targets", targets, {logits.size(0)});
  expect_dtype(kTokenNll, "targets", targets, DType::i64);
  expect_shape(kTokenNll, "out", out, {logits.size(0)});
  expect_dtype(kTokenNll, "out", out, DType::f32);
  for (const Tensor* t : {&logits, &targets, &out}) {
    expect_contiguous(kTokenNll, "operand", *t);
    expect_same_device(kTokenNll, logits, *t);
  }
  if (logits.size(1) == 0) fail(kTokenNll, "rows are empty");
  if (auto k = find_kernel_raw(kTokenNll, logits.device().type, DType::f32, DType::f32)) {
    reinterpret_cast<void (*)(const TokenNllArgs&)>(k)({logits, targets, out});
    return;
  }
  // No kernel on this device: the rows go to the host, the losses come back.
  const Tensor host_out = Tensor::empty(out.shape(), DType::f32);
  get_kernel<TokenNllArgs>(kTokenNll, DeviceType::cpu, DType::f32, DType::f32)(
      {logits.to(Device::cpu()), targets.to(Device::cpu()), host_out});
  Tensor dst = out;  // a handle sharing out's storage
  dst.copy_from(host_out);
}

void token_kl(const Tensor& reference, const Tensor& logits, const Tensor& kl,
              const Tensor& same_top) {
  OpTimer timer([&] { return "token_kl " + shape_str(logits.shape()); });
  expect_rank(kTokenKl, "logits", logits, 2);
  expect_dtype(kTokenKl, "logits", logits, DType::f32);
  expect_shape(kTokenKl, "reference", reference, logits.shape());
  expect_dtype(kTokenKl, "reference", reference, DType::f32);
  expect_shape(kTokenKl, "kl", kl, {logits.size(0)});
  expect_dtype(kTokenKl, "kl", kl, DType::f32);
  expect_shape(kTokenKl, "same_top", same_top, {logits.size(0)});
  expect_dtype(kTokenKl, "same_top", same_top, DType::i64);
  for (const Tensor* t : {&reference, &logits, &kl, &same_top}) {
    expect_contiguous(kTokenKl, "operand", *t);
    expect_same_device(kTokenKl, logits, *t);
  }
  if (logits.size(1) == 0) fail(kTokenKl, "rows are empty");
  if (auto k = find_kernel_raw(kTokenKl, logits.device().type, DType::f32, DType::f32)) {
    reinterpret_cast<void (*)(const TokenKlArgs&)>(k)({reference, logits, kl, same_top});
    return;
  }
  // No kernel on this device: the rows go to the host, the results come back.
  const Tensor host_kl = Tensor::empty(kl.shape(), DType::f32);
  const Tensor host_top = Tensor::empty(same_top.shape(), DType::i64);
  get_kernel<TokenKlArgs>(kTokenKl, DeviceType::cpu, DType::f32, DType::f32)(
      {reference.to(Device::cpu()), logits.to(Device::cpu()), host_kl, host_top});
  Tensor kl_dst = kl, top_dst = same_top;  // handles sharing the outputs' storage
  kl_dst.copy_from(host_kl);
  top_dst.copy_from(host_top);
}

void top_k(const Tensor& x, const Tensor& values, const Tensor& indices) {
  OpTimer timer(
      [&] { return "top_k " + shape_str(x.shape()) + " K " + shape_str(values.shape()); });
  expect_rank(kTopK, "x", x, 2);
  expect_dtype(kTopK, "x", x, DType::f32);
  expect_rank(kTopK, "values", values, 2);
  const int64_t k = values.size(1);
  if (k < 1 || k > x.size(1)) {
    fail(kTopK, "K = " + std::to_string(k) + " must lie in [1, " + std::to_string(x.size(1)) + "]");
  }
  expect_shape(kTopK, "values", values, {x.size(0), k});
  expect_dtype(kTopK, "values", values, DType::f32);
  expect_shape(kTopK, "indices", indices, {x.size(0), k});
  expect_dtype(kTopK, "indices", indices, DType::i64);
  for (const Tensor* t : {&x, &values, &indices}) {
    expect_contiguous(kTopK, "operand", *t);
    expect_same_device(kTopK, x, *t);
  }
  get_kernel<TopKArgs>(kTopK, x.device().type, DType::f32, DType::f32)({x, values, indices});
}

void repetition_penalty(const Tensor& logits, const Tensor& ids, float penalty) {
  OpTimer timer([&] { return "repetition_penalty " + shape_str(ids.shape()); });
  expect_rank(kRepetitionPenalty, "logits", logits, 2);
  expect_dtype(kRepetitionPenalty, "logits", logits, DType::f32);
  expect_rank(kRepetitionPenalty, "ids", ids, 2);
  expect_dtype(kRepetitionPenalty, "ids", ids, DType::i64);
  if (ids.size(0) != logits.size(0)) {
    fail(kRepetitionPenalty, "ids has " + std::to_string(ids.size(0)) + " rows, logits " +
                                 std::to_string(logits.size(0)));
  }
  if (!(penalty > 0.0f) || !std::isfinite(penalty)) {
    fail(kRepetitionPenalty, "penalty must be a positive number, got " + std::to_string(penalty));
  }
  expect_contiguous(kRepetitionPenalty, "logits", logits);
  expect_contiguous(kRepetitionPenalty, "ids", ids);
  expect_same_device(kRepetitionPenalty, logits, ids);
  get_kernel<RepetitionPenaltyArgs>(kRepetitionPenalty, logits.device().type, DType::f32,
                                    DType::f32)({logits, ids, penalty});
}

void sample_candidates(const Tensor& values, const Tensor& indices, const Tensor& uniforms,
                       float temperature, int64_t top_k, float top_p, float min_p,
                       const Tensor& out, const Tensor& decided) {
  OpTimer timer([&] { return "sample_candidates " + shape_str(values.shape()); });
  expect_rank(kSampleCandidates, "values", values, 2);
  expect_dtype(kSampleCandidates, "values", values, DType::f32);
  expect_shape(kSampleCandidates, "indices", indices, values.shape());
  expect_dtype(kSampleCandidates, "indices", indices, DType::i64);
  expect_shape(kSampleCandidates, "uniforms", uniforms, {values.size(0)});
  expect_dtype(kSampleCandidates, "uniforms", uniforms, DType::f64);
  expect_shape(kSampleCandidates, "out", out, {values.size(0)});
  expect_dtype(kSampleCandidates, "out", out, DType::i64);
  if (top_k < 1 || values.size(1) < top_k + 1 || values.size(1) > 128) {
    fail(kSampleCandidates, "needs top_k >= 1 and top_k + 1 to 128 candidates a row, got top_k " +
                                std::to_string(top_k) + " and " + std::to_string(values.size(1)));
  }
  if (!(temperature > 0.0f) || !std::isfinite(temperature) || !(top_p > 0.0f && top_p <= 1.0f) ||
      !(min_p >= 0.0f && min_p <= 1.0f)) {
    fail(kSampleCandidates, "temperature must be positive, top_p in (0, 1] and min_p in [0, 1]");
  }
  if (decided.defined()) {
    expect_shape(kSampleCandidates, "decided", decided, {values.size(0)});
    expect_dtype(kSampleCandidates, "decided", decided, DType::i64);
  }
  for (const Tensor* t : {&values, &indices, &uniforms, &out, &decided}) {
    if (!t->defined()) continue;
    expect_contiguous(kSampleCandidates, "operand", *t);
    expect_same_device(kSampleCandidates, values, *t);
  }
  get_kernel<SampleCandidatesArgs>(kSampleCandidates, values.device().type, DType::f32, DType::f32)(
      {values, indices, uniforms, out, temperature, top_k, top_p, min_p, decided});
}

void write_mask_column(const Tensor& mask, const Tensor& values, const Tensor& index) {
  expect_rank(kMaskColumn, "mask", mask, 2);
  expect_dtype(kMaskColumn, "mask", mask, DType::i32);
  expect_shape(kMaskColumn, "values", values, {mask.size(0)});
  expect_dtype(kMaskColumn, "values", values, DType::i32);
  expect_device_scalar(kMaskColumn, "index", index, mask);
  expect_contiguous(kMaskColumn, "mask", mask);
  expect_same_device(kMaskColumn, mask, values);
  get_kernel<MaskColumnArgs>(kMaskColumn, mask.device().type, DType::i32,
                             DType::i32)({mask, values, index});
}

void rms_norm_add(const Tensor& y, const Tensor& weight, float eps, const Tensor& residual) {
  expect_shape(kRmsNormAdd, "residual", residual, y.shape());
  expect_dtype(kRmsNormAdd, "residual", residual, y.dtype());
  expect_contiguous(kRmsNormAdd, "residual", residual);
  expect_same_device(kRmsNormAdd, y, residual);
  auto k = find_kernel_raw(kRmsNormAdd, y.device().type, y.dtype(), weight.dtype());
  if (!k) {
    rms_norm(y, weight, eps, y);
    add(residual, y, residual);
    return;
  }
  OpTimer timer([&] { return "rms_norm_add " + shape_str(y.shape()); });
  expect_rank(kRmsNormAdd, "y", y, 2);
  expect_shape(kRmsNormAdd, "weight", weight, {y.size(1)});
  expect_contiguous(kRmsNormAdd, "y", y);
  expect_same_device(kRmsNormAdd, y, weight);
  reinterpret_cast<void (*)(const RmsNormAddArgs&)>(k)({y, weight, residual, eps});
}

void add_rms_norm(const Tensor& x, const Tensor& delta, const Tensor& weight, float eps,
                  const Tensor& out) {
  expect_shape(kAddRmsNorm, "delta", delta, x.shape());
  expect_dtype(kAddRmsNorm, "delta", delta, x.dtype());
  expect_contiguous(kAddRmsNorm, "delta", delta);
  expect_same_device(kAddRmsNorm, x, delta);
  if (auto k = find_kernel_raw(kAddRmsNorm, x.device().type, x.dtype(), weight.dtype())) {
    expect_rank(kAddRmsNorm, "x", x, 2);
    expect_shape(kAddRmsNorm, "weight", weight, {x.size(1)});
    expect_shape(kAddRmsNorm, "out", out, x.shape());
    expect_dtype(kAddRmsNorm, "out", out, x.dtype());
    expect_contiguous(kAddRmsNorm, "x", x);
    expect_contiguous(kAddRmsNorm, "out", out);
    expect_same_device(kAddRmsNorm, x, weight);
    expect_same_device(kAddRmsNorm, x, out);
    reinterpret_cast<void (*)(const AddRmsNormArgs&)>(k)({x, delta, weight, out, eps});
    return;
  }
  add(x, delta, x);
  rms_norm(x, weight, eps, out);
}

// The input norm of a fused product: fused only when its weight has the activations' dtype.
// A fused kernel takes the norm weight, and biases, stored as the activations or as the weights
// (a device with float32 activations and bf16 weights keeps its norms in bf16).
static bool small_operand_fusable(const Tensor& t, const Tensor& x, DType weights) {
  return !t.defined() || t.dtype() == x.dtype() || t.dtype() == weights;
}

static bool norm_fusable(const Tensor& x, const Tensor& norm_weight, const Tensor& normed,
                         DType weights) {
  if (!norm_weight.defined()) return true;
  expect_shape("rms_norm", "weight", norm_weight, {x.size(1)});
  expect_shape("rms_norm", "normed", normed, x.shape());
  return small_operand_fusable(norm_weight, x, weights);
}

void composed_linear_group(const LinearGroupArgs& a) {
  const Tensor& in = a.norm_weight.defined() ? a.normed : a.x;
  if (a.norm_weight.defined()) rms_norm(a.x, a.norm_weight, a.eps, a.normed);
  for (int i = 0; i < a.count; ++i) linear(in, a.weights[i], a.biases[i], a.outs[i]);
}

void composed_linear_swiglu(const LinearSwigluArgs& a) {
  const Tensor& in = a.norm_weight.defined() ? a.normed : a.x;
  if (a.norm_weight.defined()) rms_norm(a.x, a.norm_weight, a.eps, a.normed);
  linear(in, a.gate, a.gate_bias, a.out);
  linear(in, a.up, a.up_bias, a.scratch);
  swiglu(a.out, a.scratch, a.out, a.act);
}

void linear_group(const LinearGroupArgs& a) {
  OpTimer timer([&] {
    return "linear_group " + shape_str(a.x.shape()) + " x " + shape_str(a.weights[0].shape());
  });
  if (a.count < 1 || a.count > 3) fail(kLinearGroup, "between one and three products");
  const Tensor& x = a.x;
  const DType wt = a.weights[0].dtype();
  bool fused = norm_fusable(x, a.norm_weight, a.normed, wt);
  for (int i = 0; i < a.count; ++i) {
    fused = fused && a.weights[i].dtype() == wt && small_operand_fusable(a.biases[i], x, wt);
  }
  auto k = fused ? find_kernel_raw(kLinearGroup, x.device().type, x.dtype(), a.weights[0].dtype())
                 : nullptr;
  if (!k) {
    composed_linear_group(a);
    return;
  }
  expect_rank(kLinearGroup, "x", x, 2);
  expect_contiguous(kLinearGroup, "x", x);
  for (int i = 0; i < a.count; ++i) {
    expect_rank(kLinearGroup, "weight", a.weights[i], 2);
    if (a.weights[i].size(1) != x.size(1)) {
      fail(kLinearGroup, "x has shape " + shape_str(x.shape()) + " but a weight has shape " +
                             shape_str(a.weights[i].shape()));
    }
    if (a.biases[i].defined())
      expect_shape(kLinearGroup, "bias", a.biases[i], {a.weights[i].size(0)});
    expect_shape(kLinearGroup, "out", a.outs[i], {x.size(0), a.weights[i].size(0)});
    expect_dtype(kLinearGroup, "out", a.outs[i], x.dtype());
    expect_contiguous(kLinearGroup, "weight", a.weights[i]);
    expect_contiguous(kLinearGroup, "out", a.outs[i]);
    expect_same_device(kLinearGroup, x, a.weights[i]);
    expect_same_device(kLinearGroup, x, a.biases[i]);
    expect_same_device(kLinearGroup, x, a.outs[i]);
  }
  if (a.keep_normed && a.norm_weight.defined()) {
    expect_dtype(kLinearGroup, "normed", a.normed, x.dtype());
    expect_contiguous(kLinearGroup, "normed", a.normed);
    expect_same_device(kLinearGroup, x, a.normed);
  }
  reinterpret_cast<void (*)(const LinearGroupArgs&)>(k)(a);
}

void linear_swiglu(const LinearSwigluArgs& a) {
  OpTimer timer([&] {
    return "linear_swiglu " + shape_str(a.x.shape()) + " x " + shape_str(a.gate.shape());
  });
  const DType wt = a.gate.dtype();
  const bool same = norm_fusable(a.x, a.norm_weight, a.normed, wt) && a.up.dtype() == wt &&
                    small_operand_fusable(a.gate_bias, a.x, wt) &&
                    small_operand_fusable(a.up_bias, a.x, wt);
  const char* name = a.act == GluActivation::silu ? kLinearSwiglu : kLinearSwigluGeluTanh;
  auto k = same ? find_kernel_raw(name, a.x.device().type, a.x.dtype(), a.gate.dtype()) : nullptr;
  if (!k) {
    composed_linear_swiglu(a);
    return;
  }
  expect_rank(kLinearSwiglu, "x", a.x, 2);
  expect_shape(kLinearSwiglu, "up", a.up, a.gate.shape());
  if (a.gate.dim() != 2 || a.gate.size(1) != a.x.size(1)) {
    fail(kLinearSwiglu, "x has shape " + shape_str(a.x.shape()) + " but gate has shape " +
                            shape_str(a.gate.shape()));
  }
  expect_shape(kLinearSwiglu, "out", a.out, {a.x.size(0), a.gate.size(0)});
  expect_shape(kLinearSwiglu, "scratch", a.scratch, a.out.shape());
  for (const Tensor* t : {&a.x, &a.gate, &a.up, &a.out, &a.scratch}) {
    expect_contiguous(kLinearSwiglu, "operand", *t);
    expect_same_device(kLinearSwiglu, a.x, *t);
  }
  for (const Tensor* t : {&a.gate_bias, &a.up_bias}) {
    if (t->defined()) expect_shape(kLinearSwiglu, "bias", *t, {a.gate.size(0)});
    expect_same_device(kLinearSwiglu, a.x, *t);
  }
  reinterpret_cast<void (*)(const LinearSwigluArgs&)>(k)(a);
}

void linear_add(const LinearAddArgs& a) {
  OpTimer timer(
      [&] { return "linear_add " + shape_str(a.x.shape()) + " x " + shape_str(a.weight.shape()); });
  const bool same =
      (!a.bias.defined() || a.bias.dtype() == a.x.dtype()) && a.residual.dtype() == a.x.dtype();
  const char* name = a.scale == 1.0f ? kLinearAdd : kLinearScaleAdd;
  auto k = same && !a.out_norm.defined()
               ? find_kernel_raw(name, a.x.device().type, a.x.dtype(), a.weight.dtype())
               : nullptr;
  if (!k) {
    linear(a.x, a.weight, a.bias, a.scratch);
    if (a.scale != 1.0f) {
      if (a.out_norm.defined()) rms_norm(a.scratch, a.out_norm, a.eps, a.scratch);
      scale(a.scratch, a.scale);
      add(a.residual, a.scratch, a.residual);
    } else if (a.out_norm.defined()) {
      rms_norm_add(a.scratch, a.out_norm, a.eps, a.residual);
    } else {
      add(a.residual, a.scratch, a.residual);
    }
    return;
  }
  expect_rank(kLinearAdd, "x", a.x, 2);
  expect_rank(kLinearAdd, "weight", a.weight, 2);
  if (a.weight.size(1) != a.x.size(1)) {
    fail(kLinearAdd, "x has shape " + shape_str(a.x.shape()) + " but weight has shape " +
                         shape_str(a.weight.shape()));
  }
  if (a.bias.defined()) expect_shape(kLinearAdd, "bias", a.bias, {a.weight.size(0)});
  expect_shape(kLinearAdd, "residual", a.residual, {a.x.size(0), a.weight.size(0)});
  expect_shape(kLinearAdd, "scratch", a.scratch, a.residual.shape());
  for (const Tensor* t : {&a.x, &a.weight, &a.residual, &a.scratch}) {
    expect_contiguous(kLinearAdd, "operand", *t);
    expect_same_device(kLinearAdd, a.x, *t);
  }
  expect_same_device(kLinearAdd, a.x, a.bias);
  reinterpret_cast<void (*)(const LinearAddArgs&)>(k)(a);
}

namespace {

// The checks of rope_store's composed ops, once (for its fused kernels).
void check_rope_store(const RopeStoreArgs& a) {
  const bool norms = a.q_norm.defined();
  const int64_t n = a.q.size(0), dim = a.q.size(2), kv_heads = a.k.size(2);
  expect_rank(kRopeStore, "q", a.q, 3);
  expect_rank(kRopeStore, "k", a.k, 4);
  expect_shape(kRopeStore, "v", a.v, a.k.shape());
  if (a.k.size(0) * a.k.size(1) != n || a.k.size(3) != dim) {
    fail(kRopeStore, "k " + shape_str(a.k.shape()) + " does not match q " + shape_str(a.q.shape()));
  }
  if (dim % 2 != 0) fail(kRopeStore, "head_dim must be even, got " + std::to_string(dim));
  if (norms) {
    expect_shape(kRopeStore, "q_norm", a.q_norm, {dim});
    expect_shape(kRopeStore, "k_norm", a.k_norm, {dim});
  }
  expect_shape(kRopeStore, "positions", a.positions, {n});
  expect_dtype(kRopeStore, "positions", a.positions, DType::i32);
  expect_shape(kRopeStore, "inv_freq", a.inv_freq, {dim / 2});
  expect_dtype(kRopeStore, "inv_freq", a.inv_freq, DType::f32);
  for (const Tensor* t : {&a.k_cache, &a.v_cache}) {
    expect_rank(kRopeStore, "cache", *t, 4);
    if (t->size(0) != a.k.size(0) || t->size(1) != kv_heads || t->size(3) != dim) {
      fail(kRopeStore,
           "k " + shape_str(a.k.shape()) + " does not fit cache " + shape_str(t->shape()));
    }
    expect_cache_dtype(kRopeStore, *t, a.q.dtype());
  }
  expect_dtype(kRopeStore, "v_cache", a.v_cache, a.k_cache.dtype());
  if (a.start < 0 || a.start + a.k.size(1) > a.k_cache.size(2)) {
    fail(kRopeStore, "positions [" + std::to_string(a.start) + ", " +
                         std::to_string(a.start + a.k.size(1)) + ") exceed the cache capacity " +
                         std::to_string(a.k_cache.size(2)));
  }
  expect_device_scalar(kRopeStore, "start_on_device", a.start_on_device, a.q, a.start);
  for (const Tensor* t : {&a.q, &a.k, &a.v, &a.k_cache, &a.v_cache}) {
    expect_contiguous(kRopeStore, "operand", *t);
    expect_same_device(kRopeStore, a.q, *t);
  }
  for (const Tensor* t : {&a.k, &a.v}) expect_dtype(kRopeStore, "operand", *t, a.q.dtype());
  for (const Tensor* t : {&a.q_norm, &a.k_norm, &a.positions, &a.inv_freq}) {
    expect_same_device(kRopeStore, a.q, *t);
  }
}

}  // namespace

void rope_store(const RopeStoreArgs& a) {
  const bool norms = a.q_norm.defined() && a.k_norm.defined();
  if (a.q_norm.defined() != a.k_norm.defined()) fail(kRopeStore, "q_norm and k_norm go together");
  auto k = find_kernel_raw(kRopeStore, a.q.device().type, a.q.dtype(),
                           norms ? a.q_norm.dtype() : a.q.dtype());
  if (norms && a.k_norm.dtype() != a.q_norm.dtype()) k = nullptr;
  // The fused kernels write caches of the activations' dtype unless the device says otherwise;
  // another cache dtype (an f16 cache beside f32 activations) goes through store_kv, which
  // converts.
  if (a.k_cache.dtype() != a.q.dtype() &&
      !find_kernel_raw(kRopeStoreOtherCache, a.q.device().type, a.q.dtype(), a.k_cache.dtype())) {
    k = nullptr;
  }
  const int64_t n = a.q.size(0), heads = a.q.size(1), dim = a.q.size(2);
  const int64_t kv_heads = a.k.size(2);
  if (!k) {
    if (norms) {
      rms_norm(a.q.view({n * heads, dim}), a.q_norm, a.eps, a.q.view({n * heads, dim}));
      rms_norm(a.k.view({n * kv_heads, dim}), a.k_norm, a.eps, a.k.view({n * kv_heads, dim}));
    }
    rope(a.q, a.positions, a.inv_freq, a.scaling);
    rope(a.k.view({n, kv_heads, dim}), a.positions, a.inv_freq, a.scaling);
    store_kv(a.k, a.k_cache, a.start, a.start_on_device);
    store_kv(a.v, a.v_cache, a.start, a.start_on_device);
    return;
  }
  check_rope_store(a);
  reinterpret_cast<void (*)(const RopeStoreArgs&)>(k)(a);
}

void composed_rope_attention(const RopeAttentionArgs& a) {
  rope_store(a.rope);
  attention(a.attention);
}

void rope_attention(const RopeAttentionArgs& a) {
  OpTimer timer([&] { return "rope_attention " + shape_str(a.rope.q.shape()); });
  const RopeStoreArgs& r = a.rope;
  const AttentionArgs& t = a.attention;
  const bool norms = r.q_norm.defined() && r.k_norm.defined();
  auto k = find_kernel_raw(kRopeAttention, r.q.device().type, r.q.dtype(),
                           norms ? r.q_norm.dtype() : r.q.dtype());
  if (norms && r.k_norm.dtype() != r.q_norm.dtype()) k = nullptr;
  if (r.k_cache.dtype() != r.q.dtype()) k = nullptr;
  // A device's fused kernel assumes the two halves describe one layer's attention; anything
  // else runs as the two ops it is.
  const bool one_layer =
      t.q.raw() == r.q.raw() && t.k_cache.raw() == r.k_cache.raw() &&
      t.v_cache.raw() == r.v_cache.raw() && t.past == r.start &&
      t.past_on_device.defined() == r.start_on_device.defined() &&
      (!t.past_on_device.defined() || t.past_on_device.raw() == r.start_on_device.raw()) &&
      r.q.defined() && t.q.numel() == r.q.numel();
  // A fused kernel takes softcapping where its device's attention does (kAttentionSoftcap).
  if (t.softcap > 0 &&
      !find_kernel_raw(kAttentionSoftcap, t.q.device().type, t.q.dtype(), t.k_cache.dtype())) {
    k = nullptr;
  }
  if (!k || !one_layer || r.q_norm.defined() != r.k_norm.defined()) {
    composed_rope_attention(a);
    return;
  }
  check_rope_store(r);
  check_attention(t);
  reinterpret_cast<void (*)(const RopeAttentionArgs&)>(k)(a);
}

// x += in @ w^T + bias, through out_norm where defined, times the residual scale (Granite).
void add_block_output(const DecodeLayersArgs& a, const Tensor& in, const Tensor& w,
                      const Tensor& bias, const Tensor& out_norm) {
  linear_add({in, w, bias, a.x, a.proj, out_norm, a.eps, a.residual_scale});
}

void composed_decode_layers(const DecodeLayersArgs& a) {
  const int64_t b = a.batch, s = a.seq, n = b * s, hd = a.head_dim;
  const int64_t nh = a.heads, nkv = a.kv_heads;
  const Tensor& x = a.x;
  for (const DecoderLayerTensors& L : a.layers) {
    const Tensor& inv_freq = L.inv_freq.defined() ? L.inv_freq : a.inv_freq;
    const float rope_scaling = L.inv_freq.defined() ? L.rope_scaling : a.rope_scaling;
    linear_group({x,
                  {L.q, L.k, L.v},
                  {L.q_bias, L.k_bias, L.v_bias},
                  {a.q, a.k, a.v},
                  3,
                  L.input_norm,
                  a.eps,
                  a.normed});
    if (L.q_full_norm.defined()) {  // OLMo 2: all heads' q, and all of k, as one vector each
      rms_norm(a.q.view({n, nh * hd}), L.q_full_norm, a.eps, a.q.view({n, nh * hd}));
      rms_norm(a.k.view({n, nkv * hd}), L.k_full_norm, a.eps, a.k.view({n, nkv * hd}));
    }
    rope_attention(
        {{a.q.view({n, nh, hd}), a.k.view({b, s, nkv, hd}), a.v.view({b, s, nkv, hd}), L.q_norm,
          L.k_norm, a.eps, a.positions, inv_freq, rope_scaling, L.k_cache, L.v_cache, a.past,
          a.past_on_device},
         {a.q.view({b, s, nh, hd}), L.k_cache, L.v_cache, a.key_mask, a.attn.view({b, s, nh, hd}),
          a.past, a.scale, a.impl, a.past_on_device, L.window, a.softcap}});
    add_block_output(a, a.attn, L.o, L.o_bias, L.attn_out_norm);
    if (L.moe) {
      composed_moe_mlp(a, L);
      continue;
    }
    linear_swiglu({x, L.gate, L.gate_bias, L.up, L.up_bias, a.gate, a.up, L.post_norm, a.eps,
                   a.normed, a.act});
    add_block_output(a, a.gate, L.down, L.down_bias, L.mlp_out_norm);
  }
}

bool decode_layers_extended(const DecodeLayersArgs& a) {
  if (a.act != GluActivation::silu || a.softcap != 0.0f || a.residual_scale != 1.0f) return true;
  for (const DecoderLayerTensors& L : a.layers) {
    if (L.attn_out_norm.defined() || L.mlp_out_norm.defined() || L.inv_freq.defined() ||
        L.q_full_norm.defined() || !L.input_norm.defined() || !L.post_norm.defined()) {
      return true;
    }
  }
  return false;
}

void decode_layers(const DecodeLayersArgs& a) {
  OpTimer timer([&] { return "decode_layers " + std::to_string(a.layers.size()) + " layers"; });
  if (a.layers.empty()) return;
  // No device kernel routes experts: a stack with MoE layers runs composed.
  for (const DecoderLayerTensors& L : a.layers) {
    if (L.moe) {
      composed_decode_layers(a);
      return;
    }
  }
  // A device's kernel takes the whole stack or hands it back to the composed definition; the
  // weights' dtype is the first layer's q's (a kernel checks the rest).
  const char* name = decode_layers_extended(a) ? kDecodeLayersExtended : kDecodeLayers;
  auto k = find_kernel_raw(name, a.x.device().type, a.x.dtype(), a.layers[0].q.dtype());
  if (!k) {
    composed_decode_layers(a);
    return;
  }
  reinterpret_cast<void (*)(const DecodeLayersArgs&)>(k)(a);
}

}  // namespace anvil::ops
