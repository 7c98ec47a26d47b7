// The one-launch decode kernel's attention (decode_layers.cu): the (head, key split) items that
// normalise, rotate and cache their head's q/k/v and score the split's keys, and the combine of
// their partial results that o_proj's staging runs. Included by decode_layers.cu only.
#pragma once

#include <cfloat>

#include "backends/cuda/decode_layers_params.cuh"
#include "backends/cuda/decode_layers_stream.cuh"

namespace anvil::cuda {
namespace {

// ---- Attention -------------------------------------------------------------------------

// Splits of a head's keys this step: about split_keys keys each, at most p.splits (the
// workspace's), one for short contexts (up to single_split_keys) so that no combine is needed.
__device__ __forceinline__ int active_splits(const Params& p, long long past) {
  if (past + 1 <= p.single_split_keys) return 1;
  const long long want = (past + 1 + p.split_keys - 1) / p.split_keys;
  return static_cast<int>(want < p.splits ? (want < 1 ? 1 : want) : p.splits);
}

// Split `split` of the keys [first, keys) a layer's query sees (first from its sliding window;
// a split may be empty when the window is shorter than the splits).
__device__ __forceinline__ void split_range(long long first, long long keys, int splits, int split,
                                            long long& t0, long long& t1) {
  const long long per = (keys - first + splits - 1) / splits;
  t0 = min(keys, first + split * per);
  t1 = min(keys, t0 + per);
}

// Asks L2 for the cached keys and values (rows before this step's) the block's attention
// items of this layer will read, two phases before it reads them.
template <class T>
__device__ void prefetch_kv(const Params& p, const LayerPointers& L, long long past, int splits) {
  for (int it = first_item(p, p.heads * splits); it < p.heads * splits; it += gridDim.x) {
    const int h = it / splits, split = it % splits, kh = h / p.group;
    long long t0, t1;
    split_range(first_visible_key(past, L.window), past + 1, splits, split, t0, t1);
    t1 = min(t1, past);
    if (t1 <= t0) continue;
    const long long at = (static_cast<long long>(kh) * p.cap + t0) * p.dim;
    const long long bytes = (t1 - t0) * p.dim * static_cast<long long>(sizeof(T));
    prefetch_l2(static_cast<const T*>(L.k_cache) + at, bytes, threadIdx.x, kThreads);
    prefetch_l2(static_cast<const T*>(L.v_cache) + at, bytes, threadIdx.x, kThreads);
  }
}

// v = *at where `take` (zero elsewhere), by a predicated load into a zeroed register: a select
// between the loaded value and zero would wait for the load where it is written. Through the
// non-coherent path: only for data no block writes while the kernel runs (the key mask, whose
// new column is copied in before the launch).
__device__ __forceinline__ void load_int_if(const int* at, bool take, int& v) {
  v = 0;
  asm volatile("{ .reg .pred p; setp.ne.u32 p, %2, 0; @p ld.global.nc.s32 %0, [%1]; }"
               : "+r"(v)
               : "l"(at), "r"(static_cast<unsigned>(take)));
}

// A round's keys per thread: their key and value vectors are loaded together, before the
// scores need them, so a round costs one memory latency (the item's first round is loaded
// before its prologue, overlapping the q/k/v loads).
// The wide kernel's items take one: with two, its flags-mode kernel spilled registers, and its
// items' RoPE step took 2.2 us a Gemma 3 1B item against 0.4 for Qwen2.5-0.5B's (a spill of a
// key/value register waiting for its load, presumably); with one, 1.0 and decode 3.5% faster.
__host__ __device__ constexpr int keys_per_thread(bool wide) {
  return wide ? 1 : 2;
}

// OLMo 2's whole-projection q/k norms, one warp: the sum of squares of the n values of q or k
// (starting at row `first` of q|k|v), whose values [own, own + dim) (the item's head) go to
// vals. Flags mode: from the q/k/v mailbox, flagged lf.
template <class T, bool kFlags>
__device__ float take_projection(const Params& p, long long first, int n, int own, int dim,
                                 unsigned lf, float* vals) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  float ss = 0.0f;
  if constexpr (kFlags) {
    constexpr int kWords = 4;
    for (int w0 = 0; w0 < n / 2; w0 += 32 * kWords) {
      unsigned words[kWords];
      mail_take<kWords>(p.mail_qkv + first / 2 + w0, lane, 32, min(32 * kWords, n / 2 - w0), lf,
                        p.poll_ns, words);
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const int w = w0 + lane + 32 * i;
        if (w >= n / 2) break;
        const float a = low_half(words[i], T{}), b = high_half(words[i], T{});
        ss += a * a + b * b;
        const int d = 2 * w - own;
        if (d >= 0 && d < dim) {
          vals[d] = a;
          vals[d + 1] = b;
        }
      }
    }
  } else {
    const T* src = static_cast<const T*>(first == 0 ? p.q : p.k);
    for (int i = lane; i < n; i += 32) {
      const float x = to_float(load_cg(src + i));
      ss += x * x;
      if (i >= own && i < own + dim) vals[i - own] = x;
    }
  }
  return ss;
}

// One (q head, key split) item: rope_store's work for the head (as the fused decode attention
// kernel does it), an online softmax over the split's keys in rounds of keys_per_thread(kWide) keys
// per thread, the partial result to global memory (stage_attention combines them). Flags mode:
// q/k/v come from their mailbox flagged lf (the layer's first flag), the result goes out
// flagged lf + 1. kProfile: the item's times into `stamps` where not null (the profile's
// kernel only: the stamps' checks cost 0.9% of decode when they were in every kernel).
template <class T, bool kFlags, bool kProfile, bool kWide, bool kOlmo>
__device__ void attention_item(const Params& p, const LayerPointers& L, int h, int split,
                               int splits, long long past, const Shared& sh, unsigned lf,
                               unsigned long long* stamps) {
  const auto mark = [&](ItemStamp at) {
    if constexpr (kProfile) {
      if (stamps) stamps[at] = global_ns();
    }
  };
  mark(kItemStart);
  const int dim = p.dim, half = dim / 2, kh = h / p.group;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const T* kc = static_cast<const T*>(L.k_cache) + static_cast<long long>(kh) * p.cap * dim;
  const T* vc = static_cast<const T*>(L.v_cache) + static_cast<long long>(kh) * p.cap * dim;
  long long t0, t1;
  split_range(first_visible_key(past, L.window), past + 1, splits, split, t0, t1);
  // Padding lanes (the narrow kernel only: in the wide one their code cost Gemma 3 1B 3% of
  // decode, and its heads' chunks are a power of two, unfit_reason says so).
  constexpr bool kPadded = !kWide;
  const int chunks = dim / 8, lanes = kPadded ? p.key_lanes : chunks, per_pass = kThreads / lanes;
  const int sub = tid % lanes, slot = tid / lanes;
  // A padding lane (sub >= chunks: heads of 96 values) loads its key's last chunk again, in
  // bounds, and meets zeros in q's padding (sh.qs past dim), so its dot products add nothing
  // and its sums are never written; a predicate instead held a register the hot kernel spilled.
  const int chunk_at = (kPadded ? min(sub, chunks - 1) : sub) * 8;
  constexpr int kKeysPerThread = keys_per_thread(kWide);
  const long long round_keys = static_cast<long long>(per_pass) * kKeysPerThread;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // This thread's cached keys and values of the round starting at r0 (zeros past its end and
  // at this step's own position, which is not in the cache yet).
  uint4 kraw[kKeysPerThread], vraw[kKeysPerThread];
  // The round's mask words (zero past its end), compared only where the scores use them: a
  // compare right after the load held the thread, and the prologue behind it, for the mask's
  // round trip.
  int visible[kKeysPerThread];
  const auto load_round = [&](long long r0) {
    const long long r1 = min(r0 + round_keys, t1);
#pragma unroll
    for (int u = 0; u < kKeysPerThread; ++u) {
      const long long t = r0 + slot + u * per_pass;
      const bool cached = t < r1 && t != past;
      kraw[u] = cached ? *reinterpret_cast<const uint4*>(kc + t * dim + chunk_at) : zero;
      vraw[u] = cached ? *reinterpret_cast<const uint4*>(vc + t * dim + chunk_at) : zero;
      load_int_if(p.mask + t, t < r1, visible[u]);
    }
  };
  if (t0 < t1) load_round(t0);

  const T* qrow = static_cast<const T*>(p.q) + static_cast<long long>(h) * dim;
  const T* krow = static_cast<const T*>(p.k) + static_cast<long long>(kh) * dim;
  const T* vrow = static_cast<const T*>(p.v) + static_cast<long long>(kh) * dim;
  const bool writes_cache = split == 0 && h % p.group == 0;
  T* kc_new = static_cast<T*>(L.k_cache) + (static_cast<long long>(kh) * p.cap + past) * dim;
  T* vc_new = static_cast<T*>(L.v_cache) + (static_cast<long long>(kh) * p.cap + past) * dim;
  // Warps 0 and 1 normalise the q head and the new key, warp 2 takes the new value, the rest
  // compute RoPE's angles: every load of the prologue is in flight at once.
  // Flags mode: the head's q (or its kv head's k, v) as dim / 2 words, up to two per lane
  // (four in the wide kernel: heads of 256; four in every kernel cost 1% of decode).
  constexpr int kWords = kWide ? 4 : 2;
  const auto take_head = [&](long long row, unsigned(&words)[kWords]) {
    mail_take<kWords>(p.mail_qkv + row / 2, lane, 32, dim / 2, lf, p.poll_ns, words);
  };
  const long long nq = static_cast<long long>(p.heads) * dim, nk = p.kv_heads * dim;
  if (warp < 2) {
    const T* src = warp == 0 ? qrow : krow;
    const T* norm = static_cast<const T*>(warp == 0 ? L.q_norm : L.k_norm);
    float* vals = warp == 0 ? sh.rq : sh.rk;
    float ss = 0.0f;
    int norm_n = dim;  // the values the norm runs over
    bool whole = false;
    if constexpr (kOlmo) whole = p.full_qk_norm;
    if (whole) {  // OLMo 2: the sum of squares over the whole projection, the head's values kept
      const int own = (warp == 0 ? h : kh) * dim;
      norm_n = warp == 0 ? static_cast<int>(nq) : static_cast<int>(nk);
      norm += own;
      ss = take_projection<T, kFlags>(p, warp == 0 ? 0 : nq, norm_n, own, dim, lf, vals);
      __syncwarp();
    } else if constexpr (kFlags) {
      unsigned words[kWords];
      take_head(warp == 0 ? h * dim : nq + kh * dim, words);
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const int w = lane + 32 * i;
        if (w >= dim / 2) break;
        const float a = low_half(words[i], T{}), b = high_half(words[i], T{});
        vals[2 * w] = a;
        vals[2 * w + 1] = b;
        ss += a * a + b * b;
      }
      __syncwarp();  // the norm below reads other lanes' values
    } else {
      for (int i = lane; i < dim; i += 32) {
        const float x = to_float(load_cg(src + i));
        vals[i] = x;
        ss += x * x;
      }
    }
    if (norm) {
      const float rs = rsqrtf(warp_sum(ss) / static_cast<float>(norm_n) + p.eps);
      for (int i = lane; i < dim; i += 32) {
        vals[i] =
            to_float(from_float<T>(to_float(norm[i]) * to_float(from_float<T>(vals[i] * rs))));
      }
    }
  } else if (warp == 2) {
    if constexpr (kFlags) {
      unsigned words[kWords];
      take_head(nq + nk + kh * dim, words);
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const int w = lane + 32 * i;
        if (w >= dim / 2) break;
        sh.vn[2 * w] = low_half(words[i], T{});
        sh.vn[2 * w + 1] = high_half(words[i], T{});
        if (writes_cache) reinterpret_cast<unsigned*>(vc_new)[w] = words[i];
      }
    } else {
      for (int d = lane; d < dim; d += 32) {
        const T vt = load_cg(vrow + d);
        sh.vn[d] = to_float(vt);
        if (writes_cache) vc_new[d] = vt;
      }
    }
  } else {
    const float pos = static_cast<float>(p.positions[0]);
    for (int j = tid - 96; j < half; j += kThreads - 96) {
      float sn, cs;
      sincosf(pos * L.inv_freq[j], &sn, &cs);
      const float scale = L.inv_freq[j] == 0.0f ? 1.0f : L.rope_scaling;  // 0: not rotated
      sh.cs[j] = cs * scale;
      sh.sn[j] = sn * scale;
    }
  }
  consumers_sync();
  mark(kItemInputs);
  for (int d = tid; d < dim; d += kThreads) {
    const int j = d < half ? d : d - half;
    const float c = sh.cs[j], sn = sh.sn[j];
    const float* rq = sh.rq;
    const float* rk = sh.rk;
    const T qt =
        from_float<T>(d < half ? rq[d] * c - rq[d + half] * sn : rq[d] * c + rq[d - half] * sn);
    const T kt =
        from_float<T>(d < half ? rk[d] * c - rk[d + half] * sn : rk[d] * c + rk[d - half] * sn);
    sh.qs[d] = to_float(qt) * p.scale;
    sh.kn[d] = to_float(kt);
    if (writes_cache) kc_new[d] = kt;
  }
  if constexpr (kPadded) {
    for (int d = dim + tid; d < lanes * 8; d += kThreads) {  // the padding lanes' zeros
      sh.qs[d] = 0.0f;
      sh.kn[d] = 0.0f;
      sh.vn[d] = 0.0f;
    }
  }
  consumers_sync();
  mark(kItemRoped);

  float qv[8];  // this thread's dimensions of q (the new key and value stay in shared memory)
#pragma unroll
  for (int i = 0; i < 8; ++i) qv[i] = sh.qs[sub * 8 + i];
  float m_run = -FLT_MAX, l_run = 0.0f, acc[8] = {};
  for (long long r0 = t0; r0 < t1; r0 += round_keys) {
    if (r0 != t0) load_round(r0);
    float m_loc = -FLT_MAX, score[kKeysPerThread];
#pragma unroll
    for (int u = 0; u < kKeysPerThread; ++u) {  // uniform: shuffles inside
      const long long t = r0 + slot + u * per_pass;
      float kf[8];
      widen8<T>(kraw[u], kf);
      if (t == past) {
#pragma unroll
        for (int i = 0; i < 8; ++i) kf[i] = sh.kn[sub * 8 + i];
      }
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) dot += qv[i] * kf[i];
      for (int o = lanes / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      score[u] = visible[u] != 0 ? (kWide ? soft_capped(dot, p.softcap) : dot) : -FLT_MAX;
      m_loc = fmaxf(m_loc, score[u]);
    }
    const float m_new = fmaxf(m_run, block_max(m_loc, sh.reduce));
    // Each thread's probabilities stay in registers; the threads of a key hold the same ones,
    // and the sum counts each key once (its first dimension chunk).
    float l_loc = 0.0f, pr[kKeysPerThread];
#pragma unroll
    for (int u = 0; u < kKeysPerThread; ++u) {
      pr[u] = score[u] == -FLT_MAX ? 0.0f : __expf(score[u] - m_new);
      if (sub == 0) l_loc += pr[u];
    }
    l_loc = block_sum(l_loc, sh.reduce);
    const float rescale = m_run == -FLT_MAX ? 0.0f : __expf(m_run - m_new);
    l_run = l_run * rescale + l_loc;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] *= rescale;
    m_run = m_new;
#pragma unroll
    for (int u = 0; u < kKeysPerThread; ++u) {
      if (pr[u] == 0.0f) continue;  // a masked key's value (maybe never written) is not read
      float vf[8];
      widen8<T>(vraw[u], vf);
      if (r0 + slot + u * per_pass == past) {
#pragma unroll
        for (int i = 0; i < 8; ++i) vf[i] = sh.vn[sub * 8 + i];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] += pr[u] * vf[i];
    }
  }
  mark(kItemScored);
  // The threads of one dimension chunk: first within the warp, then across warps.
  for (int o = lanes; o < 32; o <<= 1) {
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
  }
  float* part = sh.scores;  // [kWarps][dim]
  if (lane < chunks) {
#pragma unroll
    for (int i = 0; i < 8; ++i) part[warp * dim + lane * 8 + i] = acc[i];
  }
  consumers_sync();
  if (splits == 1) {  // the whole head: its output, no combine
    T* attn = static_cast<T*>(p.attn) + static_cast<long long>(h) * dim;
    for (int d = tid; d < dim; d += kThreads) {
      float s = 0.0f;
      for (int w = 0; w < kWarps; ++w) s += part[w * dim + d];
      const T value = from_float<T>(l_run > 0.0f ? s / l_run : 0.0f);
      attn[d] = value;
      if constexpr (kFlags) sh.rq[d] = to_float(value);
    }
    consumers_sync();        // shared memory is reused by the next item
    if constexpr (kFlags) {  // the head's output in pairs
      for (int j = tid; j < dim / 2; j += kThreads) {
        mail_put(p.mail_attn + (static_cast<long long>(h) * dim) / 2 + j, lf + 1,
                 pack_pair<T>(sh.rq[2 * j], sh.rq[2 * j + 1]));
      }
      consumers_sync();
    }
    mark(kItemDone);
    return;
  }
  float* out = p.partials + (static_cast<long long>(h) * splits + split) * partial_floats(dim);
  MailWord* mail = p.mail_part + (static_cast<long long>(h) * splits + split) * (dim + 2);
  for (int d = tid; d < dim; d += kThreads) {
    float s = 0.0f;
    for (int w = 0; w < kWarps; ++w) s += part[w * dim + d];
    out[d] = s;
    if constexpr (kFlags) mail_put(mail + d, lf + 1, __float_as_uint(s));
  }
  if (tid == 0) {
    out[dim] = m_run;
    out[dim + 1] = l_run;
    if constexpr (kFlags) {
      mail_put(mail + dim, lf + 1, __float_as_uint(m_run));
      mail_put(mail + dim + 1, lf + 1, __float_as_uint(l_run));
    }
  }
  consumers_sync();  // shared memory is reused by the next item
  mark(kItemDone);
}

// Flags mode: splits s0 .. s0 + N of head h (those below `splits`; zeros for the rest), as
// stage_attention reads them: the running max and sum (x, y of stats), dimensions d0 .. d0 + 8
// (lo, hi), once all ten words of each carry `flag`.
template <int N>
__device__ __forceinline__ void take_partials(const Params& p, int h, int d0, int s0, int splits,
                                              unsigned flag, float4 (&stats)[N], float4 (&lo)[N],
                                              float4 (&hi)[N]) {
  MailWord w[N][10] = {};
  const auto load = [&](int i) {
    const MailWord* at = p.mail_part + (static_cast<long long>(h) * splits + s0 + i) * (p.dim + 2);
    mail_load2(at + p.dim, w[i][0], w[i][1]);
#pragma unroll
    for (int j = 0; j < 4; ++j) mail_load2(at + d0 + 2 * j, w[i][2 + 2 * j], w[i][3 + 2 * j]);
  };
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (s0 + i < splits) load(i);
  }
  const auto has = [&](int i) {
    bool all = s0 + i < splits;
#pragma unroll
    for (int j = 0; j < 10; ++j) all = all && mail_has(w[i][j], flag);
    return all || s0 + i >= splits;
  };
  for (;;) {
    bool ready = true;
#pragma unroll
    for (int i = 0; i < N; ++i) ready = ready && has(i);
    if (ready) break;
    mail_backoff(p.poll_ns);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (!has(i)) load(i);
    }
  }
  const auto f = [](MailWord x) { return __uint_as_float(static_cast<unsigned>(x)); };
#pragma unroll
  for (int i = 0; i < N; ++i) {
    stats[i] = make_float4(f(w[i][0]), f(w[i][1]), 0.0f, 0.0f);
    lo[i] = make_float4(f(w[i][2]), f(w[i][3]), f(w[i][4]), f(w[i][5]));
    hi[i] = make_float4(f(w[i][6]), f(w[i][7]), f(w[i][8]), f(w[i][9]));
  }
}

// Flags mode (kFlags): the partials from their mailbox, flagged `flag`, two splits at a time
// (the words of four did not fit the registers beside the rest of the kernel).
template <class T, int kBatch, bool kFlags>
__device__ void combine_partials(const Params& p, const Shared& sh, int splits, unsigned flag) {
  uint4* xs = static_cast<uint4*>(sh.xs);
  const int vecs = p.heads * p.dim / 8, stride = partial_floats(p.dim);
  for (int c = threadIdx.x; c < vecs; c += kThreads) {
    const int h = c * 8 / p.dim, d0 = c * 8 % p.dim;
    const float* base = p.partials + static_cast<long long>(h) * splits * stride;
    float m = -FLT_MAX, l = 0.0f, a[8] = {};
    for (int s0 = 0; s0 < splits; s0 += kBatch) {
      float4 stats[kBatch], lo[kBatch], hi[kBatch];
      if constexpr (kFlags) {
        take_partials<kBatch>(p, h, d0, s0, splits, flag, stats, lo, hi);
      } else {
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          const float4 none = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          const float* part = base + static_cast<long long>(s0 + i) * stride;
          const bool in = s0 + i < splits;
          stats[i] = in ? __ldcg(reinterpret_cast<const float4*>(part + p.dim)) : none;
          lo[i] = in ? __ldcg(reinterpret_cast<const float4*>(part + d0)) : none;
          hi[i] = in ? __ldcg(reinterpret_cast<const float4*>(part + d0 + 4)) : none;
        }
      }
      float mb = m;
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (stats[i].y > 0.0f) mb = fmaxf(mb, stats[i].x);
      }
      const float f = l > 0.0f ? __expf(m - mb) : 0.0f;  // l == 0: a holds zeros
      l *= f;
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] *= f;
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const float w = stats[i].y > 0.0f ? __expf(stats[i].x - mb) : 0.0f;
        l += stats[i].y * w;
        const float v[8] = {lo[i].x, lo[i].y, lo[i].z, lo[i].w, hi[i].x, hi[i].y, hi[i].z, hi[i].w};
#pragma unroll
        for (int j = 0; j < 8; ++j) a[j] += v[j] * w;
      }
      m = mb;
    }
    uint4 packed;
    T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = from_float<T>(l > 0.0f ? a[i] / l : 0.0f);
    xs[c] = packed;
  }
  consumers_sync();
}

// The attention output o_proj multiplies, into xs: each head's split partials combined
// (weights exp(max_s - max), a split without keys weighs 0, a query that sees no key gets
// zeros) and rounded to T. Every block combines for itself; the head's last split had combined
// them inside the attention phase, after a fence, an arrival count and two more dependent L2
// round trips (its item took ~6 us where the others took ~3). The loads of several splits are
// in flight together (four in barrier mode, two in flags mode), so they cost one L2 round trip
// (a loop that loaded a split's max only once its sum showed it had keys cost two per split:
// +4-6 us per layer); later batches rescale what came before, as the online softmax does.
// Flags mode: from the mailbox, flagged `flag` (four lanes per output vector, each polling its
// share of the splits, measured 3-8% slower: four times the pollers).
template <class T, bool kFlags>
__device__ void stage_attention(const Params& p, const Shared& sh, int splits, unsigned flag) {
  if constexpr (kFlags) {
    combine_partials<T, 2, true>(p, sh, splits, flag);
  } else {
    combine_partials<T, 4, false>(p, sh, splits, flag);
  }
}

}  // namespace
}  // namespace anvil::cuda
