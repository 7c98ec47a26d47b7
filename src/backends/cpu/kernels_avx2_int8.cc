// kernels_avx2_int8.h: quant_int8_kernels.inc compiled for AVX2 + FMA + F16C.
#include "backends/cpu/kernels_avx2_int8.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/aligned_vector.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/repack.h"
#include "backends/cpu/side_by_side.h"
#include "backends/cpu/with_count.h"

namespace anvil::cpu {
namespace {

// The primitives quant_int8_kernels.inc builds on. vpmaddubsw adds two u8 x s8 products into
// a saturating int16: exact for weights below 128 against activations in [-127, 127] (and for
// |w| <= 128 against them: Q8_0, kSignedQ8).
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
  const __m256i pairs = _mm256_maddubs_epi16(u, s);
  return _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}
#include "backends/cpu/int8_avx2_primitives.inc"

// vpmaddubsw's int16 pairs overflow with Q8_0's q + 128: its weights are multiplied as signed.
constexpr bool kSignedQ8 = true;
// dot_u8s8 is three instructions here, two of them on the multiply pipes: Q4 blocks sum their
// vpmaddubsw pairs in int16 and widen them once per block (q4_block_sums).
constexpr bool kInt16Pairs = true;

#include "backends/cpu/quant_int8_kernels.inc"

inline float hmax256(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

inline int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

}  // namespace

void quantize_rows_q8_avx2(const float* x, int64_t n, const Q8Rows& o) {
  const int64_t kb = o.k / 32;
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t b = 0; b < kb; ++b) {
      const float* p = x + r * o.k + b * 32;
      __m256 v[4];
      __m256 m = _mm256_setzero_ps();
      for (int i = 0; i < 4; ++i) {
        v[i] = _mm256_loadu_ps(p + 8 * i);
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, v[i]));
      }
      const float amax = hmax256(m);
      const float d = amax / 127.0f;
      const __m256 id = _mm256_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
      __m256i q[4];
      for (int i = 0; i < 4; ++i) q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
      // Pack 32 int32 to 32 int8 (the packs interleave 128-bit halves; the permute restores the
      // order).
      const __m256i w16a = _mm256_packs_epi32(q[0], q[1]), w16b = _mm256_packs_epi32(q[2], q[3]);
      const __m256i w8 = _mm256_packs_epi16(w16a, w16b);
      const __m256i ordered =
          _mm256_permutevar8x32_epi32(w8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o.q + r * o.k + b * 32), ordered);
      o.d[r * kb + b] = d;
      const int32_t sum =
          hsum_i32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
      o.s[r * kb + b] = sum;
      o.ds[r * kb + b] = d * static_cast<float>(sum);
    }
  }
}

void gemm_quant_avx2(QuantKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                     const Q8Rows& x, int64_t nx, const float* bias, float* out, int64_t ldo) {
  gemm_quant_impl(kind, w, row_bytes, rows, x, nx, bias, out, ldo);
}

void gemm_packed_avx2(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                      int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                      float* out, int64_t ldo) {
  gemm_packed_impl(kind, packed, block_bytes, rows, g0, g1, x, nx, bias, out, ldo);
}

void packed_lanes_avx2(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                       const Lanes& lanes, const Q8Rows& x, int64_t nx, const float* bias,
                       float* out, int64_t ldo) {
  packed_lanes_impl(kind, packed, block_bytes, rows, lanes, x, nx, bias, out, ldo);
}

}  // namespace anvil::cpu
