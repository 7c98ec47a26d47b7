// Greedy selection on the device: argmax per row, so a decode step returns 8 bytes per row to
// the host instead of the whole vocabulary of logits.
#include <cfloat>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 1024;

// (value, index) ordering of torch.argmax: larger value wins, NaN beats everything, ties go to
// the smaller index.
__device__ __forceinline__ bool better(float v, long long i, float best, long long best_i) {
  const bool vn = v != v, bn = best != best;
  if (vn || bn) return vn && (!bn || i < best_i);
  return v > best || (v == best && i < best_i);
}

template <class T>
__global__ void argmax_kernel(const T* x, long long* out, long long cols) {
  const T* row = x + blockIdx.x * cols;
  float best = -FLT_MAX;
  long long best_i = cols;
  for (long long i = threadIdx.x; i < cols; i += blockDim.x) {
    const float v = to_float(row[i]);
    if (best_i == cols || better(v, i, best, best_i)) {
      best = v;
      best_i = i;
    }
  }
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, best, o);
    const long long oi = __shfl_xor_sync(0xffffffffu, best_i, o);
    if (oi != cols && (best_i == cols || better(ov, oi, best, best_i))) {
      best = ov;
      best_i = oi;
    }
  }
  __shared__ float vals[32];
  __shared__ long long idx[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    vals[warp] = best;
    idx[warp] = best_i;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) {
      if (idx[w] != cols && (best_i == cols || better(vals[w], idx[w], best, best_i))) {
        best = vals[w];
        best_i = idx[w];
      }
    }
    out[blockIdx.x] = best_i;
  }
}

void argmax(const ops::ArgmaxArgs& a) {
  const long long rows = a.x.size(0), cols = a.x.size(1);
  if (rows == 0) return;
  dispatch_float(a.x.dtype(), "argmax", [&](auto t) {
    using T = decltype(t);
    argmax_kernel<T><<<static_cast<unsigned>(rows), kThreads, 0, stream_of(a.x.device())>>>(
        a.x.data<T>(), a.out.data<long long>(), cols);
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_sampling() {
  for (DType act : cuda::kFloatTypes) {
    register_kernel<ops::ArgmaxArgs>(ops::kArgmax, DeviceType::cuda, act, act, &cuda::argmax);
  }
}

}  // namespace anvil
