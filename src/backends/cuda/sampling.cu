// Selection on the device: argmax per row for greedy decoding, so a decode step returns 8 bytes
// per row to the host instead of the whole vocabulary of logits, the top-K candidates per row
// for sampling with top-k (K <= 128), the repetition penalty applied in place before them, and
// the warpers and the draw over those candidates (sample_candidates).
#include <cfloat>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anvil/error.h"
#include "backends/cuda/cuda_allocator.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/launch.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

// (value, index) ordering of torch.argmax: larger value wins, NaN beats everything, ties go to
// the smaller index.
__device__ __forceinline__ bool better(float v, long long i, float best, long long best_i) {
  const bool vn = v != v, bn = best != best;
  if (vn || bn) return vn && (!bn || i < best_i);
  return v > best || (v == best && i < best_i);
}

constexpr int kColsPerBlock = 1024;
constexpr int kMaxParts = 1024;

struct Best {
  float v;
  long long i;  // `none` when nothing was seen
};

__device__ __forceinline__ void take(Best& b, float v, long long i, long long none) {
  if (i != none && (b.i == none || better(v, i, b.v, b.i))) {
    b.v = v;
    b.i = i;
  }
}

__device__ __forceinline__ Best block_best(Best b, long long none) {
  for (int o = 16; o > 0; o >>= 1) {
    take(b, __shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.i, o), none);
  }
  __shared__ float vals[32];
  __shared__ long long idx[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) {
    vals[warp] = b.v;
    idx[warp] = b.i;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) take(b, vals[w], idx[w], none);
  }
  return b;
}

// Pass 1: block (part, row) finds the best of its columns. Many blocks read the vocabulary in
// parallel (one block alone read 150k logits in 72 us on an H200).
template <class T>
__global__ void argmax_parts_kernel(const T* x, long long cols, float* part_v, long long* part_i,
                                    int parts) {
  pdl_wait();
  const long long row = blockIdx.y;
  const long long c0 = blockIdx.x * static_cast<long long>(kColsPerBlock);
  const long long c1 = c0 + kColsPerBlock < cols ? c0 + kColsPerBlock : cols;
  Best b{-FLT_MAX, cols};
  for (long long c = c0 + threadIdx.x; c < c1; c += blockDim.x) {
    take(b, to_float(x[row * cols + c]), c, cols);
  }
  b = block_best(b, cols);
  if (threadIdx.x == 0) {
    part_v[row * parts + blockIdx.x] = b.v;
    part_i[row * parts + blockIdx.x] = b.i;
  }
}

// Pass 2: one block per row over the parts.
__global__ void argmax_final_kernel(const float* part_v, const long long* part_i, int parts,
                                    long long cols, long long* out) {
  pdl_wait();
  const long long row = blockIdx.x;
  Best b{-FLT_MAX, cols};
  for (int p = threadIdx.x; p < parts; p += blockDim.x) {
    take(b, part_v[row * parts + p], part_i[row * parts + p], cols);
  }
  b = block_best(b, cols);
  if (threadIdx.x == 0) out[row] = b.i;
}

void argmax(const ops::ArgmaxArgs& a) {
  static std::map<int, std::vector<std::shared_ptr<Buffer>>> scratch;
  const long long rows = a.x.size(0), cols = a.x.size(1);
  if (rows == 0) return;
  const long long parts_ll = (cols + kColsPerBlock - 1) / kColsPerBlock;
  if (parts_ll > kMaxParts) {
    throw Error("argmax: rows of " + std::to_string(cols) + " values exceed the CUDA kernel's " +
                std::to_string(kMaxParts * kColsPerBlock));
  }
  const int parts = static_cast<int>(parts_ll);
  auto& list = scratch[a.x.device().ordinal()];
  const size_t bytes = static_cast<size_t>(rows * parts) * (sizeof(float) + sizeof(long long));
  if (list.empty() || list.back()->nbytes() < bytes) list.push_back(allocate(a.x.device(), bytes));
  auto* part_i = static_cast<long long*>(list.back()->data());
  auto* part_v = reinterpret_cast<float*>(part_i + rows * parts);
  const cudaStream_t stream = stream_of(a.x.device());
  dispatch_float(a.x.dtype(), "argmax", [&](auto t) {
    using T = decltype(t);
    launch(argmax_parts_kernel<T>, dim3(static_cast<unsigned>(parts), static_cast<unsigned>(rows)),
           256, 0, stream, a.x.data<T>(), cols, part_v, part_i, parts);
  });
  ANVIL_CUDA_CHECK_LAUNCH();
  launch(argmax_final_kernel, static_cast<unsigned>(rows), 256, 0, stream, part_v, part_i, parts,
         cols, a.out.data<long long>());
  ANVIL_CUDA_CHECK_LAUNCH();
}

// Top-K per row (sampling's candidates), in two launches. Each block of the first takes 4,096
// columns of a row, selects their K largest by a radix select over order-preserving 32-bit keys
// in shared memory, and writes them packed as (key << 32 | ~column); a block per row of the
// second selects the K largest of those packed values (distinct: no ties) and sorts them by
// (value desc, column asc). A single block per row walking 150k columns took ~270 us per token.
constexpr int kTopKMax = 128;
constexpr int kChunk = 4096;
constexpr int kPartThreads = 256;
constexpr int kFinalThreads = 1024;

// Larger values give larger keys; NaN above everything (torch.topk); -0 and +0 one key.
__device__ __forceinline__ unsigned order_key(float v) {
  if (v != v) return 0xffffffffu;
  const unsigned u = v == 0.0f ? 0u : __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// Block-wide radix select of the k-th largest of n keys (32- or 64-bit, 8 bits per pass):
// leaves it in *threshold and in *need how many keys equal to it belong to the k largest.
// Histogram counts are aggregated per warp (logits share their top key bits). Every thread of
// the block must call it.
// With `whole` (a shared int) it stops at the first pass whose digit's keys are all among the
// k largest, *threshold then the smallest key with that prefix: the keys >= it are exactly the
// k largest, which the later passes would only have told apart (for distinct keys read by
// `>=`; a caller taking ties at the threshold by equality needs every pass).
template <class Key, class Get>
__device__ void radix_select(Get get, int n, int k, unsigned* hist, Key* threshold, int* need,
                             int* whole = nullptr) {
  Key prefix = 0, mask = 0;
  int left = k;
  for (int shift = static_cast<int>(sizeof(Key)) * 8 - 8; shift >= 0; shift -= 8) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x) hist[i] = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      const Key key = get(i);
      const unsigned digit =
          (key & mask) == prefix ? static_cast<unsigned>((key >> shift) & 255u) : 256u;
      const unsigned peers = __match_any_sync(__activemask(), digit);
      if (digit != 256u && static_cast<int>(threadIdx.x % 32) == __ffs(peers) - 1) {
        atomicAdd(&hist[digit], static_cast<unsigned>(__popc(peers)));
      }
    }
    __syncthreads();
    // The digit holding the left-th largest key: the largest d whose count from 255 down
    // reaches `left` (0 if none does). Found by the first warp: lane i sums digits 255 - 8i down
    // to 248 - 8i, a prefix sum over the lanes picks the lane whose digits hold it, and that
    // lane walks its eight. One thread walking all 256 counts from shared memory had been most
    // of the kernels' time (~4 us a pass, 4 passes here and 8 in the final's 64-bit keys).
    if (threadIdx.x < 32) {
      const int lane = static_cast<int>(threadIdx.x), top = 255 - 8 * lane, low = top - 7;
      unsigned own = 0;
      for (int d = top; d >= low; --d) own += hist[d];
      unsigned upto = own;  // counts of digits 255 down to low
      for (int o = 1; o < 32; o <<= 1) {
        const unsigned v = __shfl_up_sync(0xffffffffu, upto, o);
        if (lane >= o) upto += v;
      }
      const unsigned reached = __ballot_sync(0xffffffffu, upto >= static_cast<unsigned>(left));
      const int owner = reached ? __ffs(reached) - 1 : 31;
      if (lane == owner) {
        int d = top;
        unsigned above = upto - own;
        while (d > low && above + hist[d] < static_cast<unsigned>(left)) above += hist[d--];
        *threshold = prefix | (static_cast<Key>(d) << shift);
        *need = left - static_cast<int>(above);
        if (whole) *whole = hist[d] == static_cast<unsigned>(*need);
      }
    }
    __syncthreads();
    if (whole && *whole) return;  // read by every thread before the next pass can write it
    prefix = *threshold;
    left = *need;
    mask |= static_cast<Key>(255u) << shift;
  }
}

__global__ void __launch_bounds__(kPartThreads)
    top_k_parts_kernel(const float* __restrict__ x, long long cols, int k, int parts,
                       unsigned long long* __restrict__ cand) {
  pdl_wait();
  __shared__ unsigned keys[kChunk];
  __shared__ unsigned hist[256];
  __shared__ unsigned threshold_s;
  __shared__ int need_s, above_n, tie_n;
  const long long row = blockIdx.y, c0 = static_cast<long long>(blockIdx.x) * kChunk;
  const int n = static_cast<int>(cols - c0 < kChunk ? cols - c0 : kChunk);
  const float* xr = x + row * cols + c0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) keys[i] = order_key(xr[i]);
  __syncthreads();
  const int kk = k < n ? k : n;
  radix_select<unsigned>([&](int i) { return keys[i]; }, n, kk, hist, &threshold_s, &need_s);
  const unsigned threshold = threshold_s;
  const int need = need_s, greater = kk - need;
  if (threadIdx.x == 0) above_n = tie_n = 0;
  __syncthreads();
  unsigned long long* out = cand + (row * parts + blockIdx.x) * k;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const unsigned key = keys[i];
    const unsigned long long packed = (static_cast<unsigned long long>(key) << 32) |
                                      (0xffffffffu - static_cast<unsigned>(c0 + i));
    if (key > threshold) {
      out[atomicAdd(&above_n, 1)] = packed;
    } else if (key == threshold) {
      const int t = atomicAdd(&tie_n, 1);
      if (t < need) out[greater + t] = packed;
    }
  }
  for (int j = kk + threadIdx.x; j < k; j += blockDim.x) out[j] = 0;  // a short last chunk
}

__global__ void __launch_bounds__(kFinalThreads)
    top_k_final_kernel(const float* __restrict__ x, long long cols,
                       const unsigned long long* __restrict__ cand, int n_cand, int k,
                       float* __restrict__ values, long long* __restrict__ indices) {
  pdl_wait();
  __shared__ unsigned hist[256];
  __shared__ unsigned long long picked[kTopKMax];
  __shared__ unsigned long long threshold_s;
  __shared__ int need_s, picked_n, whole_s;
  const long long row = blockIdx.x;
  const unsigned long long* cr = cand + row * n_cand;
  // Packed values are distinct, so the passes may stop once the threshold's digit is whole.
  radix_select<unsigned long long>([&](int i) { return cr[i]; }, n_cand, k, hist, &threshold_s,
                                   &need_s, &whole_s);
  const unsigned long long threshold = threshold_s;
  if (threadIdx.x == 0) picked_n = 0;
  __syncthreads();
  for (int i = threadIdx.x; i < n_cand; i += blockDim.x) {
    if (cr[i] >= threshold) picked[atomicAdd(&picked_n, 1)] = cr[i];
  }
  int n = 1;
  while (n < k) n <<= 1;
  __syncthreads();
  for (int i = k + threadIdx.x; i < n; i += blockDim.x) picked[i] = 0;  // key 0: below -inf
  __syncthreads();
  for (int size = 2; size <= n; size <<= 1) {  // bitonic sort, descending
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const int j = i ^ stride;
        if (j > i) {
          const bool descending = (i & size) == 0;
          const unsigned long long a = picked[i], b = picked[j];
          if ((a < b) == descending) {
            picked[i] = b;
            picked[j] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  const float* xr = x + row * cols;
  for (int j = threadIdx.x; j < k; j += blockDim.x) {
    const unsigned c = 0xffffffffu - static_cast<unsigned>(picked[j] & 0xffffffffu);
    values[row * k + j] = xr[c];
    indices[row * k + j] = c;
  }
}

void top_k(const ops::TopKArgs& a) {
  static std::map<int, std::shared_ptr<Buffer>> scratch;
  const long long rows = a.x.size(0), cols = a.x.size(1), k = a.values.size(1);
  if (rows == 0) return;
  if (k > kTopKMax || cols >= 0xffffffffLL) {
    throw Error("top_k: K = " + std::to_string(k) + " over " + std::to_string(cols) +
                " columns exceeds the CUDA kernel's " + std::to_string(kTopKMax) +
                " (and 2^32 - 1 columns)");
  }
  const long long parts = (cols + kChunk - 1) / kChunk;
  const size_t bytes = static_cast<size_t>(rows * parts * k) * sizeof(unsigned long long);
  std::shared_ptr<Buffer>& buf = scratch[a.x.device().ordinal()];
  if (!buf || buf->nbytes() < bytes) buf = allocate(a.x.device(), bytes);
  auto* cand = static_cast<unsigned long long*>(buf->data());
  const cudaStream_t stream = stream_of(a.x.device());
  launch(top_k_parts_kernel, dim3(static_cast<unsigned>(parts), static_cast<unsigned>(rows)),
         kPartThreads, 0, stream, a.x.data<float>(), cols, static_cast<int>(k),
         static_cast<int>(parts), cand);
  ANVIL_CUDA_CHECK_LAUNCH();
  launch(top_k_final_kernel, static_cast<unsigned>(rows), kFinalThreads, 0, stream,
         a.x.data<float>(), cols, cand, static_cast<int>(parts * k), static_cast<int>(k),
         a.values.data<float>(), a.indices.data<long long>());
  ANVIL_CUDA_CHECK_LAUNCH();
}

// A block per row; each listed id is distinct within its row, so no two threads touch one
// logit.
__global__ void repetition_penalty_kernel(float* logits, long long vocab, const long long* ids,
                                          long long m, float penalty) {
  pdl_wait();
  const long long row = blockIdx.x;
  float* x = logits + row * vocab;
  for (long long j = threadIdx.x; j < m; j += blockDim.x) {
    const long long id = ids[row * m + j];
    if (id < 0 || id >= vocab) continue;
    const float s = x[id];
    x[id] = s < 0.0f ? s * penalty : s / penalty;
  }
}

void repetition_penalty(const ops::RepetitionPenaltyArgs& a) {
  const long long rows = a.logits.size(0), m = a.ids.size(1);
  if (rows == 0 || m == 0) return;
  launch(repetition_penalty_kernel, static_cast<unsigned>(rows), 256, 0,
         stream_of(a.logits.device()), a.logits.data<float>(), a.logits.size(1),
         a.ids.data<long long>(), m, a.penalty);
  ANVIL_CUDA_CHECK_LAUNCH();
}

// sample_candidates: a warp per row, the row's candidates (at most kMaxSampled) four per lane.
// Every step is the host's (sample_from_candidates, logits_processor.cc) with the same float and
// double operations: IEEE float division for the temperature, exp in double, every sum in the
// host's order by lane 0. (The host sums top-p's masses in a selection order for more than 64
// live tokens; a boundary could differ from it only where a prefix's mass lies within a
// rounding of the threshold.)
constexpr int kMaxSampled = 128;

// The host's top-p key (core/float_order.h's ordered_bits above the position), on the device.
__device__ __forceinline__ unsigned long long best_first_key(float v, int j) {
  const unsigned bits = __float_as_uint(v + 0.0f);  // -0 + 0 is +0
  const unsigned ordered = (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
  return static_cast<unsigned long long>(ordered) << 32 | static_cast<unsigned>(j);
}

struct SampleRow {
  float w[kMaxSampled];        // the survivors' scores after the temperature, in index order
  long long tok[kMaxSampled];  // their token ids
  double p[kMaxSampled];       // softmax over the live ones
  int live[kMaxSampled];       // 1 while in play
  int rank[kMaxSampled];       // top-p's best-first rank among the live ones
};

// softmax(w) at the live entries into p (0 elsewhere): exp(w - max) in double, summed in index
// order. Every lane calls it; lane 0 sums.
__device__ void live_softmax(SampleRow& r, int n) {
  const int lane = threadIdx.x;
  float m = -INFINITY;
  for (int j = lane; j < n; j += 32) {
    if (r.live[j]) m = fmaxf(m, r.w[j]);
  }
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  for (int j = lane; j < n; j += 32) {
    r.p[j] = r.live[j] ? exp(static_cast<double>(r.w[j]) - static_cast<double>(m)) : 0.0;
  }
  __syncwarp();
  __shared__ double total;
  if (lane == 0) {
    double sum = 0;
    for (int j = 0; j < n; ++j) {
      if (r.live[j]) sum += r.p[j];
    }
    total = sum;
  }
  __syncwarp();
  for (int j = lane; j < n; j += 32) r.p[j] /= total;
  __syncwarp();
}

__global__ void sample_candidates_kernel(const float* values, const long long* indices,
                                         const double* uniforms, int cands, float temperature,
                                         int top_k, float top_p, float min_p, long long* out,
                                         long long* decided) {
  pdl_wait();
  __shared__ SampleRow r;
  const int lane = threadIdx.x;
  const long long row = blockIdx.x;
  const float* v = values + row * cands;
  const long long* ids = indices + row * cands;
  const auto warm = [&](float x) { return temperature != 1.0f ? __fdiv_rn(x, temperature) : x; };
  // A NaN among the candidates, or every candidate a survivor: undecided.
  const float kth = warm(v[top_k - 1]);
  bool nan = false;
  int survivors = 0;
  for (int i = lane; i < cands; i += 32) {
    nan = nan || v[i] != v[i];
    survivors += warm(v[i]) >= kth;  // the candidates are in descending order
  }
  for (int o = 16; o > 0; o >>= 1) survivors += __shfl_xor_sync(0xffffffffu, survivors, o);
  if (__any_sync(0xffffffffu, nan) || survivors == cands) {
    if (lane == 0) {
      out[row] = decided ? ids[0] : -1;
      if (decided) decided[row] = 0;
    }
    return;
  }
  const int n = survivors;
  // The survivors in index order (ids are distinct): each one's place is the count of smaller ids.
  for (int i = lane; i < n; i += 32) {
    int place = 0;
    for (int j = 0; j < n; ++j) place += ids[j] < ids[i];
    r.w[place] = warm(v[i]);
    r.tok[place] = ids[i];
    r.live[place] = r.w[place] != -INFINITY;
  }
  __syncwarp();
  // Top-k keeps every survivor (each is at or above the top_k-th after the temperature).
  if (top_p < 1.0f) {
    live_softmax(r, n);
    // Best-first by score, ties by the higher place; the smallest run whose mass reaches
    // total - (1 - top_p) stays, at least one token.
    for (int i = lane; i < n; i += 32) {
      int rank = 0;
      if (r.live[i]) {
        const unsigned long long key = best_first_key(r.w[i], i);
        for (int j = 0; j < n; ++j) rank += r.live[j] && best_first_key(r.w[j], j) > key;
      }
      r.rank[i] = rank;
    }
    __syncwarp();
    __shared__ int kept;
    if (lane == 0) {
      double total = 0;
      int live = 0;
      for (int j = 0; j < n; ++j) {
        if (r.live[j]) {
          total += r.p[j];
          ++live;
        }
      }
      int by_rank[kMaxSampled];
      for (int j = 0; j < n; ++j) {
        if (r.live[j]) by_rank[r.rank[j]] = j;
      }
      const double target = total - (1.0 - static_cast<double>(top_p));
      double above = 0;
      kept = live;
      for (int q = 0; q < live; ++q) {
        above += r.p[by_rank[q]];
        if (above >= target) {
          kept = q + 1;
          break;
        }
      }
      kept = max(kept, 1);
    }
    __syncwarp();
    for (int i = lane; i < n; i += 32) {
      if (r.live[i] && r.rank[i] >= kept) {
        r.live[i] = 0;
        r.w[i] = -INFINITY;
      }
    }
    __syncwarp();
  }
  if (min_p > 0.0f) {
    live_softmax(r, n);
    double top = 0;
    for (int j = lane; j < n; j += 32) top = fmax(top, r.p[j]);
    for (int o = 16; o > 0; o >>= 1) top = fmax(top, __shfl_xor_sync(0xffffffffu, top, o));
    const double threshold = static_cast<double>(min_p) * top;
    for (int i = lane; i < n; i += 32) {
      if (r.live[i] && r.p[i] < threshold) {
        r.live[i] = 0;
        r.w[i] = -INFINITY;
      }
    }
    __syncwarp();
  }
  live_softmax(r, n);
  if (lane == 0) {
    const double u = uniforms[row];
    double cumulative = 0;
    long long last = r.tok[0];  // the host's position 0 when nothing has mass
    long long picked = -2;
    for (int j = 0; j < n && picked == -2; ++j) {
      if (!r.live[j] || r.p[j] == 0.0) continue;
      cumulative += r.p[j];
      last = r.tok[j];
      if (u < cumulative) picked = last;
    }
    out[row] = picked == -2 ? last : picked;  // rounding left u above the total: the last
    if (decided) decided[row] = 1;
  }
}

void sample_candidates(const ops::SampleCandidatesArgs& a) {
  const long long rows = a.values.size(0), cands = a.values.size(1);
  if (rows == 0) return;
  if (cands > kMaxSampled) {
    throw Error("sample_candidates: " + std::to_string(cands) +
                " candidates a row exceed the CUDA kernel's " + std::to_string(kMaxSampled));
  }
  launch(sample_candidates_kernel, static_cast<unsigned>(rows), 32, 0, stream_of(a.values.device()),
         a.values.data<float>(), a.indices.data<long long>(), a.uniforms.data<double>(),
         static_cast<int>(cands), a.temperature, static_cast<int>(a.top_k), a.top_p, a.min_p,
         a.out.data<long long>(), a.decided.defined() ? a.decided.data<long long>() : nullptr);
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_sampling() {
  register_kernel<ops::SampleCandidatesArgs>(ops::kSampleCandidates, DeviceType::cuda, DType::f32,
                                             DType::f32, &cuda::sample_candidates);
  register_kernel<ops::RepetitionPenaltyArgs>(ops::kRepetitionPenalty, DeviceType::cuda, DType::f32,
                                              DType::f32, &cuda::repetition_penalty);
  register_kernel<ops::TopKArgs>(ops::kTopK, DeviceType::cuda, DType::f32, DType::f32,
                                 &cuda::top_k);
  for (DType act : cuda::kFloatTypes) {
    register_kernel<ops::ArgmaxArgs>(ops::kArgmax, DeviceType::cuda, act, act, &cuda::argmax);
  }
}

}  // namespace anvil
