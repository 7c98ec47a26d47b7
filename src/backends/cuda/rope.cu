// Rotary embedding (half-split layout, float32 angles as transformers computes them) and the
// KV-cache write, whose start position may come from device memory during graph replay.
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 256;

// One thread per (token, head, i < half): rotates the pair (i, i + half).
template <class T>
__global__ void rope_kernel(T* x, const int* positions, const float* inv_freq, long long tokens,
                            int heads, int half, float scaling) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= tokens * heads * half) return;
  const int j = static_cast<int>(i % half);
  const long long th = i / half;  // token * heads + head
  const long long n = th / heads;
  const float angle = static_cast<float>(positions[n]) * inv_freq[j];
  float s, c;
  sincosf(angle, &s, &c);
  c *= scaling;
  s *= scaling;
  T* v = x + th * 2 * half;
  const float a = to_float(v[j]), b = to_float(v[j + half]);
  v[j] = from_float<T>(a * c - b * s);
  v[j + half] = from_float<T>(b * c + a * s);
}

// One thread per element of src [B, S, H, D] -> cache [B, H, cap, D] at start + s.
template <class T>
__global__ void store_kv_kernel(const T* src, T* cache, long long n, int seq, int heads, int dim,
                                long long cap, long long start, const int* start_dev) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const long long base = start_dev ? *start_dev : start;
  const int d = static_cast<int>(i % dim);
  const int h = static_cast<int>((i / dim) % heads);
  const long long s = (i / (static_cast<long long>(dim) * heads)) % seq;
  const long long b = i / (static_cast<long long>(dim) * heads * seq);
  cache[((b * heads + h) * cap + base + s) * dim + d] = src[i];
}

void rope(const ops::RopeArgs& a) {
  const long long tokens = a.x.size(0);
  const int heads = static_cast<int>(a.x.size(1)), half = static_cast<int>(a.x.size(2) / 2);
  const long long n = tokens * heads * half;
  if (n == 0) return;
  dispatch_float(a.x.dtype(), "rope", [&](auto t) {
    using T = decltype(t);
    rope_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(a.x.device())>>>(
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
    store_kv_kernel<T><<<blocks_for(n, kThreads), kThreads, 0, stream_of(a.src.device())>>>(
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
  }
}

}  // namespace anvil
