// ops::token_nll on the device: a block per row takes the row's log-sum-exp in one pass (an
// online maximum and sum per thread, as flash attention's softmax keeps them) and subtracts
// the target's logit, so that a perplexity window returns a float per scored position instead
// of its rows of logits (a 1,024-token window of a 152k vocabulary: 620 MB).
#include <cfloat>
#include <string>

#include "anvil/error.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/launch.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 512;

// (max, sum of e^(x - max)) of two parts, as one. An empty part has max -inf and sum 0.
__device__ __forceinline__ void merge(float& m, double& s, float m2, double s2) {
  if (m2 == -INFINITY) return;
  if (m == -INFINITY) {
    m = m2;
    s = s2;
    return;
  }
  const float top = fmaxf(m, m2);
  s = s * exp(static_cast<double>(m) - top) + s2 * exp(static_cast<double>(m2) - top);
  m = top;
}

__global__ void token_nll_kernel(const float* logits, const long long* targets, long long vocab,
                                 float* out) {
  pdl_wait();
  const long long row = blockIdx.x;
  const float* x = logits + row * vocab;
  // Each thread's running maximum and its sum of e^(x - max) in float (at most ~300 terms a
  // thread for 152k columns), rescaled when the maximum grows.
  float m = -INFINITY, s = 0.0f;
  int nan = 0;  // a NaN anywhere makes the row's loss NaN, as torch's
  for (long long c = threadIdx.x; c < vocab; c += kThreads) {
    const float v = x[c];
    if (v <= m) {
      s += __expf(v - m);
    } else if (v == v) {
      s = (m == -INFINITY ? 0.0f : s * __expf(m - v)) + 1.0f;
      m = v;
    } else {
      nan = 1;
    }
  }
  float bm = m;
  double bs = s;
  for (int o = 16; o > 0; o >>= 1) {
    merge(bm, bs, __shfl_xor_sync(0xffffffffu, bm, o), __shfl_xor_sync(0xffffffffu, bs, o));
  }
  __shared__ float maxes[kThreads / 32];
  __shared__ double sums[kThreads / 32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    maxes[warp] = bm;
    sums[warp] = bs;
  }
  nan = __syncthreads_or(nan);
  if (threadIdx.x != 0) return;
  for (int w = 1; w < kThreads / 32; ++w) merge(bm, bs, maxes[w], sums[w]);
  const long long t = targets[row];
  if (t < 0) {
    out[row] = 0.0f;
  } else if (t >= vocab || nan) {
    out[row] = NAN;  // the op's contract: callers check their ids
  } else {
    out[row] = static_cast<float>(static_cast<double>(bm) + log(bs) - x[t]);
  }
}

void token_nll(const ops::TokenNllArgs& a) {
  const long long rows = a.logits.size(0);
  if (rows == 0) return;
  if (rows > 0x7fffffffLL) {
    throw Error("token_nll: " + std::to_string(rows) + " rows exceed the CUDA kernel's grid");
  }
  launch(token_nll_kernel, static_cast<unsigned>(rows), kThreads, 0, stream_of(a.logits.device()),
         a.logits.data<float>(), a.targets.data<long long>(),
         static_cast<long long>(a.logits.size(1)), a.out.data<float>());
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_token_nll() {
  register_kernel<ops::TokenNllArgs>(ops::kTokenNll, DeviceType::cuda, DType::f32, DType::f32,
                                     &cuda::token_nll);
}

}  // namespace anvil
