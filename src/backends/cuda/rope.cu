// Rotary embedding (half-split layout, float32 angles as transformers computes them) and the
// KV-cache write, whose start position may come from device memory during graph replay.
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/launch.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per (token, head, i < half): rotates the pair (i, i + half). The angle is computed
// before the wait: positions and frequencies are the step's inputs, copied in before its kernels
// (or, for dynamic RoPE, updated then), never written by the kernel this one waits for.
template <class T>
__global__ void rope_kernel(T* x, const int* positions, const float* inv_freq, long long tokens,
                            int heads, int half, float scaling) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= tokens * heads * half) {
    pdl_wait();
    return;
  }
  const int j = static_cast<int>(i % half);
  const long long th = i / half;  // token * heads + head
  const long long n = th / heads;
  const float angle = static_cast<float>(positions[n]) * inv_freq[j];
  float s, c;
  sincosf(angle, &s, &c);
  const float scale = inv_freq[j] == 0.0f ? 1.0f : scaling;  // 0: a pair that does not rotate
  c *= scale;
  s *= scale;
  pdl_wait();
  T* v = x + th * 2 * half;
  const float a = to_float(v[j]), b = to_float(v[j + half]);
  v[j] = from_float<T>(a * c - b * s);
  v[j + half] = from_float<T>(b * c + a * s);
}

// One thread per element of src [B, S, H, D] -> cache [B, H, cap, D] at start + s.
template <class T>
__global__ void store_kv_kernel(const T* src, T* cache, long long n, int seq, int heads, int dim,
                                long long cap, long long start, const int* start_dev) {
  pdl_wait();
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const long long base = start_dev ? *start_dev : start;
  const int d = static_cast<int>(i % dim);
  const int h = static_cast<int>((i / dim) % heads);
  const long long s = (i / (static_cast<long long>(dim) * heads)) % seq;
  const long long b = i / (static_cast<long long>(dim) * heads * seq);
  cache[((b * heads + h) * cap + base + s) * dim + d] = src[i];
}

constexpr int kRopeWarps = 8;  // a block shares its token's cos/sin table among 8 heads
constexpr int kMaxHeadDim = 256;

// One warp per head of one token: q heads first, then kv heads. A head's vector goes through
// shared memory so RoPE's partner element (i +- D/2) can be read whatever D is. Norm and RoPE
// round to the activation type where the separate kernels would store it.
template <class T, class W>
__global__ void __launch_bounds__(kRopeWarps * 32)
    rope_store_kernel(T* q, const T* k, const T* v, const W* q_norm, const W* k_norm, float eps,
                      const int* positions, const float* inv_freq, float scaling, T* k_cache,
                      T* v_cache, int seq, int heads, int kv_heads, int dim, long long cap,
                      long long start, const int* start_dev) {
  __shared__ float buf[kRopeWarps][kMaxHeadDim];
  // cos/sin of this token's angles, once per block rather than once per head: at prefill the
  // per-element sincosf was most of the kernel's time.
  __shared__ float cos_t[kMaxHeadDim / 2], sin_t[kMaxHeadDim / 2];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int head = blockIdx.y * kRopeWarps + warp;
  const long long n = blockIdx.x;  // token b * seq + s
  const int half = dim / 2;
  const float pos = static_cast<float>(positions[n]);
  for (int j = threadIdx.x; j < half; j += blockDim.x) {
    float sn, cs;
    sincosf(pos * inv_freq[j], &sn, &cs);
    const float scale = inv_freq[j] == 0.0f ? 1.0f : scaling;  // 0: a pair that does not rotate
    cos_t[j] = cs * scale;
    sin_t[j] = sn * scale;
  }
  pdl_wait();  // the table above reads only the step's inputs (rope_kernel says why)
  __syncthreads();
  if (head >= heads + kv_heads) return;
  const bool is_q = head < heads;
  const int h = is_q ? head : head - heads;
  const T* src = is_q ? q + (n * heads + h) * dim : k + (n * kv_heads + h) * dim;
  const W* norm = is_q ? q_norm : k_norm;
  float* vals = buf[warp];
  float ss = 0;
  for (int i = lane; i < dim; i += 32) {
    const float x = to_float(src[i]);
    vals[i] = x;
    ss += x * x;
  }
  if (norm) {
    const float r = rsqrtf(warp_sum(ss) / static_cast<float>(dim) + eps);
    for (int i = lane; i < dim; i += 32) {
      vals[i] = to_float(from_float<T>(to_float(norm[i]) * to_float(from_float<T>(vals[i] * r))));
    }
  }
  __syncwarp();
  const long long b = n / seq, s = n % seq;
  const long long base = start_dev ? *start_dev : start;
  T* dst = is_q ? q + (n * heads + h) * dim : k_cache + ((b * kv_heads + h) * cap + base + s) * dim;
  for (int i = lane; i < dim; i += 32) {
    const int j = i < half ? i : i - half;
    const float cs = cos_t[j], sn = sin_t[j];
    const float out =
        i < half ? vals[i] * cs - vals[i + half] * sn : vals[i] * cs + vals[i - half] * sn;
    dst[i] = from_float<T>(out);
  }
  if (!is_q) {
    const T* vs = v + (n * kv_heads + h) * dim;
    T* vd = v_cache + ((b * kv_heads + h) * cap + base + s) * dim;
    for (int i = lane; i < dim; i += 32) vd[i] = vs[i];
  }
}

void rope_store(const ops::RopeStoreArgs& a) {
  const long long tokens = a.q.size(0);
  const int heads = static_cast<int>(a.q.size(1)), dim = static_cast<int>(a.q.size(2));
  const int kv_heads = static_cast<int>(a.k.size(2)), seq = static_cast<int>(a.k.size(1));
  if (tokens == 0) return;
  if (dim > kMaxHeadDim) {
    throw Error("rope_store: head_dim " + std::to_string(dim) + " exceeds the CUDA kernel's " +
                std::to_string(kMaxHeadDim));
  }
  const int* start_dev = a.start_on_device.defined() ? a.start_on_device.data<int>() : nullptr;
  const dim3 grid(static_cast<unsigned>(tokens), blocks_for(heads + kv_heads, kRopeWarps));
  dispatch_float(a.q.dtype(), "rope_store", [&](auto t) {
    const DType nd = a.q_norm.defined() ? a.q_norm.dtype() : a.q.dtype();
    dispatch_float(nd, "rope_store", [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      launch(rope_store_kernel<T, W>, grid, kRopeWarps * 32, 0, stream_of(a.q.device()),
             a.q.data<T>(), a.k.data<T>(), a.v.data<T>(),
             a.q_norm.defined() ? a.q_norm.data<W>() : nullptr,
             a.k_norm.defined() ? a.k_norm.data<W>() : nullptr, a.eps, a.positions.data<int>(),
             a.inv_freq.data<float>(), a.scaling, a.k_cache.data<T>(), a.v_cache.data<T>(), seq,
             heads, kv_heads, dim, a.k_cache.size(2), a.start, start_dev);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void rope(const ops::RopeArgs& a) {
  const long long tokens = a.x.size(0);
  const int heads = static_cast<int>(a.x.size(1)), half = static_cast<int>(a.x.size(2) / 2);
  const long long n = tokens * heads * half;
  if (n == 0) return;
  dispatch_float(a.x.dtype(), "rope", [&](auto t) {
    using T = decltype(t);
    launch(rope_kernel<T>, blocks_for(n, kThreads), kThreads, 0, stream_of(a.x.device()),
           a.x.data<T>(), a.positions.data<int>(), a.inv_freq.data<float>(), tokens, heads, half,
           a.scaling);
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void store_kv(const ops::StoreKvArgs& a) {
  const long long n = a.src.numel();
  if (n == 0) return;
  const int* start_dev = a.start_on_device.defined() ? a.start_on_device.data<int>() : nullptr;
  dispatch_float(a.src.dtype(), "store_kv", [&](auto t) {
    using T = decltype(t);
    launch(store_kv_kernel<T>, blocks_for(n, kThreads), kThreads, 0, stream_of(a.src.device()),
           a.src.data<T>(), a.cache.data<T>(), n, static_cast<int>(a.src.size(1)),
           static_cast<int>(a.src.size(2)), static_cast<int>(a.src.size(3)), a.cache.size(2),
           a.start, start_dev);
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_rope() {
  for (DType act : cuda::kFloatTypes) {
    register_kernel<ops::RopeArgs>(ops::kRope, DeviceType::cuda, act, act, &cuda::rope);
    register_kernel<ops::StoreKvArgs>(ops::kStoreKv, DeviceType::cuda, act, act, &cuda::store_kv);
    for (DType w : cuda::kFloatTypes) {  // w: the q/k norm weights' type (act when none)
      register_kernel<ops::RopeStoreArgs>(ops::kRopeStore, DeviceType::cuda, act, w,
                                          &cuda::rope_store);
    }
  }
}

}  // namespace anvil
