// Element types of the CUDA kernels: every kernel is a template over the stored type and does
// its arithmetic in float32; `dispatch` turns a runtime DType into the template argument.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string>

#include "anvil/dtype.h"
#include "anvil/error.h"
#include "backends/cuda/cuda_context.h"

namespace anvil::cuda {

__device__ __forceinline__ float to_float(float v) {
  return v;
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ __forceinline__ float to_float(__half v) {
  return __half2float(v);
}

template <class T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half(v);
}

/// Calls f(T{}) with T the CUDA type of `d` (f32, bf16 or f16); throws for anything else.
template <class F>
void dispatch_float(DType d, const char* op, F&& f) {
  switch (d) {
    case DType::f32:
      f(float{});
      return;
    case DType::bf16:
      f(__nv_bfloat16{});
      return;
    case DType::f16:
      f(__half{});
      return;
    default:
      throw Error(std::string(op) + ": dtype " + std::string(dtype_name(d)) +
                  " is not supported on cuda");
  }
}

// The first key a query at cache index `at` sees under a sliding window of `window` keys (0:
// none): ops::first_visible_key on the device, for every attention kernel.
__device__ __forceinline__ long long first_visible_key(long long at, long long window) {
  return window > 0 && at >= window ? at - window + 1 : 0;
}

// Gemma 2's attention logit softcapping, tanh(s / cap) * cap on the scaled score (cap 0: none);
// every attention kernel applies it before the mask and the softmax, as the CPU reference does.
__device__ __forceinline__ float soft_capped(float score, float cap) {
  return cap > 0.0f ? tanhf(score / cap) * cap : score;
}

// The gated activation of gate value g: SiLU, or GELU's tanh approximation (GeGLU) written as
// g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)), the form the elementwise GegluOp computes.
template <bool Gelu>
__device__ __forceinline__ float gated(float g) {
  if constexpr (Gelu) {
    const float a = g * (1.5957691216057308f + 1.5957691216057308f * 0.044715f * g * g);
    return g / (1.0f + __expf(-a));
  } else {
    return g / (1.0f + __expf(-g));
  }
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

inline unsigned blocks_for(long long n, int threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace anvil::cuda
