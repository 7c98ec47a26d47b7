// The decode GEMVs. Each lane loads 16 bytes of a weight row per step with several loads in
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

// acc[r] (per lane, not yet reduced) += x[r, :] . w[:] over this lane's 16-byte chunks.
template <class T, int R, int W>
__device__ __forceinline__ void dot_rows(const T* __restrict__ x, const uint4* const (&w)[W], int k,
                                         float (&acc)[W][R]) {
  constexpr int V = Vec<T>::kN;
  const int lane = threadIdx.x % 32;
  const int chunks = k / V;
  // All of a lane's loads of one round are issued before any is used; the last round is
  // predicated rather than run one chunk at a time.
  for (int c0 = lane; c0 < chunks; c0 += 32 * kUnroll) {
    uint4 wv[W][kUnroll];
#pragma unroll
    for (int m = 0; m < W; ++m) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int c = c0 + 32 * u;
        wv[m][u] = c < chunks ? __ldg(w[m] + c) : make_uint4(0, 0, 0, 0);
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int c = c0 + 32 * u;
      if (c >= chunks) break;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        float xf[V];
        widen<T>(__ldg(reinterpret_cast<const uint4*>(x + static_cast<long long>(r) * k) + c), xf);
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

template <class T, int R>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const T* __restrict__ x, GemvSegments seg, int k) {
  int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  int i = 0;
  while (i < seg.count && row >= seg.rows[i]) row -= seg.rows[i++];
  if (i >= seg.count) return;
  const int o = seg.rows[i];
  const uint4* const w[1] = {reinterpret_cast<const uint4*>(static_cast<const T*>(seg.w[i]) +
                                                            static_cast<long long>(row) * k)};
  float acc[1][R] = {};
  dot_rows<T, R, 1>(x, w, k, acc);
  if (threadIdx.x % 32 == 0) {
    const T* bias = static_cast<const T*>(seg.bias[i]);
    T* out = static_cast<T*>(seg.out[i]);
    const float b = bias ? to_float(bias[row]) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r)
      out[static_cast<long long>(r) * o + row] = from_float<T>(acc[0][r] + b);
  }
}

template <class T, int R>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_swiglu_kernel(const T* __restrict__ x, const T* __restrict__ gate,
                       const T* __restrict__ gate_bias, const T* __restrict__ up,
                       const T* __restrict__ up_bias, T* __restrict__ out, int k, int o) {
  const int row = blockIdx.x * kWarpsPerBlock + threadIdx.x / 32;
  if (row >= o) return;
  const long long off = static_cast<long long>(row) * k;
  const uint4* const w[2] = {reinterpret_cast<const uint4*>(gate + off),
                             reinterpret_cast<const uint4*>(up + off)};
  float acc[2][R] = {};
  dot_rows<T, R, 2>(x, w, k, acc);
  if (threadIdx.x % 32 == 0) {
    const float gb = gate_bias ? to_float(gate_bias[row]) : 0.0f;
    const float ub = up_bias ? to_float(up_bias[row]) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float g = to_float(from_float<T>(acc[0][r] + gb));
      const float u = to_float(from_float<T>(acc[1][r] + ub));
      out[static_cast<long long>(r) * o + row] = from_float<T>(g / (1.0f + __expf(-g)) * u);
    }
  }
}

template <template <class, int> class Launch, class T, class... Args>
void by_rows(int n, Args&&... args) {
  switch (n) {
    case 1:
      Launch<T, 1>::run(args...);
      break;
    case 2:
      Launch<T, 2>::run(args...);
      break;
    case 3:
      Launch<T, 3>::run(args...);
      break;
    case 4:
      Launch<T, 4>::run(args...);
      break;
    case 5:
      Launch<T, 5>::run(args...);
      break;
    case 6:
      Launch<T, 6>::run(args...);
      break;
    case 7:
      Launch<T, 7>::run(args...);
      break;
    default:
      Launch<T, 8>::run(args...);
      break;
  }
}

template <class T, int R>
struct LaunchPlain {
  static void run(const void* x, const GemvSegments& seg, int k, cudaStream_t s) {
    const int total = seg.rows[0] + seg.rows[1] + seg.rows[2];
    gemv_kernel<T, R><<<blocks_for(total, kWarpsPerBlock), kWarpsPerBlock * 32, 0, s>>>(
        static_cast<const T*>(x), seg, k);
  }
};

template <class T, int R>
struct LaunchSwiglu {
  static void run(const void* x, const void* gate, const void* gb, const void* up, const void* ub,
                  void* out, int k, int o, cudaStream_t s) {
    gemv_swiglu_kernel<T, R><<<blocks_for(o, kWarpsPerBlock), kWarpsPerBlock * 32, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(gate), static_cast<const T*>(gb),
        static_cast<const T*>(up), static_cast<const T*>(ub), static_cast<T*>(out), k, o);
  }
};

}  // namespace

bool gemv_fits(DType dtype, const void* x, const void* const* weights, int nweights, int n, int k) {
  const int esize = dtype == DType::f32 ? 4 : 2;
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  bool ok = n >= 1 && n <= kGemvMaxRows && k > 0 && (k * esize) % 16 == 0 && aligned(x);
  for (int i = 0; i < nweights; ++i) ok = ok && aligned(weights[i]);
  return ok;
}

void gemv(DType dtype, const void* x, const GemvSegments& seg, int n, int k, cudaStream_t stream) {
  dispatch_float(dtype, "linear",
                 [&](auto t) { by_rows<LaunchPlain, decltype(t)>(n, x, seg, k, stream); });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void gemv_swiglu(DType dtype, const void* x, const void* gate, const void* gate_bias,
                 const void* up, const void* up_bias, void* out, int n, int k, int o,
                 cudaStream_t stream) {
  dispatch_float(dtype, "linear_swiglu", [&](auto t) {
    by_rows<LaunchSwiglu, decltype(t)>(n, x, gate, gate_bias, up, up_bias, out, k, o, stream);
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace anvil::cuda
