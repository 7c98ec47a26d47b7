// Attention over the KV cache on CUDA, for decode and prefill alike: one warp per (query, key)
// stream with an online softmax (flash-decoding), GQA heads reading their shared K/V head in
// place. Long key ranges are split across blocks and the partial results combined, so a
// decode step keeps the whole GPU busy while reading each K/V byte once.
#include <cfloat>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "anvil/error.h"
#include "backends/cuda/async_copy.cuh"
#include "backends/cuda/batched_gemm.h"
#include "backends/cuda/cuda_allocator.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/flash_prefill.h"
#include "backends/cuda/launch.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kMaxDimPerLane = 8;  // head_dim <= 256
constexpr int kKeysPerSplit = 32;
constexpr int kMaxSplits = 128;

struct Geometry {
  int batch, seq, heads, kv_heads, dim, group;
  long long cap;
  int mask_width;
  long long past;       // host value, used when past_dev is null
  const int* past_dev;  // graph replay: the past length in device memory
  float scale;
  int splits;
  long long window;  // sliding window (ops::AttentionArgs::window), 0 for none
  float softcap;     // ops::AttentionArgs::softcap, 0 for none
  // Decode kernels: rows of the cached K/V (and their mask words) copied into shared memory
  // before the wait (room for this many of each), 0 for reading them from memory.
  long long stage_keys;
};

// Partial result of one split: running max, running sum, then `dim` accumulators.
__device__ __forceinline__ float* partial_at(float* ws, long long item, int split, int splits,
                                             int dim) {
  return ws + (item * splits + split) * (dim + 2);
}

// `chunks` 16-byte chunks of K and of V, global to shared memory by cp.async as one group; the
// decode kernels stage their cached rows this way before their wait.
template <class T>
__device__ __forceinline__ void stage_rows_async(T* k_dst, T* v_dst, const T* k_src, const T* v_src,
                                                 long long chunks, int threads) {
  constexpr int V = 16 / sizeof(T);
  for (long long i = threadIdx.x; i < chunks; i += threads) {
    copy_async16(k_dst + i * V, k_src + i * V);
    copy_async16(v_dst + i * V, v_src + i * V);
  }
  copy_async_commit();
}

template <class T, bool Staged>
__global__ void __launch_bounds__(kWarps * 32)
    attention_kernel(const T* __restrict__ q, const T* __restrict__ kc, const T* __restrict__ vc,
                     const int* __restrict__ mask, T* __restrict__ out, float* __restrict__ ws,
                     Geometry g) {
  const int h = blockIdx.x;
  const int bs = blockIdx.y;  // b * seq + s
  const int split = blockIdx.z;
  const int b = bs / g.seq, s = bs % g.seq;
  const int kh = h / g.group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const long long past = g.past_dev ? *g.past_dev : g.past;
  const long long limit = past + s + 1;  // causal: keys [first, past + s]
  const long long first = first_visible_key(past + s, g.window);
  const long long per_split = (limit - first + g.splits - 1) / g.splits;
  const long long t0 = first + split * per_split;
  const long long t1 = t0 + per_split < limit ? t0 + per_split : limit;
  const int per_lane = (g.dim + 31) / 32;
  const long long head_base = (static_cast<long long>(b) * g.kv_heads + kh) * g.cap;
  const int* mrow = mask + static_cast<long long>(b) * g.mask_width;
  // stage_keys > 0: the split's cached rows (those before the step's) and its mask words go to
  // shared memory before the wait: the kernels it waits for write neither, and in the loop
  // below each key's loads were a memory latency on the path.
  extern __shared__ float stage[];
  T* k_staged = reinterpret_cast<T*>(stage);
  T* v_staged = k_staged + g.stage_keys * g.dim;
  int* mask_staged = reinterpret_cast<int*>(v_staged + g.stage_keys * g.dim);
  const long long cached_end = t1 < past ? t1 : past;
  if constexpr (Staged) {
    const int chunks = g.dim * static_cast<int>(sizeof(T)) / 16;
    const long long base = (head_base + t0) * g.dim;
    stage_rows_async(k_staged, v_staged, kc + base, vc + base,
                     (cached_end > t0 ? cached_end - t0 : 0) * chunks,
                     static_cast<int>(blockDim.x));
    for (long long t = t0 + threadIdx.x; t < t1; t += blockDim.x) mask_staged[t - t0] = mrow[t];
  }
  pdl_wait();

  float qv[kMaxDimPerLane], acc[kMaxDimPerLane];
  const T* qrow = q + (static_cast<long long>(bs) * g.heads + h) * g.dim;
#pragma unroll
  for (int j = 0; j < kMaxDimPerLane; ++j) {
    const int d = lane + 32 * j;
    qv[j] = j < per_lane && d < g.dim ? to_float(qrow[d]) * g.scale : 0.0f;
    acc[j] = 0.0f;
  }
  float m = -FLT_MAX, l = 0.0f;
  if constexpr (Staged) {
    copy_async_wait<0>();
    __syncthreads();
  }
  // Value d of key (or value) row t: from shared memory where staged, else from the cache (a
  // kernel of its own for each, so the unstaged one keeps its global loads, not generic ones).
  const auto at = [&](const T* cache, const T* staged_rows, long long t, int d) {
    if constexpr (Staged) {
      if (t < cached_end) return to_float(staged_rows[(t - t0) * g.dim + d]);
    }
    return to_float(cache[(head_base + t) * g.dim + d]);
  };
  // Two keys per iteration, so each warp has two independent loads and reductions in flight.
  for (long long t = t0 + warp; t < t1; t += 2 * kWarps) {
    const long long t2 = t + kWarps;
    const bool has2 = t2 < t1;
    const bool use1 = (Staged ? mask_staged[t - t0] : mrow[t]) != 0;
    const bool use2 = has2 && (Staged ? mask_staged[t2 - t0] : mrow[t2]) != 0;
    const long long u2 = has2 ? t2 : t;
    float d1 = 0.0f, d2 = 0.0f;
#pragma unroll
    for (int j = 0; j < kMaxDimPerLane; ++j) {
      const int d = lane + 32 * j;
      if (j < per_lane && d < g.dim) {
        d1 += qv[j] * at(kc, k_staged, t, d);
        d2 += qv[j] * at(kc, k_staged, u2, d);
      }
    }
    const float s1 = use1 ? soft_capped(warp_sum(d1), g.softcap) : -FLT_MAX;
    const float s2 = use2 ? soft_capped(warp_sum(d2), g.softcap) : -FLT_MAX;
    if (!use1 && !use2) continue;
    const float m_new = fmaxf(m, fmaxf(s1, s2));
    const float corr = __expf(m - m_new);
    const float p1 = use1 ? __expf(s1 - m_new) : 0.0f, p2 = use2 ? __expf(s2 - m_new) : 0.0f;
    l = l * corr + p1 + p2;
#pragma unroll
    for (int j = 0; j < kMaxDimPerLane; ++j) {
      const int d = lane + 32 * j;
      if (j < per_lane && d < g.dim) {
        acc[j] = acc[j] * corr + p1 * at(vc, v_staged, t, d) + p2 * at(vc, v_staged, u2, d);
      }
    }
    m = m_new;
  }
  // Combine the block's warps.
  __shared__ float sm_m[kWarps], sm_l[kWarps];
  __shared__ float sm_acc[kWarps][kMaxDimPerLane * 32];
  if (lane == 0) {
    sm_m[warp] = m;
    sm_l[warp] = l;
  }
#pragma unroll
  for (int j = 0; j < kMaxDimPerLane; ++j) sm_acc[warp][lane + 32 * j] = acc[j];
  __syncthreads();
  if (warp != 0) return;
  float bm = -FLT_MAX;
  for (int w = 0; w < kWarps; ++w) bm = fmaxf(bm, sm_m[w]);
  float bl = 0.0f, bacc[kMaxDimPerLane] = {};
  for (int w = 0; w < kWarps; ++w) {
    if (sm_l[w] == 0.0f) continue;
    const float c = __expf(sm_m[w] - bm);
    bl += sm_l[w] * c;
#pragma unroll
    for (int j = 0; j < kMaxDimPerLane; ++j) bacc[j] += sm_acc[w][lane + 32 * j] * c;
  }
  const long long item = static_cast<long long>(bs) * g.heads + h;
  if (g.splits == 1) {
    T* orow = out + item * g.dim;
    const float inv = bl > 0.0f ? 1.0f / bl : 0.0f;  // a query that sees no key gets zeros
#pragma unroll
    for (int j = 0; j < kMaxDimPerLane; ++j) {
      const int d = lane + 32 * j;
      if (j < per_lane && d < g.dim) orow[d] = from_float<T>(bacc[j] * inv);
    }
    return;
  }
  float* part = partial_at(ws, item, split, g.splits, g.dim);
  if (lane == 0) {
    part[0] = bm;
    part[1] = bl;
  }
#pragma unroll
  for (int j = 0; j < kMaxDimPerLane; ++j) {
    const int d = lane + 32 * j;
    if (j < per_lane && d < g.dim) part[2 + d] = bacc[j];
  }
}

template <class T>
__global__ void combine_kernel(const float* __restrict__ ws, T* __restrict__ out, int splits,
                               int dim) {
  pdl_wait();
  const long long item = blockIdx.x;
  float m = -FLT_MAX;
  for (int s = 0; s < splits; ++s) {
    const float* p = partial_at(const_cast<float*>(ws), item, s, splits, dim);
    if (p[1] > 0.0f) m = fmaxf(m, p[0]);
  }
  for (int d = threadIdx.x; d < dim; d += blockDim.x) {
    float l = 0.0f, a = 0.0f;
    for (int s = 0; s < splits; ++s) {
      const float* p = partial_at(const_cast<float*>(ws), item, s, splits, dim);
      if (p[1] == 0.0f) continue;
      const float c = __expf(p[0] - m);
      l += p[1] * c;
      a += p[2 + d] * c;
    }
    out[item * dim + d] = from_float<T>(l > 0.0f ? a / l : 0.0f);
  }
}

// Split scratch, grown outside graph capture (the first, eager step of a shape sizes it).
// Outgrown buffers are kept, not freed: a recorded graph may still write them.
float* split_workspace(Device device, size_t floats) {
  static std::map<int, std::vector<std::shared_ptr<Buffer>>> buffers;
  auto& list = buffers[device.ordinal()];
  if (list.empty() || list.back()->nbytes() < floats * sizeof(float)) {
    list.push_back(allocate(device, floats * sizeof(float)));
  }
  return static_cast<float*>(list.back()->data());
}

constexpr int kSoftmaxThreads = 256;
constexpr int kGemmMinQueries = 64;

__device__ __forceinline__ float block_reduce(float v, bool is_max) {
  __shared__ float part[kSoftmaxThreads / 32];
  v = is_max ? warp_max(v) : warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // part[] may still be read by an earlier reduction
  if (lane == 0) part[warp] = v;
  __syncthreads();
  float r = is_max ? -FLT_MAX : 0.0f;
  for (int w = 0; w < kSoftmaxThreads / 32; ++w) r = is_max ? fmaxf(r, part[w]) : r + part[w];
  return r;
}

// Decode (one query per row) over up to kDecodeMaxKeys keys: one block per (row, head), all keys
// in one pass. Each key row is read by `chunks` threads with 16-byte loads (a warp covers
// 32 / chunks keys at once), the scores stay in shared memory, and the value rows are read the
// same way. No split, so no second launch to combine splits.
constexpr int kDecodeThreads = 256;
constexpr int kDecodeMaxKeys = 8192;
constexpr int kUnroll = 4;

// The fused rope_attention's inputs beside the kernel's q (then q before RoPE): the step's new k
// and v rows [B, kv_heads, D], the q/k norm weights (null for none), positions and frequencies,
// and the caches the first q head of each kv head writes the new row into.
template <class T, class W>
struct RopeInputs {
  const T* k_new = nullptr;
  const T* v_new = nullptr;
  const W* q_norm = nullptr;
  const W* k_norm = nullptr;
  float eps = 0;
  const int* positions = nullptr;
  const float* inv_freq = nullptr;
  float scaling = 1;
  T* k_cache = nullptr;
  T* v_cache = nullptr;
};

// With Rope (rope_attention), the block first does rope_store's work for its q head and its kv
// head's new key (the norms by one warp each in rope_store's order and rounding, so the values
// are the ones the two ops would produce), and reads the newest key and value from shared memory:
// the cache row it writes is not visible to the other blocks within the launch.
template <class T, class W, bool Rope>
__global__ void __launch_bounds__(kDecodeThreads)
    decode_attention_kernel(const T* __restrict__ q, const T* kc, const T* vc,
                            const int* __restrict__ mask, T* __restrict__ out, Geometry g,
                            RopeInputs<T, W> r) {
  constexpr int V = 16 / sizeof(T);
  extern __shared__ float smem[];
  float* scores = smem;                    // [keys from the first visible]
  float* qs = smem + kDecodeMaxKeys;       // [dim]
  float* part = qs + 32 * kMaxDimPerLane;  // [rows per pass][dim]
  const int chunks = g.dim / V, per_pass = kDecodeThreads / chunks;
  // stage_keys: [stage_keys][dim] of K, then of V (16-byte aligned: part holds 256 x V floats)
  T* k_staged = reinterpret_cast<T*>(part + per_pass * g.dim);
  T* v_staged = k_staged + g.stage_keys * g.dim;
  int* mask_staged = reinterpret_cast<int*>(v_staged + g.stage_keys * g.dim);  // [stage_keys]
  // Rope: cos and sin of the step's position (each table 16 x kMaxDimPerLane)
  __shared__ float rope_table[Rope ? 32 * kMaxDimPerLane : 1];
  float* cos_t = rope_table;
  float* sin_t = rope_table + (Rope ? 16 * kMaxDimPerLane : 0);
  // Before waiting for the step's kernels, what they do not write: the cached keys and values
  // before this step's, the mask (written at the step's start), RoPE's table from the step's
  // position and the frequencies (updated, where they follow the length, before the step).
  {
    const long long past = g.past_dev ? *g.past_dev : g.past;
    const long long first = first_visible_key(past, g.window);
    if constexpr (Rope) {
      const float pos = static_cast<float>(r.positions[blockIdx.y]);
      for (int j = threadIdx.x; j < g.dim / 2; j += kDecodeThreads) {
        float sn, cs;
        sincosf(pos * r.inv_freq[j], &sn, &cs);
        const float scale = r.inv_freq[j] == 0.0f ? 1.0f : r.scaling;  // 0: a pair not rotated
        cos_t[j] = cs * scale;
        sin_t[j] = sn * scale;
      }
    }
    const long long base =
        ((static_cast<long long>(blockIdx.y) * g.kv_heads + blockIdx.x / g.group) * g.cap + first) *
        g.dim;
    if (g.stage_keys > 0) {  // into shared memory: the passes then wait on no memory latency
      stage_rows_async(k_staged, v_staged, kc + base, vc + base, (past - first) * chunks,
                       kDecodeThreads);
      const int* mrow = mask + static_cast<long long>(blockIdx.y) * g.mask_width;
      for (long long t = first + threadIdx.x; t <= past; t += kDecodeThreads) {
        mask_staged[t - first] = mrow[t];
      }
    } else {
      const long long bytes = (past - first) * g.dim * static_cast<long long>(sizeof(T));
      prefetch_l2(kc + base, bytes, threadIdx.x, kDecodeThreads);
      prefetch_l2(vc + base, bytes, threadIdx.x, kDecodeThreads);
    }
  }
  pdl_wait();
  const int h = blockIdx.x, b = blockIdx.y, kh = h / g.group;
  const int sub = threadIdx.x % chunks, slot = threadIdx.x / chunks;
  const long long past = g.past_dev ? *g.past_dev : g.past;
  const long long keys = past + 1, first = first_visible_key(past, g.window);
  const T* qrow = q + (static_cast<long long>(b) * g.heads + h) * g.dim;
  const long long head_base = (static_cast<long long>(b) * g.kv_heads + kh) * g.cap;
  const float* knew = nullptr;  // Rope: the newest key and value, rotated / as stored
  const float* vnew = nullptr;
  if constexpr (Rope) {
    __shared__ float rq[32 * kMaxDimPerLane], rk[32 * kMaxDimPerLane];
    __shared__ float kn[32 * kMaxDimPerLane], vn[32 * kMaxDimPerLane];
    knew = kn;
    vnew = vn;
    const int half = g.dim / 2;
    const long long new_row = (static_cast<long long>(b) * g.kv_heads + kh) * g.dim;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp < 2) {  // warp 0 normalises q's head, warp 1 the new key's
      const T* src = warp == 0 ? qrow : r.k_new + new_row;
      const W* norm = warp == 0 ? r.q_norm : r.k_norm;
      float* vals = warp == 0 ? rq : rk;
      float ss = 0.0f;
      for (int i = lane; i < g.dim; i += 32) {
        const float x = to_float(src[i]);
        vals[i] = x;
        ss += x * x;
      }
      if (norm) {
        const float rs = rsqrtf(warp_sum(ss) / static_cast<float>(g.dim) + r.eps);
        for (int i = lane; i < g.dim; i += 32) {
          vals[i] =
              to_float(from_float<T>(to_float(norm[i]) * to_float(from_float<T>(vals[i] * rs))));
        }
      }
    }
    __syncthreads();
    for (int d = threadIdx.x; d < g.dim; d += kDecodeThreads) {
      const int j = d < half ? d : d - half;
      const float c = cos_t[j], sn = sin_t[j];
      const T qt =
          from_float<T>(d < half ? rq[d] * c - rq[d + half] * sn : rq[d] * c + rq[d - half] * sn);
      const T kt =
          from_float<T>(d < half ? rk[d] * c - rk[d + half] * sn : rk[d] * c + rk[d - half] * sn);
      const T vt = r.v_new[new_row + d];
      qs[d] = to_float(qt) * g.scale;
      kn[d] = to_float(kt);
      vn[d] = to_float(vt);
      if (h % g.group == 0) {
        r.k_cache[(head_base + past) * g.dim + d] = kt;
        r.v_cache[(head_base + past) * g.dim + d] = vt;
      }
    }
  } else {
    for (int d = threadIdx.x; d < g.dim; d += kDecodeThreads) qs[d] = to_float(qrow[d]) * g.scale;
  }
  if (g.stage_keys > 0) copy_async_wait<0>();
  __syncthreads();
  const int* mrow = mask + static_cast<long long>(b) * g.mask_width;
  float qv[V];
#pragma unroll
  for (int i = 0; i < V; ++i) qv[i] = qs[sub * V + i];
  float m = -FLT_MAX;
  // kUnroll keys per thread and pass, their loads issued before any is used: a pass of the
  // block covers kUnroll * per_pass keys with one memory latency. Passes are uniform across the
  // block: every lane takes part in the shuffles.
  const uint4 zero = make_uint4(0, 0, 0, 0);
  for (long long t0 = first; t0 < keys; t0 += kUnroll * per_pass) {
    uint4 raw[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long t = t0 + slot + u * per_pass;
      const bool fresh = Rope && t == past;
      raw[u] = t >= keys || fresh ? zero
               : g.stage_keys > 0 && t < past
                   ? *reinterpret_cast<const uint4*>(k_staged + (t - first) * g.dim + sub * V)
                   : *reinterpret_cast<const uint4*>(kc + (head_base + t) * g.dim + sub * V);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long t = t0 + slot + u * per_pass;
      const bool fresh = Rope && t == past;
      const T* kv = reinterpret_cast<const T*>(&raw[u]);
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < V; ++i) dot += qv[i] * (fresh ? knew[sub * V + i] : to_float(kv[i]));
      for (int o = chunks / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      if (t < keys) {
        const int visible = g.stage_keys > 0 ? mask_staged[t - first] : mrow[t];
        const float score = visible != 0 ? soft_capped(dot, g.softcap) : -FLT_MAX;
        if (sub == 0) scores[t - first] = score;
        m = fmaxf(m, score);
      }
    }
  }
  m = block_reduce(m, true);
  float l = 0.0f;
  for (long long t = first + threadIdx.x; t < keys; t += kDecodeThreads) {
    const float p = scores[t - first] == -FLT_MAX ? 0.0f : __expf(scores[t - first] - m);
    scores[t - first] = p;
    l += p;
  }
  l = block_reduce(l, false);  // its barriers also publish scores[]
  float acc[V] = {};
  for (long long t0 = first + slot; t0 < keys; t0 += kUnroll * per_pass) {
    uint4 raw[kUnroll];
    float p[kUnroll];
    bool fresh[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const long long t = t0 + u * per_pass;
      p[u] = t < keys ? scores[t - first] : 0.0f;
      fresh[u] = Rope && t == past;
      raw[u] = p[u] == 0.0f || fresh[u] ? zero
               : g.stage_keys > 0 && t < past
                   ? *reinterpret_cast<const uint4*>(v_staged + (t - first) * g.dim + sub * V)
                   : *reinterpret_cast<const uint4*>(vc + (head_base + t) * g.dim + sub * V);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const T* vv = reinterpret_cast<const T*>(&raw[u]);
#pragma unroll
      for (int i = 0; i < V; ++i) {
        acc[i] += p[u] * (fresh[u] ? vnew[sub * V + i] : to_float(vv[i]));
      }
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i) part[slot * g.dim + sub * V + i] = acc[i];
  __syncthreads();
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a query that sees no key gets zeros
  T* orow = out + (static_cast<long long>(b) * g.heads + h) * g.dim;
  for (int d = threadIdx.x; d < g.dim; d += kDecodeThreads) {
    float sum = 0.0f;
    for (int r = 0; r < per_pass; ++r) sum += part[r * g.dim + d];
    orow[d] = from_float<T>(sum * inv);
  }
}

// `keys`: the most a step may have (the cache's capacity under graph replay); a window bounds
// the scores a query keeps (indexed from its first visible key). The one-pass kernel runs a
// block per (head, row), each walking its keys in passes of kDecodeThreads / chunks. With at
// least one block per SM it is the faster kernel (and takes rope_store into the same launch).
// With fewer, each block's chain of passes is the step's path, and the split kernel, which
// spreads the keys over blocks at the price of rope_store and combine launches of their own,
// wins once there are many passes: an H200 at bs1, Gemma 3 1B's 4 heads of 256 values (32
// passes for 256 keys) 543 against 427 tok/s split, Gemma 2 2B's 8 heads 336 against 291;
// an H100, granite-3.0-1b-a400m's 16 heads of 64 values (8 passes for 256 keys) 767 split
// against 832 one-pass, but for 2,128 keys (67 passes) 579 against 419; composed
// Qwen2.5-0.5B's 14 heads, 256 keys, 879 against 980. The crossover there was ~14 passes.
constexpr long long kFewItemsMaxPasses = 12;

// ANVIL_CUDA_ONE_PASS_MIN_ITEMS=N takes the one-pass kernel from N (head, row) items on
// whatever the keys (default: one per SM; for measuring).
bool decode_kernel_fits(const Geometry& g, long long keys, size_t esize, int sm_count) {
  static const int forced = [] {
    const char* v = std::getenv("ANVIL_CUDA_ONE_PASS_MIN_ITEMS");
    return v ? std::atoi(v) : 0;
  }();
  if (g.window > 0 && g.window < keys) keys = g.window;
  const int v = static_cast<int>(16 / esize);
  if (g.seq != 1 || keys > kDecodeMaxKeys || (g.dim * esize) % 16 != 0) return false;
  const int chunks = g.dim / v;
  if (chunks > 32 || 32 % chunks != 0) return false;
  if (static_cast<long long>(g.heads) * g.batch >= (forced > 0 ? forced : sm_count)) return true;
  const long long passes = (keys * chunks + kDecodeThreads - 1) / kDecodeThreads;
  return passes <= kFewItemsMaxPasses;
}

size_t decode_smem_bytes(const Geometry& g, size_t esize) {
  const int chunks = g.dim / static_cast<int>(16 / esize);
  const int per_pass = kDecodeThreads / chunks;
  return (kDecodeMaxKeys + 32 * kMaxDimPerLane + static_cast<size_t>(per_pass) * g.dim) *
             sizeof(float) +
         static_cast<size_t>(g.stage_keys) * (2 * g.dim * esize + sizeof(int));
}

// Whether the decode kernels stage their cached rows (ANVIL_CUDA_NO_KV_STAGE=1 reads them from
// memory, for measuring; read at every call so that a test can set it).
bool kv_staging_on() {
  return std::getenv("ANVIL_CUDA_NO_KV_STAGE") == nullptr;
}

// Raises `kernel`'s dynamic shared-memory limit on the context's device to `bytes` where it is
// lower, whatever the size (the 48 KB default counts the kernel's static shared memory too).
// False during a graph capture, which cannot set it: the caller then stages nothing (the eager
// first step of a shape sets it).
bool allow_shared_memory(const void* kernel, size_t bytes, const Context& ctx) {
  static std::map<std::pair<int, const void*>, size_t> allowed;
  size_t& now = allowed[{ctx.ordinal, kernel}];
  if (bytes <= now) return true;
  if (ctx.capturing) return false;
  ANVIL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
  now = bytes;
  return true;
}

// The one-pass kernel: with fewer (head, row) items than SMs each block's chain of key passes is
// the step's path, and each pass waited on a memory latency (the keys, then the values, from L2
// at best). The cached rows then go to shared memory before the wait, where they are at most
// kFewItemsMaxPasses passes (96 KB of K and V).
template <class Kernel>
void stage_cached_rows(Geometry& g, long long keys, size_t esize, Kernel kernel, Device device) {
  const Context& ctx = context(device);
  if (g.window > 0 && g.window < keys) keys = g.window;
  if (!kv_staging_on() || static_cast<long long>(g.heads) * g.batch >= ctx.sm_count) return;
  constexpr size_t kMaxStagedBytes = 96 * 1024;  // kFewItemsMaxPasses passes of K and V
  if (2 * static_cast<size_t>(keys) * g.dim * esize > kMaxStagedBytes) return;
  g.stage_keys = keys;
  if (!allow_shared_memory(reinterpret_cast<const void*>(kernel), decode_smem_bytes(g, esize),
                           ctx)) {
    g.stage_keys = 0;
  }
}

size_t split_smem_bytes(const Geometry& g, size_t esize) {
  return static_cast<size_t>(g.stage_keys) * (2 * g.dim * esize + sizeof(int));
}

// The split kernel's blocks stage their cached rows when a split's rows fit in 64 KB (a split is
// 32 keys until the split count's cap).
template <class Kernel>
void stage_split_rows(Geometry& g, long long keys, size_t esize, Kernel kernel, Device device) {
  constexpr size_t kMaxSplitStageBytes = 64 * 1024;
  if (!kv_staging_on() || (g.dim * esize) % 16 != 0) return;
  g.stage_keys = (keys + g.splits - 1) / g.splits;
  const size_t bytes = split_smem_bytes(g, esize);
  if (bytes > kMaxSplitStageBytes ||
      !allow_shared_memory(reinterpret_cast<const void*>(kernel), bytes, context(device))) {
    g.stage_keys = 0;
  }
}

// Prefill of many queries: scores and the value product on the tensor cores through cuBLASLt,
// one kv head group member at a time (GQA without repeating K/V: the query heads that share a
// kv head are batched against it), the masked softmax in between. The score matrix of one
// (row, group member) is materialised: S x T floats per kv head.
// One block per (kv head, query): softmax over keys first <= t <= past + s (first from the
// sliding window) with key_mask != 0; other keys get probability 0, a query that sees no key
// gets all zeros.
template <class T>
__global__ void __launch_bounds__(kSoftmaxThreads)
    masked_softmax_kernel(const float* __restrict__ scores, T* __restrict__ probs,
                          const int* __restrict__ mask_row, int seq, long long keys, long long past,
                          long long window, float softcap) {
  pdl_wait();
  const long long r = blockIdx.x;
  const long long s = r % seq;
  const long long limit = past + s, first = first_visible_key(limit, window);
  const float* in = scores + r * keys;
  T* out = probs + r * keys;
  float m = -FLT_MAX;
  for (long long t = first + threadIdx.x; t <= limit; t += kSoftmaxThreads) {
    if (mask_row[t] != 0) m = fmaxf(m, soft_capped(in[t], softcap));
  }
  m = block_reduce(m, true);
  float l = 0.0f;
  for (long long t = first + threadIdx.x; t <= limit; t += kSoftmaxThreads) {
    if (mask_row[t] != 0) l += __expf(soft_capped(in[t], softcap) - m);
  }
  l = block_reduce(l, false);
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;
  for (long long t = threadIdx.x; t < keys; t += kSoftmaxThreads) {
    const bool seen = t >= first && t <= limit && mask_row[t] != 0;
    out[t] = from_float<T>(seen ? __expf(soft_capped(in[t], softcap) - m) * inv : 0.0f);
  }
}

void* grow(std::vector<std::shared_ptr<Buffer>>& list, Device device, size_t bytes) {
  if (list.empty() || list.back()->nbytes() < bytes) list.push_back(allocate(device, bytes));
  return list.back()->data();
}

template <class T>
void prefill_attention(const ops::AttentionArgs& a, const Geometry& g) {
  static std::map<int, std::vector<std::shared_ptr<Buffer>>> score_bufs, prob_bufs;
  Context& ctx = context(a.q.device());
  const long long keys = a.past + g.seq, S = g.seq, D = g.dim;
  const DType t = a.q.dtype();
  const size_t n = static_cast<size_t>(g.kv_heads) * S * keys;
  auto* scores = static_cast<float*>(grow(score_bufs[ctx.ordinal], a.q.device(), n * 4));
  auto* probs = static_cast<T*>(grow(prob_bufs[ctx.ordinal], a.q.device(), n * sizeof(T)));
  const long long HD = static_cast<long long>(g.heads) * D;
  // Column-major views. scores[g] (keys x S) = K_g^T(keys x D) . Q_h(D x S).
  const MatrixView kv_view{t, D, keys, D, g.cap * D};
  const MatrixView q_view{t, D, S, HD, static_cast<int64_t>(g.group) * D};
  const MatrixView score_view{DType::f32, keys, S, keys, S * keys};
  const MatrixView prob_view{t, keys, S, keys, S * keys};
  const MatrixView out_view{t, D, S, HD, static_cast<int64_t>(g.group) * D};
  const T* q = a.q.data<T>();
  const T* kc = a.k_cache.data<T>();
  const T* vc = a.v_cache.data<T>();
  T* out = a.out.data<T>();
  for (int b = 0; b < g.batch; ++b) {
    const T* kb = kc + static_cast<long long>(b) * g.kv_heads * g.cap * D;
    const T* vb = vc + static_cast<long long>(b) * g.kv_heads * g.cap * D;
    for (int j = 0; j < g.group; ++j) {
      const long long head0 = (static_cast<long long>(b) * S * g.heads + j) * D;
      batched_gemm(ctx, true, kv_view, kb, q_view, q + head0, score_view, scores, g.kv_heads,
                   g.scale);
      launch(masked_softmax_kernel<T>, static_cast<unsigned>(g.kv_heads * S), kSoftmaxThreads, 0,
             ctx.stream, scores, probs, a.key_mask.data<int>() + b * g.mask_width,
             static_cast<int>(S), keys, a.past, a.window, a.softcap);
      ANVIL_CUDA_CHECK_LAUNCH();
      batched_gemm(ctx, false, kv_view, vb, prob_view, probs, out_view, out + head0, g.kv_heads,
                   1.0f);
    }
  }
}

Geometry geometry_of(const ops::AttentionArgs& a) {
  Geometry g{};
  g.batch = static_cast<int>(a.q.size(0));
  g.seq = static_cast<int>(a.q.size(1));
  g.heads = static_cast<int>(a.q.size(2));
  g.dim = static_cast<int>(a.q.size(3));
  g.kv_heads = static_cast<int>(a.k_cache.size(1));
  g.group = g.heads / g.kv_heads;
  g.cap = a.k_cache.size(2);
  g.mask_width = static_cast<int>(a.key_mask.size(1));
  g.past = a.past;
  g.past_dev = a.past_on_device.defined() ? a.past_on_device.data<int>() : nullptr;
  g.scale = a.scale;
  g.window = a.window;
  g.softcap = a.softcap;
  return g;
}

void attention(const ops::AttentionArgs& a) {
  Geometry g = geometry_of(a);
  if (g.dim > 32 * kMaxDimPerLane) {
    throw Error("attention: head_dim " + std::to_string(g.dim) + " exceeds the CUDA kernel's " +
                std::to_string(32 * kMaxDimPerLane));
  }
  const long long items = static_cast<long long>(g.batch) * g.seq * g.heads;
  if (items == 0) return;
  const long long all_keys = g.past_dev ? g.cap : a.past + g.seq;
  const size_t esize = dtype_size(a.q.dtype());
  // ANVIL_CUDA_SPLIT_DECODE=1 keeps decode on the split kernel (for measuring one against the
  // other).
  static const bool force_split = std::getenv("ANVIL_CUDA_SPLIT_DECODE") != nullptr;
  if (!force_split && decode_kernel_fits(g, all_keys, esize, context(a.q.device()).sm_count)) {
    dispatch_float(a.q.dtype(), "attention", [&](auto t) {
      using T = decltype(t);
      stage_cached_rows(g, all_keys, esize, decode_attention_kernel<T, T, false>, a.q.device());
      launch(decode_attention_kernel<T, T, false>,
             dim3(static_cast<unsigned>(g.heads), static_cast<unsigned>(g.batch)), kDecodeThreads,
             decode_smem_bytes(g, esize), stream_of(a.q.device()), a.q.data<T>(),
             a.k_cache.data<T>(), a.v_cache.data<T>(), a.key_mask.data<int>(), a.out.data<T>(), g,
             RopeInputs<T, T>{});
    });
    ANVIL_CUDA_CHECK_LAUNCH();
    return;
  }
  if (!g.past_dev && g.seq >= kGemmMinQueries) {
    if (flash_prefill(a)) return;
    dispatch_float(a.q.dtype(), "attention", [&](auto t) { prefill_attention<decltype(t)>(a, g); });
    return;
  }
  // Enough blocks to fill the GPU: split the keys when the queries alone are too few. Under
  // graph replay the length grows, so the split count follows the cache's capacity.
  const long long keys = g.past_dev ? g.cap : a.past + g.seq;
  const int sms = context(a.q.device()).sm_count;
  int splits = 1;
  if (items < 2LL * sms) {
    splits = static_cast<int>((keys + kKeysPerSplit - 1) / kKeysPerSplit);
    splits = splits < 1 ? 1 : (splits > kMaxSplits ? kMaxSplits : splits);
  }
  g.splits = splits;
  float* ws = splits > 1
                  ? split_workspace(a.q.device(), static_cast<size_t>(items) * splits * (g.dim + 2))
                  : nullptr;
  const cudaStream_t stream = stream_of(a.q.device());
  dispatch_float(a.q.dtype(), "attention", [&](auto t) {
    using T = decltype(t);
    const dim3 grid(static_cast<unsigned>(g.heads), static_cast<unsigned>(g.batch * g.seq),
                    static_cast<unsigned>(splits));
    stage_split_rows(g, keys, esize, attention_kernel<T, true>, a.q.device());
    launch(g.stage_keys > 0 ? attention_kernel<T, true> : attention_kernel<T, false>, grid,
           kWarps * 32, split_smem_bytes(g, esize), stream, a.q.data<T>(), a.k_cache.data<T>(),
           a.v_cache.data<T>(), a.key_mask.data<int>(), a.out.data<T>(), ws, g);
    ANVIL_CUDA_CHECK_LAUNCH();
    if (splits > 1) {
      launch(combine_kernel<T>, static_cast<unsigned>(items), 128, 0, stream, ws, a.out.data<T>(),
             splits, g.dim);
      ANVIL_CUDA_CHECK_LAUNCH();
    }
  });
}

// rope_store and decode attention in one launch (one query per row, keys within the one-pass
// kernel's reach): a launch and a kernel boundary fewer per layer. Other shapes run the two ops.
// ANVIL_CUDA_NO_ROPE_ATTENTION=1 keeps them apart (for measuring one against the other).
void rope_attention(const ops::RopeAttentionArgs& a) {
  static const bool off = std::getenv("ANVIL_CUDA_NO_ROPE_ATTENTION") != nullptr;
  const ops::RopeStoreArgs& r = a.rope;
  const ops::AttentionArgs& t = a.attention;
  Geometry g = geometry_of(t);
  const long long all_keys = g.past_dev ? g.cap : t.past + g.seq;
  const size_t esize = dtype_size(t.q.dtype());
  if (off || g.dim % 2 != 0 || g.dim > 32 * kMaxDimPerLane ||
      !decode_kernel_fits(g, all_keys, esize, context(t.q.device()).sm_count) || g.batch == 0) {
    ops::composed_rope_attention(a);
    return;
  }
  dispatch_float(t.q.dtype(), "rope_attention", [&](auto act) {
    const DType nd = r.q_norm.defined() ? r.q_norm.dtype() : t.q.dtype();
    dispatch_float(nd, "rope_attention", [&](auto w) {
      using T = decltype(act);
      using W = decltype(w);
      RopeInputs<T, W> in;
      in.k_new = r.k.data<T>();
      in.v_new = r.v.data<T>();
      in.q_norm = r.q_norm.defined() ? r.q_norm.data<W>() : nullptr;
      in.k_norm = r.k_norm.defined() ? r.k_norm.data<W>() : nullptr;
      in.eps = r.eps;
      in.positions = r.positions.data<int>();
      in.inv_freq = r.inv_freq.data<float>();
      in.scaling = r.scaling;
      in.k_cache = r.k_cache.data<T>();
      in.v_cache = r.v_cache.data<T>();
      stage_cached_rows(g, all_keys, esize, decode_attention_kernel<T, W, true>, t.q.device());
      launch(decode_attention_kernel<T, W, true>,
             dim3(static_cast<unsigned>(g.heads), static_cast<unsigned>(g.batch)), kDecodeThreads,
             decode_smem_bytes(g, esize), stream_of(t.q.device()), r.q.data<T>(),
             t.k_cache.data<T>(), t.v_cache.data<T>(), t.key_mask.data<int>(), t.out.data<T>(), g,
             in);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_attention() {
  for (DType act : cuda::kFloatTypes) {
    register_kernel<ops::AttentionArgs>(ops::kAttention, DeviceType::cuda, act, act,
                                        &cuda::attention);
    // Every path of cuda::attention and rope_attention applies the logit softcap.
    register_kernel<ops::AttentionArgs>(ops::kAttentionSoftcap, DeviceType::cuda, act, act,
                                        &cuda::attention);
    // Keyed by the q/k norms' dtype (the activations' when there are none), as rope_store.
    for (DType norm : cuda::kFloatTypes) {
      register_kernel<ops::RopeAttentionArgs>(ops::kRopeAttention, DeviceType::cuda, act, norm,
                                              &cuda::rope_attention);
    }
  }
}

}  // namespace anvil
