// The decode GEMVs. Each lane loads 16 bytes of a weight row per step with several loads in
// flight; the activation rows (a few KB) stay in L1/L2 and are read with the same pattern.
#include <cstdint>
#include <cstdlib>
#include <type_traits>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/gemv.h"
#include "backends/cuda/gemv_rows.cuh"
#include "backends/cuda/launch.cuh"

namespace anvil::cuda {
namespace {

constexpr int kWarpsPerBlock = 8;

// The RMSNorm scale 1/sqrt(mean(x^2) + eps) of each activation row, computed by every warp on
// its own (x is a few KB, read from L2): no block barrier, so no warp waits for the slowest
// before its weight loads start, and the norm needs no launch of its own.
template <class T, int R>
__device__ __forceinline__ void norm_scales(const T* __restrict__ x, int k, const T* norm_w,
                                            float eps, float (&scale)[R]) {
  constexpr int V = Vec<T>::kN;
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    scale[r] = 1.0f;
    if (!norm_w) continue;
    const uint4* xr = reinterpret_cast<const uint4*>(x + static_cast<long long>(r) * k);
    float ss = 0.0f;
    for (int c = lane; c < k / V; c += 32) {
      float xf[V];
      widen<T>(__ldg(xr + c), xf);
#pragma unroll
      for (int i = 0; i < V; ++i) ss += xf[i] * xf[i];
    }
    scale[r] = rsqrtf(warp_sum(ss) / static_cast<float>(k) + eps);
  }
}

// The activation rows copied once per block into shared memory (RMS-normalised there when
// norm_w is set, with the same roundings): the warps then read x from shared memory instead of
// each fetching x and the norm weight from L2 for every row it takes, which for the head and the
// down projection was more L2 traffic than the weights' own bytes.
template <class T, int R>
__device__ __forceinline__ void stage_x(const T* __restrict__ x, int k, const T* norm_w, float eps,
                                        T* xs) {
  constexpr int V = Vec<T>::kN;
  __shared__ float sums[kWarpsPerBlock][R];
  const int chunks = k / V;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float ss[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    ss[r] = 0.0f;
    const uint4* src = reinterpret_cast<const uint4*>(x + static_cast<long long>(r) * k);
    uint4* dst = reinterpret_cast<uint4*>(xs + static_cast<long long>(r) * k);
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
      const uint4 v = __ldg(src + c);
      dst[c] = v;
      if (norm_w) {
        float f[V];
        widen<T>(v, f);
#pragma unroll
        for (int i = 0; i < V; ++i) ss[r] += f[i] * f[i];
      }
    }
  }
  if (norm_w) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float sum = warp_sum(ss[r]);
      if (lane == 0) sums[warp][r] = sum;
    }
    __syncthreads();
    const uint4* nw = reinterpret_cast<const uint4*>(norm_w);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float total = 0.0f;
      for (int w = 0; w < kWarpsPerBlock; ++w) total += sums[w][r];
      const float scale = rsqrtf(total / static_cast<float>(k) + eps);
      uint4* row = reinterpret_cast<uint4*>(xs + static_cast<long long>(r) * k);
      for (int c = threadIdx.x; c < chunks; c += blockDim.x) {  // the chunks this thread copied
        float f[V], nf[V];
        widen<T>(row[c], f);
        widen<T>(__ldg(nw + c), nf);
        uint4 packed;
        T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          out[i] = from_float<T>(nf[i] * to_float(from_float<T>(f[i] * scale)));
        }
        row[c] = packed;
      }
    }
  }
  __syncthreads();
}

// x as the products read it: staged in shared memory (normalised, scale 1) or in place with
// the per-warp norm scales.
template <class T, int R, bool kStaged>
__device__ __forceinline__ const T* prepare_x(const T* x, int k, const T*& norm_w, float eps,
                                              float (&scale)[R]) {
  if constexpr (kStaged) {
    extern __shared__ uint4 staged_x[];
    T* xs = reinterpret_cast<T*>(staged_x);
    stage_x<T, R>(x, k, norm_w, eps, xs);
    norm_w = nullptr;
#pragma unroll
    for (int r = 0; r < R; ++r) scale[r] = 1.0f;
    return xs;
  } else {
    norm_scales<T, R>(x, k, norm_w, eps, scale);
    return x;
  }
}

// The normalised rows as the products read them, stored by block 0 when the caller keeps them
// (seg.normed): from the staged copy, or normalised again from x with the warp's scales.
template <class T, int R, bool kStaged>
__device__ __forceinline__ void store_normed(const T* __restrict__ x_in, const T* x, int k,
                                             const GemvSegments& seg, const float (&scale)[R]) {
  if (!seg.normed || !seg.norm_w || blockIdx.x != 0) return;
  constexpr int V = Vec<T>::kN;
  const int chunks = k / V;
  const uint4* nw = reinterpret_cast<const uint4*>(seg.norm_w);
#pragma unroll
  for (int r = 0; r < R; ++r) {
    uint4* dst =
        reinterpret_cast<uint4*>(static_cast<T*>(seg.normed) + static_cast<long long>(r) * k);
    for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
      if constexpr (kStaged) {
        dst[c] = reinterpret_cast<const uint4*>(x + static_cast<long long>(r) * k)[c];
      } else {
        float f[V], nf[V];
        widen<T>(__ldg(reinterpret_cast<const uint4*>(x_in + static_cast<long long>(r) * k) + c),
                 f);
        widen<T>(__ldg(nw + c), nf);
        uint4 packed;
        T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
        for (int i = 0; i < V; ++i) {
          out[i] = from_float<T>(nf[i] * to_float(from_float<T>(f[i] * scale[r])));
        }
        dst[c] = packed;
      }
    }
  }
}

// A rounded product times Granite's residual multiplier, rounded again (torch's `h * m`).
template <class T>
__device__ __forceinline__ T scaled(T product, float factor) {
  return factor == 1.0f ? product : from_float<T>(to_float(product) * factor);
}

// S warps share a row, each taking 1/S of k, when rows alone give too few warps to keep enough
// loads in flight; their sums meet in shared memory. The grid is at most a few waves, each block
// walking row groups, so short-lived blocks do not dominate the large products (the head).
template <class T, int R, int W, int S, bool kStaged>
__device__ __forceinline__ bool row_products(const T* __restrict__ x, const T* const (&wbase)[W],
                                             int row, bool active, int k, const T* norm_w,
                                             const float (&scale)[R], float (&acc)[W][R]) {
  __shared__ float partial[kWarpsPerBlock][W][R];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int chunks = k / Vec<T>::kN, part = warp % S;
  const int cb = chunks * part / S, ce = chunks * (part + 1) / S;
#pragma unroll
  for (int m = 0; m < W; ++m) {
#pragma unroll
    for (int r = 0; r < R; ++r) acc[m][r] = 0.0f;
  }
  if (active) {
    uint4 const* w[W];
#pragma unroll
    for (int m = 0; m < W; ++m) {
      w[m] = reinterpret_cast<const uint4*>(wbase[m] + static_cast<long long>(row) * k);
    }
    dot_rows<T, R, W, kStaged>(x, reinterpret_cast<const uint4* const(&)[W]>(w), k, cb, ce, norm_w,
                               scale, acc);
  }
  if constexpr (S == 1) {
    return active && lane == 0;
  } else {
    if (lane == 0) {
#pragma unroll
      for (int m = 0; m < W; ++m) {
#pragma unroll
        for (int r = 0; r < R; ++r) partial[warp][m][r] = acc[m][r];
      }
    }
    __syncthreads();
    if (part == 0 && lane == 0) {
#pragma unroll
      for (int q = 1; q < S; ++q) {
#pragma unroll
        for (int m = 0; m < W; ++m) {
#pragma unroll
          for (int r = 0; r < R; ++r) acc[m][r] += partial[warp + q][m][r];
        }
      }
    }
    __syncthreads();  // partial[] is rewritten by the next row group
    return active && part == 0 && lane == 0;
  }
}

// This warp's share (1/S of k) of weight row `row`, brought into L2 while the kernel that
// produces x may still be running: the weights never depend on it. Evict-first like the loads
// that read it (weight_stream.cuh); one bulk request where the row's bytes allow.
template <class T, int S>
__device__ __forceinline__ void prefetch_share(const T* w, int row, int k) {
  const int part = static_cast<int>(threadIdx.x / 32) % S;
  const long long bytes = static_cast<long long>(k) * sizeof(T);
  const char* at = reinterpret_cast<const char*>(w + static_cast<long long>(row) * k);
  if (bytes % 16 == 0 && reinterpret_cast<uintptr_t>(at) % 16 == 0) {
    if (threadIdx.x % 32 == 0) {
      const long long begin = bytes * part / S / 16 * 16, end = bytes * (part + 1) / S / 16 * 16;
      if (end > begin) {
        prefetch_weights_l2(at + begin, static_cast<unsigned>(end - begin), weight_stream_policy());
      }
    }
    return;
  }
  const long long begin = bytes * part / S, end = bytes * (part + 1) / S;
  prefetch_l2(at + begin, end - begin, static_cast<int>(threadIdx.x % 32), 32);
}

// kRare: the multiplier (out_scale) and the kept normalised rows (normed), which only Granite's
// block outputs and the MoE routers use: the plain products compile without them, as before
// 896a824. (Composed Qwen2.5-0.5B measured 1.5% slower since 896a824; compiling the checks out
// did not bring it back, so their cost is not the cause: docs/perf.md, forty-third session.)
template <class T, int R, int S, bool kStaged, bool kRare>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_kernel(const T* __restrict__ x_in, GemvSegments seg, int k, int groups) {
  constexpr int kRowsPerBlock = kWarpsPerBlock / S;
  const int total = seg.rows[0] + seg.rows[1] + seg.rows[2];
  const T* norm_w = static_cast<const T*>(seg.norm_w);
  if (static_cast<int>(blockIdx.x) <
      groups) {  // the first row group's weights, before waiting for x
    int row = blockIdx.x * kRowsPerBlock + static_cast<int>(threadIdx.x / 32) / S;
    int i = 0;
    while (i < seg.count - 1 && row >= seg.rows[i]) row -= seg.rows[i++];
    if (row < seg.rows[i]) prefetch_share<T, S>(static_cast<const T*>(seg.w[i]), row, k);
  }
  pdl_wait();
  float scale[R];
  const T* x = prepare_x<T, R, kStaged>(x_in, k, norm_w, seg.eps, scale);
  if constexpr (kRare) store_normed<T, R, kStaged>(x_in, x, k, seg, scale);
  for (int g = blockIdx.x; g < groups; g += gridDim.x) {
    int row = g * kRowsPerBlock + static_cast<int>(threadIdx.x / 32) / S;
    const bool active = row < total;
    int i = 0;
    while (active && i < seg.count - 1 && row >= seg.rows[i]) row -= seg.rows[i++];
    const T* const w[1] = {static_cast<const T*>(seg.w[i])};
    float acc[1][R];
    if (row_products<T, R, 1, S, kStaged>(x, w, row, active, k, norm_w, scale, acc)) {
      const T* bias = static_cast<const T*>(seg.bias[i]);
      T* out = static_cast<T*>(seg.out[i]);
      const int o = seg.rows[i];
      const float b = bias ? to_float(bias[row]) : 0.0f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        T& dst = out[static_cast<long long>(r) * o + row];
        T product = from_float<T>(acc[0][r] + b);
        if constexpr (kRare) product = scaled(product, seg.out_scale);
        dst = seg.accumulate ? from_float<T>(to_float(dst) + to_float(product)) : product;
      }
    }
  }
}

// The head's shape (one activation row, one matrix of many rows): each warp takes two
// consecutive rows, so each lane has twice the loads in flight per round. Never with the rare
// features (gemv_kernel's kRare): launch_plain sends those to gemv_kernel.
template <class T, bool kStaged>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_pairs_kernel(const T* __restrict__ x_in, GemvSegments seg, int k, int groups) {
  constexpr int kRowsPerBlock = 2 * kWarpsPerBlock;
  const int total = seg.rows[0];
  const T* w = static_cast<const T*>(seg.w[0]);
  const T* norm_w = static_cast<const T*>(seg.norm_w);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  if (static_cast<int>(blockIdx.x) < groups) {  // the first rows' weights, before waiting for x
    const int row = static_cast<int>(blockIdx.x) * kRowsPerBlock + 2 * warp;
    if (row < total) prefetch_share<T, 1>(w, row, k);
    if (row + 1 < total) prefetch_share<T, 1>(w, row + 1, k);
  }
  pdl_wait();
  float scale[1];
  const T* x = prepare_x<T, 1, kStaged>(x_in, k, norm_w, seg.eps, scale);
  const int chunks = k / Vec<T>::kN;
  const T* bias = static_cast<const T*>(seg.bias[0]);
  T* out = static_cast<T*>(seg.out[0]);
  for (int g = blockIdx.x; g < groups; g += gridDim.x) {
    const int row = g * kRowsPerBlock + 2 * warp;
    if (row >= total) continue;
    const int second = row + 1 < total ? row + 1 : row;
    const uint4* const rows[2] = {
        reinterpret_cast<const uint4*>(w + static_cast<long long>(row) * k),
        reinterpret_cast<const uint4*>(w + static_cast<long long>(second) * k)};
    float acc[2][1] = {{0.0f}, {0.0f}};
    dot_rows<T, 1, 2, kStaged>(x, rows, k, 0, chunks, norm_w, scale, acc);
    if (lane != 0) continue;
#pragma unroll
    for (int m = 0; m < 2; ++m) {
      const int r = row + m;
      if (m == 1 && second == row) break;
      const T product = from_float<T>(acc[m][0] + (bias ? to_float(bias[r]) : 0.0f));
      out[r] = seg.accumulate ? from_float<T>(to_float(out[r]) + to_float(product)) : product;
    }
  }
}

template <class T, int R, int S, bool kStaged, bool Gelu>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    gemv_swiglu_kernel(const T* __restrict__ x_in, const T* __restrict__ gate,
                       const T* __restrict__ gate_bias, const T* __restrict__ up,
                       const T* __restrict__ up_bias, T* __restrict__ out, int k, int o, int groups,
                       const T* norm_w, float eps) {
  constexpr int kRowsPerBlock = kWarpsPerBlock / S;
  const T* const w[2] = {gate, up};
  {  // the first row group's weights, before waiting for x
    const int row = blockIdx.x * kRowsPerBlock + static_cast<int>(threadIdx.x / 32) / S;
    if (row < o) {
      prefetch_share<T, S>(gate, row, k);
      prefetch_share<T, S>(up, row, k);
    }
  }
  pdl_wait();
  float scale[R];
  const T* x = prepare_x<T, R, kStaged>(x_in, k, norm_w, eps, scale);
  for (int g = blockIdx.x; g < groups; g += gridDim.x) {
    const int row = g * kRowsPerBlock + static_cast<int>(threadIdx.x / 32) / S;
    float acc[2][R];
    if (row_products<T, R, 2, S, kStaged>(x, w, row, row < o, k, norm_w, scale, acc)) {
      const float gb = gate_bias ? to_float(gate_bias[row]) : 0.0f;
      const float ub = up_bias ? to_float(up_bias[row]) : 0.0f;
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const float gv = to_float(from_float<T>(acc[0][r] + gb));
        const float uv = to_float(from_float<T>(acc[1][r] + ub));
        out[static_cast<long long>(r) * o + row] = from_float<T>(gated<Gelu>(gv) * uv);
      }
    }
  }
}

// Warps per row: enough warps to cover the GPU several times over, each with at least a round
// of loads per lane.
int warps_per_row(int rows, int k, int esize, int sm_count) {
  const int chunks = k * esize / 16;
  int s = 1;
  while (s < 4 && rows * s < sm_count * 32 && chunks / (2 * s) >= 32) s *= 2;
  return s;
}

// One wave: as many blocks as can be resident at once (registers and shared memory decide), each
// walking row groups. A larger grid (it was 8 blocks per SM while registers allowed 6) left its
// last blocks to start when the first had finished all their groups, and to walk theirs with a
// quarter of the GPU's loads in flight: the head read at ~3.0 TB/s.
// ANVIL_CUDA_GEMV_BLOCKS_PER_SM=N sets the blocks per SM instead (for measuring).
template <class Kernel>
unsigned grid_for(Kernel kernel, size_t smem, int groups, int sm_count) {
  static const int forced = [] {
    const char* v = std::getenv("ANVIL_CUDA_GEMV_BLOCKS_PER_SM");
    return v ? std::atoi(v) : 0;
  }();
  int per_sm = forced;
  if (per_sm < 1 && (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                         &per_sm, kernel, kWarpsPerBlock * 32, smem) != cudaSuccess ||
                     per_sm < 1)) {
    per_sm = 1;
  }
  const int cap = sm_count * per_sm;
  return static_cast<unsigned>(groups < cap ? groups : cap);
}

// Shared memory for the activation rows staged per block; 0 (x read in place) when they would
// not fit the default 48 KB, or when ANVIL_CUDA_GEMV_UNSTAGED is set (for measuring).
size_t staged_bytes(int rows, int k, size_t esize) {
  static const bool off = std::getenv("ANVIL_CUDA_GEMV_UNSTAGED") != nullptr;
  const size_t bytes = static_cast<size_t>(rows) * k * esize;
  return off || bytes > 48 * 1024 ? 0 : bytes;
}

// Warps per row and staging as template arguments: f(integral_constant S, bool_constant).
template <class F>
void by_split(int s, bool staged, F&& f) {
  const auto with_s = [&](auto st) {
    if (s == 4)
      f(std::integral_constant<int, 4>{}, st);
    else if (s == 2)
      f(std::integral_constant<int, 2>{}, st);
    else
      f(std::integral_constant<int, 1>{}, st);
  };
  if (staged)
    with_s(std::true_type{});
  else
    with_s(std::false_type{});
}

// Rows from which a one-row product of one matrix takes the two-rows-per-warp kernel (the
// head); ANVIL_CUDA_GEMV_NO_PAIRS=1 keeps it on the plain kernel (for measuring).
constexpr int kPairRows = 32768;

template <class T, int R>
void launch_plain(int s, const void* x, const GemvSegments& seg, int k, int sms, cudaStream_t st) {
  const int total = seg.rows[0] + seg.rows[1] + seg.rows[2];
  const size_t smem = staged_bytes(R, k, sizeof(T));
  static const bool no_pairs = std::getenv("ANVIL_CUDA_GEMV_NO_PAIRS") != nullptr;
  const bool rare = seg.out_scale != 1.0f || seg.normed != nullptr;
  if (R == 1 && s == 1 && seg.count == 1 && total >= kPairRows && !no_pairs && !rare) {
    const int groups = (total + 2 * kWarpsPerBlock - 1) / (2 * kWarpsPerBlock);
    const auto run = [&](auto kernel) {
      launch(kernel, grid_for(kernel, smem, groups, sms), kWarpsPerBlock * 32, smem, st,
             static_cast<const T*>(x), seg, k, groups);
    };
    if (smem > 0) {
      run(gemv_pairs_kernel<T, true>);
    } else {
      run(gemv_pairs_kernel<T, false>);
    }
    return;
  }
  by_split(s, smem > 0, [&](auto split, auto staged) {
    constexpr int S = decltype(split)::value;
    const int groups = (total + kWarpsPerBlock / S - 1) / (kWarpsPerBlock / S);
    const auto run = [&](auto kernel) {
      launch(kernel, grid_for(kernel, smem, groups, sms), kWarpsPerBlock * 32, smem, st,
             static_cast<const T*>(x), seg, k, groups);
    };
    if (rare) {
      run(gemv_kernel<T, R, S, decltype(staged)::value, true>);
    } else {
      run(gemv_kernel<T, R, S, decltype(staged)::value, false>);
    }
  });
}

template <class T, int R>
void launch_swiglu(int s, const void* x, const void* gate, const void* gb, const void* up,
                   const void* ub, void* out, int k, int o, const void* norm_w, float eps,
                   bool gelu, int sms, cudaStream_t st) {
  const size_t smem = staged_bytes(R, k, sizeof(T));
  by_split(s, smem > 0, [&](auto split, auto staged) {
    constexpr int S = decltype(split)::value;
    const int groups = (o + kWarpsPerBlock / S - 1) / (kWarpsPerBlock / S);
    const auto run = [&](auto kernel) {
      launch(kernel, grid_for(kernel, smem, groups, sms), kWarpsPerBlock * 32, smem, st,
             static_cast<const T*>(x), static_cast<const T*>(gate), static_cast<const T*>(gb),
             static_cast<const T*>(up), static_cast<const T*>(ub), static_cast<T*>(out), k, o,
             groups, static_cast<const T*>(norm_w), eps);
    };
    if (gelu) {
      run(gemv_swiglu_kernel<T, R, S, decltype(staged)::value, true>);
    } else {
      run(gemv_swiglu_kernel<T, R, S, decltype(staged)::value, false>);
    }
  });
}

// Activation rows as a template argument, so each row count gets unrolled code.
template <class F>
void by_rows(int n, F&& f) {
  if (n == 1) {
    f(std::integral_constant<int, 1>{});
  } else if (n == 2) {
    f(std::integral_constant<int, 2>{});
  } else if (n == 3) {
    f(std::integral_constant<int, 3>{});
  } else {
    f(std::integral_constant<int, kGemvMaxRows>{});
  }
}

}  // namespace

bool gemv_fits(DType dtype, const void* x, const void* const* weights, int nweights, int n, int k) {
  const int esize = dtype == DType::f32 ? 4 : 2;
  const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  bool ok = n >= 1 && n <= kGemvMaxRows && k > 0 && (k * esize) % 16 == 0 && aligned(x);
  for (int i = 0; i < nweights; ++i) ok = ok && aligned(weights[i]);
  return ok;
}

void gemv(DType dtype, const void* x, const GemvSegments& seg, int n, int k, int sm_count,
          cudaStream_t stream) {
  const int esize = dtype == DType::f32 ? 4 : 2;
  const int s = warps_per_row(seg.rows[0] + seg.rows[1] + seg.rows[2], k, esize, sm_count);
  dispatch_float(dtype, "linear", [&](auto t) {
    by_rows(n, [&](auto r) {
      launch_plain<decltype(t), decltype(r)::value>(s, x, seg, k, sm_count, stream);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void gemv_swiglu(DType dtype, const void* x, const void* gate, const void* gate_bias,
                 const void* up, const void* up_bias, void* out, int n, int k, int o,
                 const void* norm_w, float eps, bool gelu, int sm_count, cudaStream_t stream) {
  const int esize = dtype == DType::f32 ? 4 : 2;
  const int s = warps_per_row(o, k, esize, sm_count);
  dispatch_float(dtype, "linear_swiglu", [&](auto t) {
    by_rows(n, [&](auto r) {
      launch_swiglu<decltype(t), decltype(r)::value>(s, x, gate, gate_bias, up, up_bias, out, k, o,
                                                     norm_w, eps, gelu, sm_count, stream);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace anvil::cuda
