// CPU rotary embedding, half-split layout; angles in float32 as transformers computes them. The
// fused rope_store (q/k norms, RoPE on q and k, cache writes) computes a step's cos/sin once and
// keeps them for every layer of the step: per decode layer the composed ops computed them twice
// (q and k) with 64 cos/sin calls each and dispatched five ops (~5 us a layer, ~3% of a
// SmolLM2-135M decode step).
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/row_kernels.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

// The cos/sin of tokens' angles, [token][i] for i < half.
struct Angles {
  std::vector<int32_t> positions;
  std::vector<float> inv_freq;
  float scaling = 0;
  std::vector<float> cos, sin;
};

// The angles of `n` positions, recomputed only when the positions, frequencies or scaling
// differ from the previous call's (a step's layers all pass the same ones). One table per
// calling thread (ops are issued by one thread per model).
const Angles& angles_for(const ops::RopeArgs& a, int64_t n, int64_t half) {
  thread_local Angles cached;
  const int32_t* pos = a.positions.data<int32_t>();
  const float* inv = a.inv_freq.data<float>();
  const bool same =
      cached.scaling == a.scaling && static_cast<int64_t>(cached.positions.size()) == n &&
      static_cast<int64_t>(cached.inv_freq.size()) == half &&
      std::memcmp(cached.positions.data(), pos, static_cast<size_t>(n) * sizeof(int32_t)) == 0 &&
      std::memcmp(cached.inv_freq.data(), inv, static_cast<size_t>(half) * sizeof(float)) == 0;
  if (same) return cached;
  cached.positions.assign(pos, pos + n);
  cached.inv_freq.assign(inv, inv + half);
  cached.scaling = a.scaling;
  cached.cos.resize(static_cast<size_t>(n * half));
  cached.sin.resize(static_cast<size_t>(n * half));
  // The tasks may run on other threads: they get the caller's table, not their own thread_local.
  float* c = cached.cos.data();
  float* s = cached.sin.data();
  const float scaling = a.scaling;
  cpu::parallel_for(n, 16, [=](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      rope_angles(pos[t], inv, half, scaling, c + t * half, s + t * half);
  });
  return cached;
}

void rope_kernel(const ops::RopeArgs& a) {
  const int64_t n = a.x.size(0), heads = a.x.size(1), d = a.x.size(2), half = d / 2;
  float* x = a.x.data<float>();
  const Angles& an = angles_for(a, n, half);
  cpu::parallel_for(n, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      rotate_heads(x + t * heads * d, heads, d, an.cos.data() + t * half, an.sin.data() + t * half);
    }
  });
}

// q/k norms (Qwen3) as the composed op runs them, then per token: RoPE on q and k, and k and v
// written into the caches (float32, or half: the CPU's default beside quantized weights), in
// one pass.
template <class KV>
void rope_store_into(const ops::RopeStoreArgs& a) {
  const int64_t n = a.q.size(0), heads = a.q.size(1), d = a.q.size(2), half = d / 2;
  const int64_t seq = a.k.size(1), kv = a.k.size(2), cap = a.k_cache.size(2);
  if (a.q_norm.defined()) {
    ops::rms_norm(a.q.view({n * heads, d}), a.q_norm, a.eps, a.q.view({n * heads, d}));
    ops::rms_norm(a.k.view({n * kv, d}), a.k_norm, a.eps, a.k.view({n * kv, d}));
  }
  const Angles& an = angles_for({a.q, a.positions, a.inv_freq, a.scaling}, n, half);
  const int64_t start = a.start_on_device.defined() ? *a.start_on_device.data<int32_t>() : a.start;
  float* q = a.q.data<float>();
  float* k = a.k.data<float>();
  const float* v = a.v.data<float>();
  KV* kc = static_cast<KV*>(a.k_cache.raw());
  KV* vc = static_cast<KV*>(a.v_cache.raw());
  cpu::parallel_for(n, 4, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const float* c = an.cos.data() + t * half;
      const float* s = an.sin.data() + t * half;
      rotate_heads(q + t * heads * d, heads, d, c, s);
      rotate_heads(k + t * kv * d, kv, d, c, s);
      const int64_t b = t / seq, pos = start + t % seq;
      for (int64_t h = 0; h < kv; ++h) {
        const size_t at = static_cast<size_t>(((b * kv + h) * cap + pos) * d);
        write_cache_row(kc + at, k + (t * kv + h) * d, d);
        write_cache_row(vc + at, v + (t * kv + h) * d, d);
      }
    }
  });
}

void rope_store_kernel(const ops::RopeStoreArgs& a) {
  if (a.k_cache.dtype() == DType::f16) {
    rope_store_into<uint16_t>(a);
  } else {
    rope_store_into<float>(a);
  }
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_rope() {
  register_kernel<ops::RopeArgs>(ops::kRope, DeviceType::cpu, DType::f32, DType::f32,
                                 &cpu::rope_kernel);
  // Keyed by the q/k norms' dtype (q's own dtype when there are none).
  for (DType norm : {DType::f32, DType::bf16, DType::f16}) {
    register_kernel<ops::RopeStoreArgs>(ops::kRopeStore, DeviceType::cpu, DType::f32, norm,
                                        &cpu::rope_store_kernel);
  }
  // The same kernel writes half caches (ops::rope_store asks before passing one).
  register_kernel<ops::RopeStoreArgs>(ops::kRopeStoreOtherCache, DeviceType::cpu, DType::f32,
                                      DType::f16, &cpu::rope_store_kernel);
}

}  // namespace anvil
