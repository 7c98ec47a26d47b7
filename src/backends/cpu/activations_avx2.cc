// activations_avx2.h on 256-bit vectors.
#include "backends/cpu/activations_avx2.h"

#include <immintrin.h>

#include <algorithm>

#include "backends/cpu/exp_avx2.h"
#include "backends/cpu/gelu_tanh.h"

namespace anvil::cpu {

void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t i = 0; i < n; i += 8) {
    // The last block's lanes past n neither read nor written.
    const __m256i m =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(n - i, 8))), lane);
    const __m256 g = _mm256_maskload_ps(gate + i, m), u = _mm256_maskload_ps(up + i, m);
    // exp256 clamps its argument to [-87, 88]: for g < -88 this gives g / 1.7e38 ~ -0, silu's
    // limit there (g e^g underflows too).
    const __m256 e = exp256(_mm256_sub_ps(_mm256_setzero_ps(), g));
    _mm256_maskstore_ps(out + i, m, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), u));
  }
}

void geglu_avx2(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 c1 = _mm256_set1_ps(-kGeluTanhLinear), c3 = _mm256_set1_ps(-kGeluTanhCubic);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int64_t i = 0; i < n; i += 8) {
    const __m256i m =
        _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(n - i, 8))), lane);
    const __m256 g = _mm256_maskload_ps(gate + i, m), u = _mm256_maskload_ps(up + i, m);
    // g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)), GELU's tanh form (see geglu_avx512).
    const __m256 arg = _mm256_mul_ps(g, _mm256_fmadd_ps(_mm256_mul_ps(g, g), c3, c1));
    const __m256 e = exp256(arg);
    _mm256_maskstore_ps(out + i, m, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), u));
  }
}

}  // namespace anvil::cpu
