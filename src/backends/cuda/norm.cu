// RMSNorm: one block per row, float32 statistics. The normalised value is rounded to the
// activation type before the weight multiplies it, as transformers' LlamaRMSNorm does. Also the
// residual add before a norm (add_rms_norm) and a normalised block output's add after it
// (rms_norm_add).
#include <cstdlib>

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

__device__ __forceinline__ float block_sum(float v) {
  __shared__ float partial[kThreads / 32];
  v = warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float total = 0;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w) total += partial[w];
  return total;
}

// One block per row: a decode step has a single row, which one warp would walk alone.
// With `delta`, x += delta first (rounded to the activation type, as a residual add in that
// type is) and the norm is of the new x. With `Accumulate`, the normalised row is added into
// out (rms_norm_add: both roundings the separate norm and add would make) instead of written.
template <class T, class W, bool Accumulate = false>
__global__ void __launch_bounds__(kThreads)
    rms_norm_kernel(T* x, const T* delta, const W* weight, T* out, int dim, float eps) {
  pdl_wait();
  T* xr = x + static_cast<long long>(blockIdx.x) * dim;
  float ss = 0;
  for (int i = threadIdx.x; i < dim; i += kThreads) {
    float v = to_float(xr[i]);
    if (delta) {
      const T sum =
          from_float<T>(v + to_float(delta[static_cast<long long>(blockIdx.x) * dim + i]));
      xr[i] = sum;
      v = to_float(sum);
    }
    ss += v * v;
  }
  const float r = rsqrtf(block_sum(ss) / static_cast<float>(dim) + eps);
  T* o = out + static_cast<long long>(blockIdx.x) * dim;
  for (int i = threadIdx.x; i < dim; i += kThreads) {  // each thread rereads only what it wrote
    // Rounded multiplies and adds: contracted into an FMA, float32's sum would skip the
    // rounding of the product that the separate norm and add make.
    const T normed = from_float<T>(
        __fmul_rn(to_float(weight[i]), to_float(from_float<T>(__fmul_rn(to_float(xr[i]), r)))));
    o[i] = Accumulate ? from_float<T>(__fadd_rn(to_float(o[i]), to_float(normed))) : normed;
  }
}

template <class T, class W>
void launch_norm(const Tensor& x, const Tensor& delta, const Tensor& weight, const Tensor& out,
                 float eps) {
  const long long rows = x.size(0);
  if (rows == 0) return;
  launch(rms_norm_kernel<T, W>, static_cast<unsigned>(rows), kThreads, 0, stream_of(x.device()),
         x.data<T>(), delta.defined() ? delta.data<T>() : nullptr, weight.data<W>(), out.data<T>(),
         static_cast<int>(x.size(1)), eps);
  ANVIL_CUDA_CHECK_LAUNCH();
}

void add_rms_norm(const ops::AddRmsNormArgs& a) {
  dispatch_float(a.x.dtype(), "add_rms_norm", [&](auto t) {
    dispatch_float(a.weight.dtype(), "add_rms_norm", [&](auto w) {
      launch_norm<decltype(t), decltype(w)>(a.x, a.delta, a.weight, a.out, a.eps);
    });
  });
}

// ANVIL_CUDA_NO_NORM_ADD=1 runs the norm and the add as two kernels (for measuring one
// against the other).
void rms_norm_add(const ops::RmsNormAddArgs& a) {
  static const bool off = std::getenv("ANVIL_CUDA_NO_NORM_ADD") != nullptr;
  if (off) {
    ops::rms_norm(a.y, a.weight, a.eps, a.y);
    ops::add(a.residual, a.y, a.residual);
    return;
  }
  const long long rows = a.y.size(0);
  if (rows == 0) return;
  dispatch_float(a.y.dtype(), "rms_norm_add", [&](auto t) {
    dispatch_float(a.weight.dtype(), "rms_norm_add", [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      launch(rms_norm_kernel<T, W, true>, static_cast<unsigned>(rows), kThreads, 0,
             stream_of(a.y.device()), a.y.data<T>(), static_cast<const T*>(nullptr),
             a.weight.data<W>(), a.residual.data<T>(), static_cast<int>(a.y.size(1)), a.eps);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

// x and out may alias: each thread writes only the elements it read.
void rms_norm(const ops::RmsNormArgs& a) {
  dispatch_float(a.x.dtype(), "rms_norm", [&](auto t) {
    dispatch_float(a.weight.dtype(), "rms_norm", [&](auto w) {
      launch_norm<decltype(t), decltype(w)>(a.x, Tensor(), a.weight, a.out, a.eps);
    });
  });
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_norm() {
  for (DType act : cuda::kFloatTypes) {
    for (DType w : cuda::kFloatTypes) {
      register_kernel<ops::RmsNormArgs>(ops::kRmsNorm, DeviceType::cuda, act, w, &cuda::rms_norm);
      register_kernel<ops::AddRmsNormArgs>(ops::kAddRmsNorm, DeviceType::cuda, act, w,
                                           &cuda::add_rms_norm);
      register_kernel<ops::RmsNormAddArgs>(ops::kRmsNormAdd, DeviceType::cuda, act, w,
                                           &cuda::rms_norm_add);
    }
  }
}

}  // namespace anvil
