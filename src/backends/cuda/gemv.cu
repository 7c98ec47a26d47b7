// The decode GEMV. Each lane loads 16 bytes of a weight row per step with several loads in
// flight; the activation rows (a few KB) stay in L1/L2 and are read with the same pattern.
#include <cstdint>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/gemv.h"

namespace anvil::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;
constexpr int kUnroll = 4;

template <class T>
struct Vec {
  static constexpr int kN = 16 / sizeof(T);
};

template <class T>
__device__ __forceinline__ void widen(const uint4& raw, float* f) {
  const T* v = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < Vec<T>::kN; ++i) f[i] = to_float(v[i]);
}

template <class T, int R>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                T* __restrict__ out, int k, int o) {
  constexpr int V = Vec<T>::kN;
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= o) return;
  const int chunks = k / V;
  const uint4* wr = reinterpret_cast<const uint4*>(w + static_cast<long long>(row) * k);
  float acc[R] = {};
  int c = lane;
  for (; c + 32 * (kUnroll - 1) < chunks; c += 32 * kUnroll) {
    uint4 wv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) wv[u] = __ldg(wr + c + 32 * u);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      float wf[V];
      widen<T>(wv[u], wf);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float xf[V];
        widen<T>(__ldg(reinterpret_cast<const uint4*>(x + static_cast<long long>(r) * k) + c +
                       32 * u),
                 xf);
#pragma unroll
        for (int i = 0; i < V; ++i) acc[r] = fmaf(wf[i], xf[i], acc[r]);
      }
    }
  }
  for (; c < chunks; c += 32) {
    float wf[V];
    widen<T>(__ldg(wr + c), wf);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float xf[V];
      widen<T>(__ldg(reinterpret_cast<const uint4*>(x + static_cast<long long>(r) * k) + c), xf);
#pragma unroll
      for (int i = 0; i < V; ++i) acc[r] = fmaf(wf[i], xf[i], acc[r]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r) acc[r] = warp_sum(acc[r]);
  if (lane == 0) {
    const float b = bias ? to_float(bias[row]) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) out[static_cast<long long>(r) * o + row] = from_float<T>(acc[r] + b);
  }
}

template <class T, int R>
void launch(const void* x, const void* w, const void* bias, void* out, int k, int o,
            cudaStream_t s) {
  gemv_kernel<T, R><<<blocks_for(o, kWarpsPerBlock), kWarpsPerBlock * 32, 0, s>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<const T*>(bias),
      static_cast<T*>(out), k, o);
}

template <class T>
void launch_rows(int rows, const void* x, const void* w, const void* bias, void* out, int k,
                 int o, cudaStream_t s) {
  switch (rows) {
    case 1: launch<T, 1>(x, w, bias, out, k, o, s); break;
    case 2: launch<T, 2>(x, w, bias, out, k, o, s); break;
    case 3: launch<T, 3>(x, w, bias, out, k, o, s); break;
    case 4: launch<T, 4>(x, w, bias, out, k, o, s); break;
    case 5: launch<T, 5>(x, w, bias, out, k, o, s); break;
    case 6: launch<T, 6>(x, w, bias, out, k, o, s); break;
    case 7: launch<T, 7>(x, w, bias, out, k, o, s); break;
    default: launch<T, 8>(x, w, bias, out, k, o, s); break;
  }
}

}  // namespace

bool gemv_fits(DType dtype, const void* x, const void* w, int rows, int k) {
  const int esize = dtype == DType::f32 ? 4 : 2;
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  return rows >= 1 && rows <= kGemvMaxRows && (k * esize) % 16 == 0 && aligned(x) && aligned(w);
}

void gemv(DType dtype, const void* x, const void* w, const void* bias, void* out, int rows,
          int k, int o, cudaStream_t stream) {
  dispatch_float(dtype, "linear", [&](auto t) {
    launch_rows<decltype(t)>(rows, x, w, bias, out, k, o, stream);
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace anvil::cuda
