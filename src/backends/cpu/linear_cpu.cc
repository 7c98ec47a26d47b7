// CPU matrix product out = x @ W^T + b with float32 activations and f32/bf16/f16 weights.
// Threads split the output features; each thread widens a block of weight rows to float32 once
// and reuses it for every activation row, so bf16 weights cost one conversion per element per
// call. The CPU performance issue replaces the inner loops with ISA-specific kernels.
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/weight_load.h"
#include "core/kernels.h"
#include "core/thread_pool.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

constexpr int64_t kRowBlock = 16;  // weight rows widened together (fits L1 for K up to ~512)

inline float dot(const float* a, const float* b, int64_t k) {
  float acc[16] = {};
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    for (int u = 0; u < 16; ++u) acc[u] += a[j + u] * b[j + u];
  }
  float s = 0;
  for (int u = 0; u < 16; ++u) s += acc[u];
  for (; j < k; ++j) s += a[j] * b[j];
  return s;
}

template <class W>
void linear_kernel(const ops::LinearArgs& a) {
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  const float* x = a.x.data<float>();
  const W* w = a.weight.data<W>();
  const W* bias = a.bias.defined() ? a.bias.data<W>() : nullptr;
  float* out = a.out.data<float>();
  const int64_t blocks = (o + kRowBlock - 1) / kRowBlock;
  // Enough work per chunk to outweigh waking a thread.
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, k * kRowBlock * n));
  parallel_for(blocks, grain, [&](int64_t b0, int64_t b1) {
    std::vector<float> widened;
    if constexpr (!std::is_same_v<W, float>) widened.resize(static_cast<size_t>(kRowBlock * k));
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t r0 = blk * kRowBlock, r1 = std::min(o, r0 + kRowBlock);
      const float* wf;
      if constexpr (std::is_same_v<W, float>) {
        wf = w + r0 * k;
      } else {
        for (int64_t i = 0; i < (r1 - r0) * k; ++i) widened[i] = widen(w[r0 * k + i]);
        wf = widened.data();
      }
      for (int64_t row = 0; row < n; ++row) {
        const float* xr = x + row * k;
        float* orow = out + row * o;
        for (int64_t r = r0; r < r1; ++r) {
          float v = dot(xr, wf + (r - r0) * k, k);
          if (bias) v += widen(bias[r]);
          orow[r] = v;
        }
      }
    }
  });
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_linear() {
  for (DType w : cpu::kCpuWeightTypes) {
    cpu::with_weight_type(w, [&]<class W>() {
      register_kernel<ops::LinearArgs>(ops::kLinear, DeviceType::cpu, DType::f32, w,
                                       &cpu::linear_kernel<W>);
    });
  }
}

}  // namespace anvil
