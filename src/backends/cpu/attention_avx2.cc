// attention_avx2.h: the partial attention of a few query rows over a range of keys, 8 keys at a
// time, on 256-bit vectors.
#include "backends/cpu/attention_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "backends/cpu/cache_touch.h"
#include "backends/cpu/exp_avx2.h"
#include "backends/cpu/visible_keys.h"
#include "backends/cpu/with_count.h"

namespace anvil::cpu {
namespace {

constexpr int kBlock = 8;  // keys per block: one score per lane

// A cache element block of 8 as floats: float32, or IEEE half bits widened by F16C.
inline __m256 load_kv(const float* p) {
  return _mm256_loadu_ps(p);
}
inline __m256 load_kv(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// The sums of 4 vectors' lanes, one per lane of the result.
inline __m128 hsum4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// Lanes whose bit in `bits` is set.
inline __m256 lanes_of(uint32_t bits) {
  const __m256i select = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  const __m256i on = _mm256_and_si256(_mm256_set1_epi32(static_cast<int>(bits)), select);
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(on, select));
}

// The dot products of R query rows (R <= 2) with keys [0, nt) of k (nt <= 8, keys dim elements
// apart): out[r] holds row r's in lanes 0..nt-1 (the other lanes repeat the last key). Four keys
// at a time, each key vector loaded (and widened) once for the rows, every (row, key) sum its
// own FMA chain: 8 accumulators, 4 keys and a query vector in the 16 registers; before_keys(t)
// as keys t..t + 3 begin.
template <int R, class KV, class BeforeKeys>
inline void scores8_rows(const float* const* q, const KV* k, int nt, int64_t dim, __m256* out,
                         const BeforeKeys& before_keys) {
  alignas(32) float sc[R][kBlock];
  for (int t = 0; t < kBlock; t += 4) {
    before_keys(t);
    const KV* kt[4];
    for (int j = 0; j < 4; ++j) kt[j] = k + std::min(t + j, nt - 1) * dim;
    __m256 a[R][4];
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < 4; ++j) a[r][j] = _mm256_setzero_ps();
    }
    for (int64_t d = 0; d < dim; d += 8) {
      __m256 kv[4];
      for (int j = 0; j < 4; ++j) kv[j] = load_kv(kt[j] + d);
      for (int r = 0; r < R; ++r) {
        const __m256 qd = _mm256_loadu_ps(q[r] + d);
        for (int j = 0; j < 4; ++j) a[r][j] = _mm256_fmadd_ps(qd, kv[j], a[r][j]);
      }
    }
    for (int r = 0; r < R; ++r) _mm_store_ps(sc[r] + t, hsum4(a[r][0], a[r][1], a[r][2], a[r][3]));
  }
  for (int r = 0; r < R; ++r) out[r] = _mm256_load_ps(sc[r]);
}

// acc[r] += sum_t p[r * stride + t] v[t] for R rows (R <= 4) and keys t < nt, over C vectors of
// columns at once (C <= 2): each value vector loaded once for the rows, R x C independent FMA
// chains held in registers across the keys, each element's additions in the order of t.
template <int R, int C, class KV>
void accumulate_values(const float* p, int64_t stride, const KV* v, int64_t nt, int64_t dim,
                       float* acc) {
  for (int64_t c = 0; c < dim; c += 8 * C) {
    __m256 a[R][C];
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < C; ++i) a[r][i] = _mm256_loadu_ps(acc + r * dim + c + 8 * i);
    }
    for (int64_t t = 0; t < nt; ++t) {
      __m256 vt[C];
      for (int i = 0; i < C; ++i) vt[i] = load_kv(v + t * dim + c + 8 * i);
      for (int r = 0; r < R; ++r) {
        const __m256 pr = _mm256_set1_ps(p[r * stride + t]);
        for (int i = 0; i < C; ++i) a[r][i] = _mm256_fmadd_ps(pr, vt[i], a[r][i]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int i = 0; i < C; ++i) _mm256_storeu_ps(acc + r * dim + c + 8 * i, a[r][i]);
    }
  }
}

// Keys per chunk: a chunk's scores are all taken before its softmax, so the softmax's
// reductions (a horizontal max and sum, a scalar exp, the rescaling of acc) run once per row
// and chunk instead of once per row and block of 8 keys, and the values' sums stay in registers
// across the chunk. Per block they had made the kernel ~10 GMAC/s in cache (a quarter of two FMA
// pipes; bench/attention_bench.cc).
constexpr int kChunk = 8 * kBlock;
constexpr int kMaxRows = 16;

// cap * tanh(s / cap) (Gemma 2's logit softcapping), as softcap512 in kernels_avx512.cc.
inline __m256 softcap256(__m256 s, float cap) {
  const __m256 one = _mm256_set1_ps(1.0f), sign_bit = _mm256_set1_ps(-0.0f);
  const __m256 z = _mm256_mul_ps(s, _mm256_set1_ps(1.0f / cap));
  const __m256 e = exp256(_mm256_mul_ps(_mm256_andnot_ps(sign_bit, z), _mm256_set1_ps(-2.0f)));
  const __m256 magnitude = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
  return _mm256_mul_ps(_mm256_or_ps(magnitude, _mm256_and_ps(z, sign_bit)), _mm256_set1_ps(cap));
}

template <class KV>
void rows_partial(int rows, const float* const* q, const int64_t* last, int64_t window, const KV* k,
                  const KV* v, const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                  float scale, float softcap, float* acc, float* m, float* l) {
  for (int r = 0; r < rows; ++r) {
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0;
    std::memset(acc + r * dim, 0, static_cast<size_t>(dim) * sizeof(float));
  }
  int64_t max_last = -1;
  for (int r = 0; r < rows; ++r) max_last = std::max(max_last, last[r]);
  end = std::min(end, max_last + 1);
  begin = std::max(begin, first_key_of_rows(last, rows, window));
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const bool pairs = dim % 16 == 0;
  alignas(32) float p[kMaxRows * kChunk];  // a chunk's scores, then their exponentials
  const KeyValueReadAhead ahead(k, v, dim * static_cast<int64_t>(sizeof(KV)), begin, end, kBlock);
  for (int64_t c0 = begin; c0 < end; c0 += kChunk) {
    const int64_t keys = std::min<int64_t>(kChunk, end - c0);
    const int blocks = static_cast<int>((keys + kBlock - 1) / kBlock);
    for (int b = 0; b < blocks; ++b) {
      const int64_t t0 = c0 + b * kBlock;
      const int nt = static_cast<int>(std::min<int64_t>(kBlock, end - t0));
      ahead.before_block(t0);
      uint32_t open = 0;  // keys of the block that no mask hides
      for (int t = 0; t < nt; ++t) open |= (key_mask[t0 + t] != 0 ? 1u : 0u) << t;
      __m256 sc[2];
      for (int r = 0; r < rows; ++r) {
        if (r % 2 == 0) {
          with_count<2>(std::min(2, rows - r), [&](auto n) {
            scores8_rows<decltype(n)::value>(q + r, k + t0 * dim, nt, dim, sc, [&](int t) {
              if (r == 0) ahead.before_keys(t0 + t, 4);
            });
          });
        }
        const auto causal = static_cast<uint32_t>(
            visible_bits(ops::first_visible_key(last[r], window), last[r], t0, nt));
        const __m256 scaled = _mm256_mul_ps(sc[r % 2], _mm256_set1_ps(scale));
        const __m256 s = _mm256_blendv_ps(
            neg_inf, softcap > 0 ? softcap256(scaled, softcap) : scaled, lanes_of(open & causal));
        _mm256_store_ps(p + r * kChunk + b * kBlock, s);
      }
    }
    for (int r = 0; r < rows; ++r) {
      float* pr = p + r * kChunk;
      __m256 mx = neg_inf;
      for (int b = 0; b < blocks; ++b) mx = _mm256_max_ps(mx, _mm256_load_ps(pr + b * kBlock));
      const float chunk_max = hmax(mx);
      if (chunk_max == -std::numeric_limits<float>::infinity()) {  // no key of it visible
        for (int b = 0; b < blocks; ++b) _mm256_store_ps(pr + b * kBlock, _mm256_setzero_ps());
        continue;
      }
      const float m_new = std::max(m[r], chunk_max);
      const float corr = std::exp(m[r] - m_new);  // 0 when m was -inf
      const __m256 shift = _mm256_set1_ps(m_new);
      __m256 sum = _mm256_setzero_ps();
      for (int b = 0; b < blocks; ++b) {
        const __m256 e = exp256(_mm256_sub_ps(_mm256_load_ps(pr + b * kBlock), shift));
        _mm256_store_ps(pr + b * kBlock, e);
        sum = _mm256_add_ps(sum, e);
      }
      l[r] = l[r] * corr + hsum(sum);
      m[r] = m_new;
      if (corr != 1.0f) {
        float* ar = acc + r * dim;
        for (int64_t d = 0; d < dim; ++d) ar[d] *= corr;
      }
    }
    for (int r0 = 0; r0 < rows; r0 += 4) {
      with_count<4>(std::min(4, rows - r0), [&](auto n) {
        constexpr int R = decltype(n)::value;
        if (pairs) {
          accumulate_values<R, 2>(p + r0 * kChunk, kChunk, v + c0 * dim, keys, dim, acc + r0 * dim);
        } else {
          accumulate_values<R, 1>(p + r0 * kChunk, kChunk, v + c0 * dim, keys, dim, acc + r0 * dim);
        }
      });
    }
  }
}

// Rows beyond what the chunk's score buffer holds run as further walks over the keys (each
// walk's read-ahead then finds the lines the first one brought in: a pass over cached lines,
// small beside 16 rows' arithmetic over them; only prefill-sized calls take more than 16 rows).
template <class KV>
void rows_partial_any(int rows, const float* const* q, const int64_t* last, int64_t window,
                      const KV* k, const KV* v, const int32_t* key_mask, int64_t begin, int64_t end,
                      int64_t dim, float scale, float softcap, float* acc, float* m, float* l) {
  for (int r0 = 0; r0 < rows; r0 += kMaxRows) {
    rows_partial(std::min(kMaxRows, rows - r0), q + r0, last + r0, window, k, v, key_mask, begin,
                 end, dim, scale, softcap, acc + r0 * dim, m + r0, l + r0);
  }
}

}  // namespace

void attention_rows_partial_avx2(int rows, const float* const* q, const int64_t* last,
                                 int64_t window, const float* k, const float* v,
                                 const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                                 float scale, float softcap, float* acc, float* m, float* l,
                                 float* /*scratch*/) {
  rows_partial_any(rows, q, last, window, k, v, key_mask, begin, end, dim, scale, softcap, acc, m,
                   l);
}

void attention_rows_partial_avx2(int rows, const float* const* q, const int64_t* last,
                                 int64_t window, const uint16_t* k, const uint16_t* v,
                                 const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                                 float scale, float softcap, float* acc, float* m, float* l,
                                 float* /*scratch*/) {
  rows_partial_any(rows, q, last, window, k, v, key_mask, begin, end, dim, scale, softcap, acc, m,
                   l);
}

}  // namespace anvil::cpu
