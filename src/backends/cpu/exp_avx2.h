// e^x on 256-bit vectors for the AVX2 + FMA translation units (attention_avx2.cc,
// activations_avx2.cc); include it only from files compiled with -mavx2 -mfma.
#pragma once

#include <immintrin.h>

namespace anvil::cpu {

// e^x per lane, as the AVX-512 kernels compute it (x clamped to [-87, 88], a degree-7
// polynomial of the remainder, ~2e-7 relative); 2^n is built in the exponent bits (n stays in
// [-126, 127], normal floats), and lanes below -87 (a masked key's -inf) give 0.
inline __m256 exp256(__m256 x) {
  const __m256 lo = _mm256_set1_ps(-87.0f);
  const __m256 below = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.0f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i pow2 =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(below, _mm256_mul_ps(p, _mm256_castsi256_ps(pow2)));
}

}  // namespace anvil::cpu
