// CPU attention over the KV cache. sdpa: one pass per query with an online softmax, reading
// each key and value once, grouped-query heads indexing their shared K/V head directly.
// eager: the score matrix of a head materialised, masked, softmaxed, then multiplied by V,
// the way transformers' eager_attention_forward does it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cpu/attention_avx2.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/kernels_avx512.h"
#include "backends/cpu/row_kernels.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

// A cache element as a float: the cache holds float32, or IEEE half bits (an f16 cache).
inline float kv_value(float x) {
  return x;
}
inline float kv_value(uint16_t h) {
  return f16_to_f32(h);
}

template <class KV>
inline float dot(const float* a, const KV* b, int64_t d) {
  float acc[8] = {};
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    for (int u = 0; u < 8; ++u) acc[u] += a[j + u] * kv_value(b[j + u]);
  }
  float s = 0;
  for (float v : acc) s += v;
  for (; j < d; ++j) s += a[j] * kv_value(b[j]);
  return s;
}

// A score after Gemma 2's logit softcapping (cap 0: none).
inline float capped(float score, float cap) {
  return cap > 0 ? std::tanh(score / cap) * cap : score;
}

struct Geometry {
  int64_t batch, seq, heads, dim, kv_heads, cap, total, group;
  explicit Geometry(const ops::AttentionArgs& a)
      : batch(a.q.size(0)),
        seq(a.q.size(1)),
        heads(a.q.size(2)),
        dim(a.q.size(3)),
        kv_heads(a.k_cache.size(1)),
        cap(a.k_cache.size(2)),
        total(a.past + a.q.size(1)),
        group(a.q.size(2) / a.k_cache.size(1)) {}
};

template <class KV>
void sdpa(const ops::AttentionArgs& a) {
  const Geometry g(a);
  const float* q = a.q.data<float>();
  const KV* kc = static_cast<const KV*>(a.k_cache.raw());
  const KV* vc = static_cast<const KV*>(a.v_cache.raw());
  const int32_t* mask = a.key_mask.data<int32_t>();
  float* out = a.out.data<float>();
  const int64_t items = g.batch * g.heads * g.seq;
  cpu::parallel_for(items, 1, [&](int64_t i0, int64_t i1) {
    thread_local std::vector<float> acc;  // grown once per thread, not allocated per call
    acc.resize(static_cast<size_t>(g.dim));
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t s = item % g.seq, h = (item / g.seq) % g.heads, b = item / (g.seq * g.heads);
      const int64_t kh = h / g.group;
      const float* qv = q + ((b * g.seq + s) * g.heads + h) * g.dim;
      const KV* kbase = kc + (b * g.kv_heads + kh) * g.cap * g.dim;
      const KV* vbase = vc + (b * g.kv_heads + kh) * g.cap * g.dim;
      const int32_t* mrow = mask + b * g.total;
      float m = -std::numeric_limits<float>::infinity(), l = 0;
      std::fill(acc.begin(), acc.end(), 0.0f);
      const int64_t last = a.past + s;
      for (int64_t t = ops::first_visible_key(last, a.window); t <= last; ++t) {
        if (mrow[t] == 0) continue;
        const float score = capped(dot(qv, kbase + t * g.dim, g.dim) * a.scale, a.softcap);
        const KV* vv = vbase + t * g.dim;
        if (score > m) {
          const float correction = std::exp(m - score);
          l = l * correction + 1.0f;
          for (int64_t j = 0; j < g.dim; ++j) acc[j] = acc[j] * correction + kv_value(vv[j]);
          m = score;
        } else {
          const float p = std::exp(score - m);
          l += p;
          for (int64_t j = 0; j < g.dim; ++j) acc[j] += p * kv_value(vv[j]);
        }
      }
      float* o = out + ((b * g.seq + s) * g.heads + h) * g.dim;
      const float inv = l > 0 ? 1.0f / l : 0.0f;
      for (int64_t j = 0; j < g.dim; ++j) o[j] = acc[j] * inv;
    }
  });
}

template <class KV>
void eager(const ops::AttentionArgs& a) {
  const Geometry g(a);
  const float* q = a.q.data<float>();
  const KV* kc = static_cast<const KV*>(a.k_cache.raw());
  const KV* vc = static_cast<const KV*>(a.v_cache.raw());
  const int32_t* mask = a.key_mask.data<int32_t>();
  float* out = a.out.data<float>();
  cpu::parallel_for(g.batch * g.heads, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> scores(static_cast<size_t>(g.seq * g.total));
    for (int64_t item = i0; item < i1; ++item) {
      const int64_t h = item % g.heads, b = item / g.heads, kh = h / g.group;
      const KV* kbase = kc + (b * g.kv_heads + kh) * g.cap * g.dim;
      const KV* vbase = vc + (b * g.kv_heads + kh) * g.cap * g.dim;
      const int32_t* mrow = mask + b * g.total;
      // scores = q k^T * scale, masked positions -inf.
      for (int64_t s = 0; s < g.seq; ++s) {
        const float* qv = q + ((b * g.seq + s) * g.heads + h) * g.dim;
        float* row = scores.data() + s * g.total;
        for (int64_t t = 0; t < g.total; ++t) {
          const bool visible =
              t <= a.past + s && t >= ops::first_visible_key(a.past + s, a.window) && mrow[t] != 0;
          row[t] = visible ? capped(dot(qv, kbase + t * g.dim, g.dim) * a.scale, a.softcap)
                           : -std::numeric_limits<float>::infinity();
        }
      }
      // softmax over keys, then probs @ V.
      for (int64_t s = 0; s < g.seq; ++s) {
        float* row = scores.data() + s * g.total;
        float* o = out + ((b * g.seq + s) * g.heads + h) * g.dim;
        std::fill(o, o + g.dim, 0.0f);
        const float m = *std::max_element(row, row + g.total);
        if (m == -std::numeric_limits<float>::infinity()) continue;
        float sum = 0;
        for (int64_t t = 0; t < g.total; ++t) {
          row[t] = std::exp(row[t] - m);
          sum += row[t];
        }
        for (int64_t t = 0; t < g.total; ++t) {
          const float p = row[t] / sum;
          if (p == 0.0f) continue;
          const KV* vv = vbase + t * g.dim;
          for (int64_t j = 0; j < g.dim; ++j) o[j] += p * kv_value(vv[j]);
        }
      }
    }
  });
}

// Query rows a partial-attention task runs together (a tile of positions times the group's heads).
constexpr int64_t kMaxDecodeRows = 16;

// Flash-decoding over a partial-attention kernel of the CPU's ISA (`rows_partial`: the
// signature of attention_rows_partial_avx512): tasks of (batch row, KV head, tile of query
// positions, range of keys), each running the tile's query rows (positions x the group's heads,
// at most kMaxDecodeRows) over its keys, so every K/V byte is read once per tile. Decode (one
// tile a head) splits the keys into ranges, merged at the end, so every thread has work even
// with 2-3 KV heads (splitting heads read each K/V twice); a prompt's tiles are tasks enough,
// each over all the keys its rows see and normalised by the task itself.
template <class KV, class Partial>
void sdpa_partials(const ops::AttentionArgs& a, Partial rows_partial) {
  const Geometry g(a);
  const float* q = a.q.data<float>();
  const KV* kc = static_cast<const KV*>(a.k_cache.raw());
  const KV* vc = static_cast<const KV*>(a.v_cache.raw());
  const int32_t* mask = a.key_mask.data<int32_t>();
  float* out = a.out.data<float>();
  const int64_t tile = std::max<int64_t>(1, kMaxDecodeRows / g.group);
  const int64_t tiles = (g.seq + tile - 1) / tile, heads_total = g.batch * g.kv_heads;
  // One tile (decode): its keys split into ranges, from the first one its window leaves (its
  // first query's).
  const int64_t first_key = tiles == 1 ? ops::first_visible_key(a.past, a.window) : 0;
  const int64_t parts =
      tiles == 1 ? decode_key_split(g.total - first_key, heads_total, threads()).parts : int64_t{1};
  const int64_t per_part = (g.total - first_key + parts - 1) / parts;
  const int64_t tasks = heads_total * tiles * parts;
  const int64_t max_rows = std::min(g.seq, tile) * g.group;
  const int64_t state = max_rows * (g.dim + 2);  // acc, m, l of one task
  // Split keys: every task's state kept for the merge; whole keys: one state per thread.
  thread_local std::vector<float> partial;
  const int64_t kept = parts > 1 ? tasks : 1;
  if (partial.size() < static_cast<size_t>(kept * state)) {
    partial.resize(static_cast<size_t>(kept * state));
  }
  float* states = partial.data();
  auto task = [&](int64_t id) {
    const int64_t part = id % parts, tl = (id / parts) % tiles, bh = id / (parts * tiles);
    const int64_t kh = bh % g.kv_heads, b = bh / g.kv_heads;
    const int64_t s0 = tl * tile, s1 = std::min(g.seq, s0 + tile);
    const int64_t rows = (s1 - s0) * g.group;
    const float* qs[kMaxDecodeRows];
    int64_t last[kMaxDecodeRows];
    for (int64_t s = s0; s < s1; ++s) {
      for (int64_t i = 0; i < g.group; ++i) {
        qs[(s - s0) * g.group + i] = q + ((b * g.seq + s) * g.heads + kh * g.group + i) * g.dim;
        last[(s - s0) * g.group + i] = a.past + s;
      }
    }
    thread_local std::vector<float> own;
    if (parts == 1 && own.size() < static_cast<size_t>(state))
      own.resize(static_cast<size_t>(state));
    float* st = parts > 1 ? states + id * state : own.data();
    alignas(64) float scratch[kMaxDecodeRows * kAttentionRunKeys];
    rows_partial(
        static_cast<int>(rows), qs, last, a.window, kc + (b * g.kv_heads + kh) * g.cap * g.dim,
        vc + (b * g.kv_heads + kh) * g.cap * g.dim, mask + b * g.total, first_key + part * per_part,
        std::min(g.total, first_key + (part + 1) * per_part), g.dim, a.scale, a.softcap, st,
        st + rows * g.dim, st + rows * g.dim + rows, scratch);
    if (parts > 1) return;
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t s = s0 + r / g.group, h = kh * g.group + r % g.group;
      merge_key_ranges(st, 1, state, rows, g.dim, r, out + ((b * g.seq + s) * g.heads + h) * g.dim);
    }
  };
  run_tasks(tasks, TaskRef(task));
  if (parts == 1) return;
  // Merge the key ranges of each query row (one tile a head).
  for (int64_t bh = 0; bh < heads_total; ++bh) {
    const int64_t kh = bh % g.kv_heads, b = bh / g.kv_heads;
    for (int64_t r = 0; r < max_rows; ++r) {
      const int64_t s = r / g.group, h = kh * g.group + r % g.group;
      merge_key_ranges(states + bh * parts * state, parts, state, max_rows, g.dim, r,
                       out + ((b * g.seq + s) * g.heads + h) * g.dim);
    }
  }
}

// The ISAs' partial-attention kernels as callables for sdpa_partials.
struct Avx512Partial {
  template <class... Args>
  void operator()(Args... args) const {
    attention_rows_partial_avx512(args...);
  }
};
struct Avx2Partial {
  template <class... Args>
  void operator()(Args... args) const {
    attention_rows_partial_avx2(args...);
  }
};

// AVX-512: tasks of (batch row, KV head, 16 of the head group's query rows), the rows taken
// position by position and within a position head by head, so a task fills the kernel's 16
// vector lanes and its rows' causal ranges stay close; K and V are read once per task (once per
// step in decode, once per 16 rows in a prefill: memory traffic is not quadratic). The last
// task of a group may hold a few rows, which the kernel runs as decode rows. A speculative
// check step (11 positions of 3 heads: 33 rows) runs two full tasks and one row per KV head,
// where tasks of whole heads ran 16 + 6 and 11 rows (69% of the lanes).
template <class KV>
void sdpa_avx512(const ops::AttentionArgs& a) {
  const Geometry g(a);
  const float* q = a.q.data<float>();
  const KV* kc = static_cast<const KV*>(a.k_cache.raw());
  const KV* vc = static_cast<const KV*>(a.v_cache.raw());
  const int32_t* mask = a.key_mask.data<int32_t>();
  float* out = a.out.data<float>();
  constexpr int64_t kLanes = 16;
  const int64_t group_rows = g.seq * g.group, groups = g.batch * g.kv_heads;
  // Fewer tasks than two a thread (a few positions of a large head group on many cores): fewer
  // rows a task, so every thread has work.
  const int64_t want = 2 * threads();
  const int64_t task_rows =
      groups * ((group_rows + kLanes - 1) / kLanes) >= want
          ? kLanes
          : std::clamp<int64_t>((groups * group_rows + want - 1) / want, 1, kLanes);
  const int64_t chunks = (group_rows + task_rows - 1) / task_rows;
  const int64_t tasks = groups * chunks;
  auto task = [&](int64_t id) {
    const int64_t chunk = id % chunks, kh = (id / chunks) % g.kv_heads;
    const int64_t b = id / (chunks * g.kv_heads);
    const int64_t r0 = chunk * task_rows, r1 = std::min(group_rows, r0 + task_rows);
    const float* qs[kLanes];
    float* outs[kLanes];
    int64_t last[kLanes];
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t s = r / g.group, h = kh * g.group + r % g.group;
      const int64_t at = ((b * g.seq + s) * g.heads + h) * g.dim;
      qs[r - r0] = q + at;
      outs[r - r0] = out + at;
      last[r - r0] = a.past + s;
    }
    thread_local std::vector<float> scratch;
    // 64-byte aligned: the kernel uses aligned vector loads on it.
    const size_t need = static_cast<size_t>(64 * g.dim + 288 + 16);
    if (scratch.size() < need) scratch.resize(need);
    float* aligned = scratch.data();
    while (reinterpret_cast<uintptr_t>(aligned) % 64 != 0) ++aligned;
    attention_rows_avx512(static_cast<int>(r1 - r0), qs, outs, last, a.window,
                          kc + (b * g.kv_heads + kh) * g.cap * g.dim,
                          vc + (b * g.kv_heads + kh) * g.cap * g.dim, mask + b * g.total, g.total,
                          g.dim, a.scale, aligned);
  };
  run_tasks(tasks, TaskRef(task));
}

// KV: the cache's element, float (an f32 cache) or uint16_t (IEEE half bits, an f16 cache).
template <class KV>
void attention_kernel(const ops::AttentionArgs& a) {
  const int64_t group = a.q.size(2) / a.k_cache.size(1);
  const bool avx2_partials =
      isa() >= Isa::avx2 && attention_avx2_takes(a.q.size(3)) && group <= kMaxDecodeRows;
  // Softcapped scores (Gemma 2): the partial kernels, which cap, in tiles of queries for a
  // prompt too (sdpa_avx512's transposed tiles do not); the scalar kernels below AVX2.
  if (a.softcap > 0 && a.impl == ops::AttentionImpl::sdpa && isa() >= Isa::avx512 &&
      group <= kMaxDecodeRows) {
    sdpa_partials<KV>(a, Avx512Partial{});
  } else if (a.softcap > 0 && a.impl == ops::AttentionImpl::sdpa && avx2_partials) {
    sdpa_partials<KV>(a, Avx2Partial{});
  } else if (a.softcap > 0) {
    a.impl == ops::AttentionImpl::eager ? eager<KV>(a) : sdpa<KV>(a);
  } else if (a.impl == ops::AttentionImpl::sdpa && isa() >= Isa::avx512) {
    if (a.q.size(1) * group <= kMaxDecodeRows) {
      sdpa_partials<KV>(a, Avx512Partial{});
    } else {
      sdpa_avx512<KV>(a);
    }
  } else if (a.impl == ops::AttentionImpl::sdpa && avx2_partials) {
    sdpa_partials<KV>(a, Avx2Partial{});
  } else if (a.impl == ops::AttentionImpl::eager) {
    eager<KV>(a);
  } else {
    sdpa<KV>(a);
  }
}

template <class KV>
void store_kv_kernel(const ops::StoreKvArgs& a) {
  const int64_t batch = a.src.size(0), seq = a.src.size(1), heads = a.src.size(2);
  const int64_t dim = a.src.size(3), cap = a.cache.size(2);
  const int64_t start = a.start;
  const float* src = a.src.data<float>();
  KV* cache = static_cast<KV*>(a.cache.raw());
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      for (int64_t h = 0; h < heads; ++h) {
        write_cache_row(cache + ((b * heads + h) * cap + start + s) * dim,
                        src + ((b * seq + s) * heads + h) * dim, dim);
      }
    }
  }
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_attention() {
  // Keyed by (activation dtype, cache dtype): an f32 or an f16 cache.
  register_kernel<ops::AttentionArgs>(ops::kAttention, DeviceType::cpu, DType::f32, DType::f32,
                                      &cpu::attention_kernel<float>);
  register_kernel<ops::AttentionArgs>(ops::kAttention, DeviceType::cpu, DType::f32, DType::f16,
                                      &cpu::attention_kernel<uint16_t>);
  register_kernel<ops::AttentionArgs>(ops::kAttentionSoftcap, DeviceType::cpu, DType::f32,
                                      DType::f32, &cpu::attention_kernel<float>);
  register_kernel<ops::AttentionArgs>(ops::kAttentionSoftcap, DeviceType::cpu, DType::f32,
                                      DType::f16, &cpu::attention_kernel<uint16_t>);
  register_kernel<ops::StoreKvArgs>(ops::kStoreKv, DeviceType::cpu, DType::f32, DType::f32,
                                    &cpu::store_kv_kernel<float>);
  register_kernel<ops::StoreKvArgs>(ops::kStoreKv, DeviceType::cpu, DType::f32, DType::f16,
                                    &cpu::store_kv_kernel<uint16_t>);
}

}  // namespace anvil
