// What the prefill kernels that pack weight rows into panels (a vector per column of 16 rows)
// share: the 16 x 16 transpose that packs them and the store of a tile's sums. Included only by
// sources compiled with AVX-512 (kernels_avx512.cc, kernels_bf16dot.cc, kernels_amx.cc); static,
// so each keeps its own copy compiled with its own flags.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

namespace anvil::cpu {

// r[i] holds words 0..15 of row i; afterwards r[c] holds word c of rows 0..15 (row i in lane i).
static inline void transpose16(__m512i (&r)[16]) {
  __m512i a[16], b[16];
  for (int i = 0; i < 8; ++i) {
    a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // b[4i + m], 128-bit lane L: word 4L + m of rows 4i .. 4i + 3.
  for (int i = 0; i < 4; ++i) {
    b[4 * i] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);
    b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);
    b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);
  }
  // A 4 x 4 transpose of 128-bit lanes across b[m], b[4 + m], b[8 + m], b[12 + m].
  for (int m = 0; m < 4; ++m) {
    const __m512i s0 = _mm512_shuffle_i32x4(b[m], b[4 + m], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i s1 = _mm512_shuffle_i32x4(b[8 + m], b[12 + m], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i s2 = _mm512_shuffle_i32x4(b[m], b[4 + m], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i s3 = _mm512_shuffle_i32x4(b[8 + m], b[12 + m], _MM_SHUFFLE(3, 2, 3, 2));
    r[m] = _mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(2, 0, 2, 0));
    r[4 + m] = _mm512_shuffle_i32x4(s0, s1, _MM_SHUFFLE(3, 1, 3, 1));
    r[8 + m] = _mm512_shuffle_i32x4(s2, s3, _MM_SHUFFLE(2, 0, 2, 0));
    r[12 + m] = _mm512_shuffle_i32x4(s2, s3, _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// A tile's sums, acc[v][j] holding rows 16 v .. 16 v + 15 of the panel for activation row j0 + j,
// plus the bias into out[(j0 + j) * ldo + i] for the panel's rows i < nr and rows j < nx.
template <int V, int J>
static inline void store_panel_tile(const __m512 (&acc)[V][J], int nr, int nx, int64_t j0,
                                    const float* bias, float* out, int64_t ldo) {
  for (int v = 0; v < V && 16 * v < nr; ++v) {
    const auto m = static_cast<__mmask16>((1u << std::min(16, nr - 16 * v)) - 1);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + 16 * v) : _mm512_setzero_ps();
    for (int j = 0; j < nx; ++j) {
      _mm512_mask_storeu_ps(out + (j0 + j) * ldo + 16 * v, m, _mm512_add_ps(acc[v][j], b));
    }
  }
}

}  // namespace anvil::cpu
