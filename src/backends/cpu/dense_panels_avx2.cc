// AVX2 prefill panels for dense weights (dense_panels_avx2.h). Sixteen 256-bit registers: a
// tile holds 2 weight vectors x 6 activation rows = 12 accumulators, the two weight vectors and
// one broadcast. The dot-product kernels (quant_dot_avx2.cc: one weight row against one
// activation row, two FMA chains and a horizontal sum per pair) measured ~9 GMAC/s a core here.
#include "backends/cpu/dense_panels_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/aligned_vector.h"

namespace anvil::cpu {
namespace {

constexpr int kVectors = kAvx2PanelRows / 8;
constexpr int kTileRows = 6;

// 8 weights as floats, and one.
inline __m256 widen8(const float* p) {
  return _mm256_loadu_ps(p);
}
inline __m256 widen8(const uint16_t* p, bool is_f16) {
  const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if (is_f16) return _mm256_cvtph_ps(bits);
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
}
inline float widen1(float v) {
  return v;
}
inline float widen1(uint16_t bits, bool is_f16) {
  if (is_f16) return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits)));
  const uint32_t wide = uint32_t{bits} << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

// r[i]: 8 values of row i; afterwards r[c]: value c of rows 0..7 (row i in lane i).
inline void transpose8(__m256 (&r)[8]) {
  __m256 t[8], s[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 4h .. 4h + 3
    const __m256* a = t + 4 * h;
    s[4 * h] = _mm256_shuffle_ps(a[0], a[2], 0x44);
    s[4 * h + 1] = _mm256_shuffle_ps(a[0], a[2], 0xee);
    s[4 * h + 2] = _mm256_shuffle_ps(a[1], a[3], 0x44);
    s[4 * h + 3] = _mm256_shuffle_ps(a[1], a[3], 0xee);
  }
  for (int c = 0; c < 4; ++c) {
    r[c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x20);
    r[4 + c] = _mm256_permute2f128_ps(s[c], s[4 + c], 0x31);
  }
}

// Weight rows [0, nr) (nr <= kAvx2PanelRows, row stride k) as floats in a panel: value c of row
// i at panel[c * kAvx2PanelRows + i] (zeros past nr). Load8 / Load1 widen 8 values / one.
template <class W, class Load8, class Load1>
void pack_panel(const W* w, int nr, int64_t k, float* panel, Load8 load8, Load1 load1) {
  for (int v = 0; v < kVectors; ++v) {
    const int64_t whole = 8 * (v + 1) <= nr ? k / 8 : 0;  // transposes need 8 real rows
    for (int64_t c = 0; c < whole; ++c) {
      __m256 r[8];
      for (int i = 0; i < 8; ++i) r[i] = load8(w + (8 * v + i) * k + 8 * c);
      transpose8(r);
      for (int col = 0; col < 8; ++col) {
        _mm256_storeu_ps(panel + (8 * c + col) * kAvx2PanelRows + 8 * v, r[col]);
      }
    }
    for (int64_t c = 8 * whole; c < k; ++c) {
      for (int i = 8 * v; i < 8 * (v + 1); ++i) {
        panel[c * kAvx2PanelRows + i] = i < nr ? load1(w[i * k + c]) : 0.0f;
      }
    }
  }
}

// A panel against activation rows [j0, j0 + nx), nx <= kTileRows.
void panel_tile(const float* panel, int nr, const float* x, int64_t j0, int nx, int64_t k,
                const float* bias, float* out, int64_t ldo) {
  const float* xr[kTileRows];
  for (int j = 0; j < kTileRows; ++j) xr[j] = x + (j0 + std::min(j, nx - 1)) * k;
  __m256 acc[kVectors][kTileRows];
  for (auto& row : acc) {
    for (auto& a : row) a = _mm256_setzero_ps();
  }
  for (int64_t c = 0; c < k; ++c) {
    const __m256 w0 = _mm256_loadu_ps(panel + c * kAvx2PanelRows);
    const __m256 w1 = _mm256_loadu_ps(panel + c * kAvx2PanelRows + 8);
    for (int j = 0; j < kTileRows; ++j) {
      const __m256 xv = _mm256_set1_ps(xr[j][c]);
      acc[0][j] = _mm256_fmadd_ps(w0, xv, acc[0][j]);
      acc[1][j] = _mm256_fmadd_ps(w1, xv, acc[1][j]);
    }
  }
  // Every row of the tile by a constant index (an index known only at run time kept the
  // accumulators in memory, stored at every step).
  alignas(32) float sums[kTileRows][kAvx2PanelRows];
  for (int j = 0; j < kTileRows; ++j) {
    for (int v = 0; v < kVectors; ++v) _mm256_store_ps(sums[j] + 8 * v, acc[v][j]);
  }
  for (int j = 0; j < nx; ++j) {
    float* o = out + (j0 + j) * ldo;
    for (int i = 0; i < nr; ++i) o[i] = sums[j][i] + (bias ? bias[i] : 0.0f);
  }
}

template <class W, class Load8, class Load1>
void gemm_panels(const W* w, int64_t rows, const float* x, int64_t nx, int64_t k, const float* bias,
                 float* out, int64_t ldo, Load8 load8, Load1 load1) {
  thread_local AlignedVector<float> panel_store;
  if (panel_store.size() < static_cast<size_t>(k * kAvx2PanelRows)) {
    panel_store.resize(static_cast<size_t>(k * kAvx2PanelRows));
  }
  float* panel = panel_store.data();
  for (int64_t r0 = 0; r0 < rows; r0 += kAvx2PanelRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kAvx2PanelRows, rows - r0));
    pack_panel(w + r0 * k, nr, k, panel, load8, load1);
    for (int64_t j0 = 0; j0 < nx; j0 += kTileRows) {
      panel_tile(panel, nr, x, j0, static_cast<int>(std::min<int64_t>(kTileRows, nx - j0)), k,
                 bias ? bias + r0 : nullptr, out + r0, ldo);
    }
  }
}

}  // namespace

void gemm_dense_panels_f32_avx2(const float* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                                const float* bias, float* out, int64_t ldo) {
  gemm_panels(
      w, rows, x, nx, k, bias, out, ldo, [](const float* p) { return widen8(p); },
      [](float v) { return widen1(v); });
}

void gemm_dense_panels_bf16_avx2(const uint16_t* w, int64_t rows, const float* x, int64_t nx,
                                 int64_t k, const float* bias, float* out, int64_t ldo) {
  gemm_panels(
      w, rows, x, nx, k, bias, out, ldo, [](const uint16_t* p) { return widen8(p, false); },
      [](uint16_t v) { return widen1(v, false); });
}

void gemm_dense_panels_f16_avx2(const uint16_t* w, int64_t rows, const float* x, int64_t nx,
                                int64_t k, const float* bias, float* out, int64_t ldo) {
  gemm_panels(
      w, rows, x, nx, k, bias, out, ldo, [](const uint16_t* p) { return widen8(p, true); },
      [](uint16_t v) { return widen1(v, true); });
}

}  // namespace anvil::cpu
