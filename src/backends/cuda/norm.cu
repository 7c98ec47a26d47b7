// RMSNorm: one warp per row, float32 statistics. The normalised value is rounded to the
// activation type before the weight multiplies it, as transformers' LlamaRMSNorm does.
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

constexpr int kWarps = 4;

template <class T, class W>
__global__ void rms_norm_kernel(const T* x, const W* weight, T* out, long long rows, int dim,
                                float eps) {
  const long long row = blockIdx.x * static_cast<long long>(kWarps) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* xr = x + row * dim;
  float ss = 0;
  for (int i = lane; i < dim; i += 32) {
    const float v = to_float(xr[i]);
    ss += v * v;
  }
  const float r = rsqrtf(warp_sum(ss) / static_cast<float>(dim) + eps);
  T* o = out + row * dim;
  for (int i = lane; i < dim; i += 32) {
    o[i] = from_float<T>(to_float(weight[i]) * to_float(from_float<T>(to_float(xr[i]) * r)));
  }
}

// x += delta (rounded to the activation type, as a residual add in that type is), then the
// norm of the new x.
template <class T, class W>
__global__ void add_rms_norm_kernel(T* x, const T* delta, const W* weight, T* out, long long rows,
                                    int dim, float eps) {
  const long long row = blockIdx.x * static_cast<long long>(kWarps) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  T* xr = x + row * dim;
  const T* dr = delta + row * dim;
  float ss = 0;
  for (int i = lane; i < dim; i += 32) {
    const T sum = from_float<T>(to_float(xr[i]) + to_float(dr[i]));
    xr[i] = sum;
    const float v = to_float(sum);
    ss += v * v;
  }
  const float r = rsqrtf(warp_sum(ss) / static_cast<float>(dim) + eps);
  T* o = out + row * dim;
  for (int i = lane; i < dim; i += 32) {  // each lane rereads only what it wrote
    o[i] = from_float<T>(to_float(weight[i]) * to_float(from_float<T>(to_float(xr[i]) * r)));
  }
}

void add_rms_norm(const ops::AddRmsNormArgs& a) {
  const long long rows = a.x.size(0);
  const int dim = static_cast<int>(a.x.size(1));
  if (rows == 0) return;
  dispatch_float(a.x.dtype(), "add_rms_norm", [&](auto t) {
    dispatch_float(a.weight.dtype(), "add_rms_norm", [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      add_rms_norm_kernel<T, W>
          <<<blocks_for(rows, kWarps), kWarps * 32, 0, stream_of(a.x.device())>>>(
              a.x.data<T>(), a.delta.data<T>(), a.weight.data<W>(), a.out.data<T>(), rows, dim,
              a.eps);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void rms_norm(const ops::RmsNormArgs& a) {
  const long long rows = a.x.size(0);
  const int dim = static_cast<int>(a.x.size(1));
  if (rows == 0) return;
  dispatch_float(a.x.dtype(), "rms_norm", [&](auto t) {
    dispatch_float(a.weight.dtype(), "rms_norm", [&](auto w) {
      using T = decltype(t);
      using W = decltype(w);
      rms_norm_kernel<T, W><<<blocks_for(rows, kWarps), kWarps * 32, 0, stream_of(a.x.device())>>>(
          a.x.data<T>(), a.weight.data<W>(), a.out.data<T>(), rows, dim, a.eps);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
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
    }
  }
}

}  // namespace anvil
