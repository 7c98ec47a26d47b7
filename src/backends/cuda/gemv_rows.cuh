// The decode GEMVs' inner loop, shared by the dense products (gemv.cu) and the mixture-of-experts
// products (moe.cu): a warp's dot products of a few activation rows with a few weight rows,
// 16-byte loads with all of a round in flight.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/weight_stream.cuh"

namespace anvil::cuda {

constexpr int kMaxUnroll = 4;

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

// acc[m][r] += x[r, :] . w_m[:] over chunks [cb, ce) of 16 bytes, reduced over the warp.
template <class T, int R, int W, bool kStaged>
__device__ __forceinline__ void dot_rows(const T* __restrict__ x, const uint4* const (&w)[W], int k,
                                         int cb, int ce, const T* __restrict__ norm_w,
                                         const float (&scale)[R], float (&acc)[W][R]) {
  constexpr int V = Vec<T>::kN;
  // Fewer loads per round where registers would run out (many rows, float32, two weights).
  constexpr int kLoad = R * W * (sizeof(T) == 4 ? 2 : 1);
  constexpr int kUnroll = kLoad > 10 ? 1 : (kLoad > 6 ? 2 : kMaxUnroll);
  const int lane = threadIdx.x % 32;
  const uint64_t policy = weight_stream_policy();
  // All of a lane's loads of one round are issued before any is used; the last round is
  // predicated rather than run one chunk at a time.
  for (int c0 = cb + lane; c0 < ce; c0 += 32 * kUnroll) {
    uint4 wv[W][kUnroll];
#pragma unroll
    for (int m = 0; m < W; ++m) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + 32 * u;
        wv[m][u] = c < ce ? load_weight(w[m] + c, policy) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int c = c0 + 32 * u;
      if (c >= ce) break;
      float nf[V];
      if (norm_w) widen<T>(__ldg(reinterpret_cast<const uint4*>(norm_w) + c), nf);
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float xf[V];
        const uint4* xp = reinterpret_cast<const uint4*>(x + static_cast<long long>(r) * k) + c;
        widen<T>(kStaged ? *xp : __ldg(xp), xf);
        if (norm_w) {  // RMSNorm's roundings, as the separate kernel stores them
#pragma unroll
          for (int i = 0; i < V; ++i) {
            xf[i] = to_float(from_float<T>(nf[i] * to_float(from_float<T>(xf[i] * scale[r]))));
          }
        }
#pragma unroll
        for (int m = 0; m < W; ++m) {
          float wf[V];
          widen<T>(wv[m][u], wf);
#pragma unroll
          for (int i = 0; i < V; ++i) acc[m][r] = fmaf(wf[i], xf[i], acc[m][r]);
        }
      }
    }
  }
#pragma unroll
  for (int m = 0; m < W; ++m) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[m][r] = warp_sum(acc[m][r]);
  }
}

}  // namespace anvil::cuda
