// ops::token_nll and ops::token_kl on the device: a block per row takes the row's log-sum-exp in
// one pass (an online maximum and sum per thread, as flash attention's softmax keeps them) and
// subtracts the target's logit, or takes two rows' log-sum-exps and largest entries, then their
// KL divergence in a second pass, so that a perplexity window returns a float or two per scored
// position instead of its rows of logits (a 1,024-token window of a 152k vocabulary: 620 MB).
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

// A thread's online log-sum-exp state: running maximum, sum of e^(x - max) (float: at most
// ~300 terms a thread for 152k columns), NaN seen.
struct Online {
  float m = -INFINITY, s = 0.0f;
  int nan = 0;
  __device__ __forceinline__ void take(float v) {
    if (v <= m) {
      // -inf while nothing larger was seen adds nothing (e^(-inf + inf) would be NaN).
      if (m != -INFINITY) s += __expf(v - m);
    } else if (v == v) {
      s = (m == -INFINITY ? 0.0f : s * __expf(m - v)) + 1.0f;
      m = v;
    } else {
      nan = 1;
    }
  }
};

// A block's (max, sum) pair from its threads', in double; every thread gets the result.
__device__ void block_logsumexp(float m, double s, float* maxes, double* sums, float& bm,
                                double& bs) {
  bm = m;
  bs = s;
  for (int o = 16; o > 0; o >>= 1) {
    merge(bm, bs, __shfl_xor_sync(0xffffffffu, bm, o), __shfl_xor_sync(0xffffffffu, bs, o));
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    maxes[warp] = bm;
    sums[warp] = bs;
  }
  __syncthreads();
  bm = maxes[0];
  bs = sums[0];
  for (int w = 1; w < kThreads / 32; ++w) merge(bm, bs, maxes[w], sums[w]);
  __syncthreads();  // the arrays are reused
}

// The first index of the largest value among the block's (value, index) pairs (no NaN).
__device__ long long block_argmax(float v, long long i, float* vals, long long* idx) {
  for (int o = 16; o > 0; o >>= 1) {
    const float v2 = __shfl_xor_sync(0xffffffffu, v, o);
    const long long i2 = __shfl_xor_sync(0xffffffffu, i, o);
    if (v2 > v || (v2 == v && i2 < i)) {
      v = v2;
      i = i2;
    }
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    vals[warp] = v;
    idx[warp] = i;
  }
  __syncthreads();
  v = vals[0];
  i = idx[0];
  for (int w = 1; w < kThreads / 32; ++w) {
    if (vals[w] > v || (vals[w] == v && idx[w] < i)) {
      v = vals[w];
      i = idx[w];
    }
  }
  __syncthreads();
  return i;
}

__global__ void token_nll_kernel(const float* logits, const long long* targets, long long vocab,
                                 float* out) {
  pdl_wait();
  const long long row = blockIdx.x;
  const float* x = logits + row * vocab;
  Online o;
  for (long long c = threadIdx.x; c < vocab; c += kThreads) o.take(x[c]);
  __shared__ float maxes[kThreads / 32];
  __shared__ double sums[kThreads / 32];
  const int nan = __syncthreads_or(o.nan);  // a NaN anywhere makes the row's loss NaN, as torch's
  float m;
  double sum;
  block_logsumexp(o.m, o.s, maxes, sums, m, sum);
  if (threadIdx.x != 0) return;
  const long long t = targets[row];
  if (t < 0) {
    out[row] = 0.0f;
  } else if (t >= vocab || nan) {
    out[row] = NAN;  // the op's contract: callers check their ids
  } else {
    out[row] = static_cast<float>(static_cast<double>(m) + log(sum) - x[t]);
  }
}

__global__ void token_kl_kernel(const float* reference, const float* logits, long long vocab,
                                float* kl, long long* same_top) {
  pdl_wait();
  const long long row = blockIdx.x;
  const float* p = reference + row * vocab;
  const float* q = logits + row * vocab;
  Online op, oq;
  float best_p = -INFINITY, best_q = -INFINITY;
  long long at_p = vocab, at_q = vocab;  // vocab: none seen (all -inf or NaN)
  for (long long c = threadIdx.x; c < vocab; c += kThreads) {
    const float vp = p[c], vq = q[c];
    op.take(vp);
    oq.take(vq);
    // Columns come in increasing order per thread: only a larger value moves the pick.
    if (vp > best_p || at_p == vocab) {
      if (vp == vp) {
        best_p = vp;
        at_p = c;
      }
    }
    if (vq > best_q || at_q == vocab) {
      if (vq == vq) {
        best_q = vq;
        at_q = c;
      }
    }
  }
  __shared__ float maxes[kThreads / 32];
  __shared__ double sums[kThreads / 32];
  __shared__ long long idx[kThreads / 32];
  const int nan = __syncthreads_or(op.nan | oq.nan);
  float mp, mq;
  double sp, sq;
  block_logsumexp(op.m, op.s, maxes, sums, mp, sp);
  block_logsumexp(oq.m, oq.s, maxes, sums, mq, sq);
  const long long top_p = block_argmax(best_p, at_p, maxes, idx);
  const long long top_q = block_argmax(best_q, at_q, maxes, idx);
  const double lse_p = static_cast<double>(mp) + log(sp), lse_q = static_cast<double>(mq) + log(sq);
  // log P - log Q = p - q - (lse_p - lse_q); a term where P is 0 adds nothing.
  const auto fp = static_cast<float>(lse_p), shift = static_cast<float>(lse_p - lse_q);
  float t = 0.0f;
  for (long long c = threadIdx.x; c < vocab; c += kThreads) {
    const float vp = p[c];
    const float prob = __expf(vp - fp);
    if (prob > 0.0f) t += prob * ((vp - q[c]) - shift);
  }
  double total = t;
  for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o);
  if (threadIdx.x % 32 == 0) sums[threadIdx.x / 32] = total;
  __syncthreads();
  if (threadIdx.x != 0) return;
  for (int w = 1; w < kThreads / 32; ++w) total += sums[w];
  kl[row] = nan ? NAN : static_cast<float>(total);
  same_top[row] = top_p == top_q ? 1 : 0;
}

void token_kl(const ops::TokenKlArgs& a) {
  const long long rows = a.logits.size(0);
  if (rows == 0) return;
  if (rows > 0x7fffffffLL) {
    throw Error("token_kl: " + std::to_string(rows) + " rows exceed the CUDA kernel's grid");
  }
  launch(token_kl_kernel, static_cast<unsigned>(rows), kThreads, 0, stream_of(a.logits.device()),
         a.reference.data<float>(), a.logits.data<float>(),
         static_cast<long long>(a.logits.size(1)), a.kl.data<float>(),
         a.same_top.data<long long>());
  ANVIL_CUDA_CHECK_LAUNCH();
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

void register_cuda_token_losses() {
  register_kernel<ops::TokenNllArgs>(ops::kTokenNll, DeviceType::cuda, DType::f32, DType::f32,
                                     &cuda::token_nll);
  register_kernel<ops::TokenKlArgs>(ops::kTokenKl, DeviceType::cuda, DType::f32, DType::f32,
                                    &cuda::token_kl);
}

}  // namespace anvil
