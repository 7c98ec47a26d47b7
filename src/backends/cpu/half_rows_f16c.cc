#include "backends/cpu/half_rows_f16c.h"

#include <immintrin.h>

namespace anvil::cpu {

void f32_to_f16_row_f16c(const float* src, int64_t n, uint16_t* dst) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
  for (; i < n; ++i) {
    const __m128i h = _mm_cvtps_ph(_mm_set_ss(src[i]), _MM_FROUND_TO_NEAREST_INT);
    dst[i] = static_cast<uint16_t>(_mm_extract_epi16(h, 0));
  }
}

}  // namespace anvil::cpu
