// AVX-512 kernels. Quantized weights: the activations are quantized once per op to int8 blocks
// (llama.cpp's Q8 activation format) and each 32-value block product is one VNNI instruction
// (vpdpbusd: unsigned weight bytes times signed activation bytes, summed in int32), scaled in
// float32 by the weight and activation block scales. Signed weights (Q8_0) are made unsigned by
// flipping the sign bit (q + 128) and Q4_0's nibbles are used as stored (q, not q - 8); the offset
// times the block's activation sum starts the int32 sum. Q4_1's minimum adds m * d_x * sum(q_x).
// Float weights (f32, bf16 widened by a 16-bit shift) use float32 FMA: exact products, so the
// result is float32 summation of the same terms as the reference.
// Register tiles: NR weight rows x NX activation rows, each weight block decoded once per tile
// and reused for every activation row in it. Compiled with -mavx512f/bw/vl/dq/vnni -mavx2 -mfma
// -mf16c; only called after cpu::isa() returned Isa::avx512.
#include "backends/cpu/kernels_avx512.h"
#include "backends/cpu/gelu_tanh.h"

// GCC 12's AVX-512 intrinsics start some results from an uninitialised "undefined" vector and
// warn about their own code (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "backends/cpu/aligned_vector.h"
#include "backends/cpu/cache_touch.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/panel_tiles_avx512.h"
#include "backends/cpu/repack.h"
#include "backends/cpu/side_by_side.h"
#include "backends/cpu/visible_keys.h"
#include "backends/cpu/with_count.h"

namespace anvil::cpu {
namespace {

// The primitives quant_int8_kernels.inc builds on (AVX-512 VL + VNNI).
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
  return _mm256_dpbusd_epi32(acc, u, s);
}
inline __m256i first_lane_i32(int32_t v) {
  return _mm256_maskz_set1_epi32(1, v);
}
inline __m256 first_lane_ps(__m256 v) {
  return _mm256_maskz_mov_ps(1, v);
}
inline __m256i bits_to_bytes(uint32_t bits) {
  return _mm256_movm_epi8(bits);
}

constexpr int kVectorRegisters = 32;
constexpr bool kSignedQ8 = false;    // vpdpbusd takes Q8_0's q + 128 as it is
constexpr bool kInt16Pairs = false;  // one vpdpbusd per step already

// 512-bit tiles for the repacked layouts (quant_int8_wide.inc).
#define ANVIL_INT8_WIDE_TILES 1
#include "backends/cpu/quant_int8_kernels.inc"

// Horizontal sum of 16 floats (not _mm512_reduce_add_ps: GCC 12's version starts from an
// "undefined" vector, which kept a whole tile of accumulators in memory).
inline float hsum512(__m512 v) {
  return hsum256(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// IEEE half weights: their own type, as bf16 weights are the bits in uint16_t.
struct F16 {
  uint16_t bits;
};

// 16 weights as floats: f32 loaded, bf16 widened (a 16-bit left shift of the bits), f16
// converted (vcvtph2ps, exact).
inline __m512 load_w16(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
inline __m512 load_w16(const uint16_t* p, __mmask16 m) {
  const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
}
inline __m512 load_w16(const F16* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// The line `ahead` bytes past `at` requested into L2 (integer arithmetic: the address may lie
// past the matrix, where a prefetch does not fault but a pointer may not point).
template <class W>
inline void request_ahead(const W* at, size_t ahead) {
  _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(at) + ahead), _MM_HINT_T1);
}

// 4 weight rows x 4 activation rows. The 16 accumulators are named variables: as an array GCC 12
// kept a memory copy of all of them updated every iteration (a store per FMA: 3-9 GMAC/s per
// core instead of ~30).
// `ahead` (bytes; 0 for none) requests each row's line that far ahead into L2 as the tile
// reaches a new line of it: the four rows are four streams from DRAM, which the hardware
// prefetchers alone left at ~10 GB/s (decode_read_ahead's reason, cpu_isa.h).
template <class W>
void dense_tile(const W* w, int nr, const float* x, int64_t j0, int nx, int64_t k,
                const float* bias, float* out, int64_t ldo, size_t ahead) {
  const W* w0 = w;
  const W* w1 = w + std::min(1, nr - 1) * k;
  const W* w2 = w + std::min(2, nr - 1) * k;
  const W* w3 = w + std::min(3, nr - 1) * k;
  const float* x0 = x + j0 * k;
  const float* x1 = x + (j0 + std::min(1, nx - 1)) * k;
  const float* x2 = x + (j0 + std::min(2, nx - 1)) * k;
  const float* x3 = x + (j0 + std::min(3, nx - 1)) * k;
  __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a10 = a00, a11 = a00,
         a12 = a00, a13 = a00, a20 = a00, a21 = a00, a22 = a00, a23 = a00, a30 = a00, a31 = a00,
         a32 = a00, a33 = a00;
  constexpr int64_t kLine = 64 / sizeof(W);  // elements a cache line
  for (int64_t c = 0; c < k; c += 16) {
    const auto m =
        k - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (k - c)) - 1);
    if (ahead && c % kLine == 0) {  // past a row's end: the rows after it, read next
      for (const W* row : {w0, w1, w2, w3}) request_ahead(row + c, ahead);
    }
    const __m512 v0 = load_w16(w0 + c, m), v1 = load_w16(w1 + c, m), v2 = load_w16(w2 + c, m),
                 v3 = load_w16(w3 + c, m);
    __m512 xv = _mm512_maskz_loadu_ps(m, x0 + c);
    a00 = _mm512_fmadd_ps(v0, xv, a00);
    a10 = _mm512_fmadd_ps(v1, xv, a10);
    a20 = _mm512_fmadd_ps(v2, xv, a20);
    a30 = _mm512_fmadd_ps(v3, xv, a30);
    xv = _mm512_maskz_loadu_ps(m, x1 + c);
    a01 = _mm512_fmadd_ps(v0, xv, a01);
    a11 = _mm512_fmadd_ps(v1, xv, a11);
    a21 = _mm512_fmadd_ps(v2, xv, a21);
    a31 = _mm512_fmadd_ps(v3, xv, a31);
    xv = _mm512_maskz_loadu_ps(m, x2 + c);
    a02 = _mm512_fmadd_ps(v0, xv, a02);
    a12 = _mm512_fmadd_ps(v1, xv, a12);
    a22 = _mm512_fmadd_ps(v2, xv, a22);
    a32 = _mm512_fmadd_ps(v3, xv, a32);
    xv = _mm512_maskz_loadu_ps(m, x3 + c);
    a03 = _mm512_fmadd_ps(v0, xv, a03);
    a13 = _mm512_fmadd_ps(v1, xv, a13);
    a23 = _mm512_fmadd_ps(v2, xv, a23);
    a33 = _mm512_fmadd_ps(v3, xv, a33);
  }
  const float sums[4][4] = {{hsum512(a00), hsum512(a01), hsum512(a02), hsum512(a03)},
                            {hsum512(a10), hsum512(a11), hsum512(a12), hsum512(a13)},
                            {hsum512(a20), hsum512(a21), hsum512(a22), hsum512(a23)},
                            {hsum512(a30), hsum512(a31), hsum512(a32), hsum512(a33)}};
  for (int j = 0; j < nx; ++j) {
    for (int i = 0; i < nr; ++i) out[(j0 + j) * ldo + i] = sums[i][j] + (bias ? bias[i] : 0.0f);
  }
}

// dense_tile for two activation rows (a batch of two, or the last two of three): the 4 x 4
// tile would multiply each of them twice.
template <class W>
void dense_tile2(const W* w, int nr, const float* x, int64_t j0, int nx, int64_t k,
                 const float* bias, float* out, int64_t ldo, size_t ahead) {
  const W* w0 = w;
  const W* w1 = w + std::min(1, nr - 1) * k;
  const W* w2 = w + std::min(2, nr - 1) * k;
  const W* w3 = w + std::min(3, nr - 1) * k;
  const float* x0 = x + j0 * k;
  const float* x1 = x + (j0 + std::min(1, nx - 1)) * k;
  // Named accumulators, as in dense_tile: an array indexed by the row counts at the end stayed
  // in memory, a store after every FMA.
  __m512 a00 = _mm512_setzero_ps(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00,
         a30 = a00, a31 = a00;
  constexpr int64_t kLine = 64 / sizeof(W);
  for (int64_t c = 0; c < k; c += 16) {
    const auto m =
        k - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (k - c)) - 1);
    if (ahead && c % kLine == 0) {
      for (const W* row : {w0, w1, w2, w3}) request_ahead(row + c, ahead);
    }
    const __m512 xa = _mm512_maskz_loadu_ps(m, x0 + c), xb = _mm512_maskz_loadu_ps(m, x1 + c);
    __m512 v = load_w16(w0 + c, m);
    a00 = _mm512_fmadd_ps(v, xa, a00);
    a01 = _mm512_fmadd_ps(v, xb, a01);
    v = load_w16(w1 + c, m);
    a10 = _mm512_fmadd_ps(v, xa, a10);
    a11 = _mm512_fmadd_ps(v, xb, a11);
    v = load_w16(w2 + c, m);
    a20 = _mm512_fmadd_ps(v, xa, a20);
    a21 = _mm512_fmadd_ps(v, xb, a21);
    v = load_w16(w3 + c, m);
    a30 = _mm512_fmadd_ps(v, xa, a30);
    a31 = _mm512_fmadd_ps(v, xb, a31);
  }
  const float sums[4][2] = {{hsum512(a00), hsum512(a01)},
                            {hsum512(a10), hsum512(a11)},
                            {hsum512(a20), hsum512(a21)},
                            {hsum512(a30), hsum512(a31)}};
  for (int j = 0; j < nx; ++j) {
    for (int i = 0; i < nr; ++i) out[(j0 + j) * ldo + i] = sums[i][j] + (bias ? bias[i] : 0.0f);
  }
}

// 2 weight rows x 8 activation rows, for batches of 5-8: the 4 x 4 tile read each weight row
// from DRAM for the first four activation rows and again from cache for the rest, and its DRAM
// pass, four rows of 16 FMAs a line, waited on memory without the second pass's multiplies to
// overlap. Here each weight row is read once, its line feeding 8 FMAs. Named accumulators, as in
// dense_tile.
template <class W>
void dense_tile8(const W* w, int nr, const float* x, int64_t j0, int nx, int64_t k,
                 const float* bias, float* out, int64_t ldo, size_t ahead) {
  const W* w0 = w;
  const W* w1 = w + std::min(1, nr - 1) * k;
  const float* xr[8];
  for (int j = 0; j < 8; ++j) xr[j] = x + (j0 + std::min(j, nx - 1)) * k;
  __m512 a00 = _mm512_setzero_ps(), a01 = a00, a02 = a00, a03 = a00, a04 = a00, a05 = a00,
         a06 = a00, a07 = a00, a10 = a00, a11 = a00, a12 = a00, a13 = a00, a14 = a00, a15 = a00,
         a16 = a00, a17 = a00;
  constexpr int64_t kLine = 64 / sizeof(W);
  for (int64_t c = 0; c < k; c += 16) {
    const auto m =
        k - c >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (k - c)) - 1);
    if (ahead && c % kLine == 0) {
      request_ahead(w0 + c, ahead);
      request_ahead(w1 + c, ahead);
    }
    const __m512 v0 = load_w16(w0 + c, m), v1 = load_w16(w1 + c, m);
    __m512 xv = _mm512_maskz_loadu_ps(m, xr[0] + c);
    a00 = _mm512_fmadd_ps(v0, xv, a00);
    a10 = _mm512_fmadd_ps(v1, xv, a10);
    xv = _mm512_maskz_loadu_ps(m, xr[1] + c);
    a01 = _mm512_fmadd_ps(v0, xv, a01);
    a11 = _mm512_fmadd_ps(v1, xv, a11);
    xv = _mm512_maskz_loadu_ps(m, xr[2] + c);
    a02 = _mm512_fmadd_ps(v0, xv, a02);
    a12 = _mm512_fmadd_ps(v1, xv, a12);
    xv = _mm512_maskz_loadu_ps(m, xr[3] + c);
    a03 = _mm512_fmadd_ps(v0, xv, a03);
    a13 = _mm512_fmadd_ps(v1, xv, a13);
    xv = _mm512_maskz_loadu_ps(m, xr[4] + c);
    a04 = _mm512_fmadd_ps(v0, xv, a04);
    a14 = _mm512_fmadd_ps(v1, xv, a14);
    xv = _mm512_maskz_loadu_ps(m, xr[5] + c);
    a05 = _mm512_fmadd_ps(v0, xv, a05);
    a15 = _mm512_fmadd_ps(v1, xv, a15);
    xv = _mm512_maskz_loadu_ps(m, xr[6] + c);
    a06 = _mm512_fmadd_ps(v0, xv, a06);
    a16 = _mm512_fmadd_ps(v1, xv, a16);
    xv = _mm512_maskz_loadu_ps(m, xr[7] + c);
    a07 = _mm512_fmadd_ps(v0, xv, a07);
    a17 = _mm512_fmadd_ps(v1, xv, a17);
  }
  const float sums[2][8] = {{hsum512(a00), hsum512(a01), hsum512(a02), hsum512(a03), hsum512(a04),
                             hsum512(a05), hsum512(a06), hsum512(a07)},
                            {hsum512(a10), hsum512(a11), hsum512(a12), hsum512(a13), hsum512(a14),
                             hsum512(a15), hsum512(a16), hsum512(a17)}};
  for (int j = 0; j < nx; ++j) {
    for (int i = 0; i < nr; ++i) out[(j0 + j) * ldo + i] = sums[i][j] + (bias ? bias[i] : 0.0f);
  }
}

// Matrix-vector for float weights: one sequential stream per thread, 4 accumulators (software
// prefetch measured slower here: the rows are one contiguous stream the hardware follows).
template <class W>
void dense_matvec(const W* w, int64_t rows, const float* x, int64_t k, const float* bias,
                  float* out) {
  for (int64_t r = 0; r < rows; ++r) {
    const W* row = w + r * k;
    __m512 acc[4];
    for (auto& a : acc) a = _mm512_setzero_ps();
    int64_t c = 0;
    for (; c + 64 <= k; c += 64) {
      for (int u = 0; u < 4; ++u) {
        acc[u] = _mm512_fmadd_ps(load_w16(row + c + 16 * u, 0xffff),
                                 _mm512_loadu_ps(x + c + 16 * u), acc[u]);
      }
    }
    for (; c < k; c += 16) {
      const __mmask16 m =
          k - c >= 16 ? __mmask16{0xffff} : static_cast<__mmask16>((1u << (k - c)) - 1);
      acc[0] = _mm512_fmadd_ps(load_w16(row + c, m), _mm512_maskz_loadu_ps(m, x + c), acc[0]);
    }
    const __m512 total =
        _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    out[r] = _mm512_reduce_add_ps(total) + (bias ? bias[r] : 0.0f);
  }
}

// Batches below the panels' rows (kDensePanelMinRows), four weight rows at a time: activation
// rows in tiles of 8 (2 x 8 tiles, each weight row read once for them) while five or more are
// left, the last one to four in a 4 x 4 or 4 x 2 tile. The first tile of a weight row reads it
// from memory, requesting its lines ahead; the later ones read it from cache.
template <class W>
void dense_gemm(const W* w, int64_t rows, const float* x, int64_t nx, int64_t k, const float* bias,
                float* out, int64_t ldo) {
  const auto ahead = static_cast<size_t>(2 * decode_read_ahead());
  for (int64_t r0 = 0; r0 < rows; r0 += 4) {
    const int nr = static_cast<int>(std::min<int64_t>(4, rows - r0));
    for (int64_t j0 = 0; j0 < nx;) {
      const int n = static_cast<int>(std::min<int64_t>(8, nx - j0));
      const size_t first = j0 == 0 ? ahead : 0;
      if (n >= 5) {
        for (int i = 0; i < nr; i += 2) {
          dense_tile8<W>(w + (r0 + i) * k, std::min(2, nr - i), x, j0, n, k,
                         bias ? bias + r0 + i : nullptr, out + r0 + i, ldo, first);
        }
      } else {
        (n <= 2 ? dense_tile2<W> : dense_tile<W>)(w + r0 * k, nr, x, j0, n, k,
                                                  bias ? bias + r0 : nullptr, out + r0, ldo, first);
      }
      j0 += n;
    }
  }
}

// Prefill's shape (from kDensePanelMinRows activation rows): the weights converted to float and
// packed per call 64 rows at a time, a vector per column of 16 rows (a 16 x 16 transpose per 16
// columns, paid back over the prompt's rows), against tiles of 6 activation rows whose values
// are broadcast: each broadcast feeds four FMAs into 16 rows' lanes and no horizontal sums
// remain (the int8 and bf16 prefill tiles' shape). The tile above loads a weight and an
// activation vector per pair of FMAs. 24 accumulators, 4 weight vectors and a broadcast: 29 of
// the 32 registers.
constexpr int kDenseVectors = kDensePanelRows / 16;
constexpr int kDenseTileRows = 6;

// Weight rows [0, nr) (nr <= kDensePanelRows, row stride k) as floats in a panel: value c of row
// i at panel[c * kDensePanelRows + i] (zeros past nr).
template <class W>
void pack_dense_panel(const W* w, int nr, int64_t k, float* panel) {
  for (int v = 0; v < kDenseVectors; ++v) {
    const int64_t whole = 16 * (v + 1) <= nr ? k / 16 : 0;  // transposes need 16 real rows
    for (int64_t c = 0; c < whole; ++c) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) {
        r[i] = _mm512_castps_si512(load_w16(w + (16 * v + i) * k + 16 * c, 0xffff));
      }
      transpose16(r);
      for (int col = 0; col < 16; ++col) {
        _mm512_storeu_si512(panel + (16 * c + col) * kDensePanelRows + 16 * v, r[col]);
      }
    }
    for (int64_t c = 16 * whole; c < k; ++c) {
      for (int i = 16 * v; i < 16 * (v + 1); ++i) {
        panel[c * kDensePanelRows + i] = i < nr ? _mm512_cvtss_f32(load_w16(w + i * k + c, 1)) : 0;
      }
    }
  }
}

// A panel against the J activation rows from j0 (J <= kDenseTileRows; J below it takes a
// prompt's last tile without multiplying rows it does not have): out[(j0 + j) * ldo + i] for the
// panel's rows i < nr. Lines [0, ahead_lines) from `ahead` are requested into L2, one per
// column step, so that the requests never queue up behind each other.
template <int J>
void dense_panel_tile(const float* panel, int nr, const float* x, int64_t j0, int64_t k,
                      const float* bias, float* out, int64_t ldo, const char* ahead,
                      int64_t ahead_lines) {
  static_assert(J <= kDenseTileRows);
  const float* xr[J];
  for (int j = 0; j < J; ++j) xr[j] = x + (j0 + j) * k;
  __m512 acc[kDenseVectors][J];
  for (auto& row : acc) {
    for (auto& a : row) a = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < k; ++c) {
    if (c < ahead_lines) _mm_prefetch(ahead + 64 * c, _MM_HINT_T1);
    __m512 w[kDenseVectors];
    for (int v = 0; v < kDenseVectors; ++v) {
      w[v] = _mm512_loadu_ps(panel + c * kDensePanelRows + 16 * v);
    }
    for (int j = 0; j < J; ++j) {
      const __m512 xv = _mm512_set1_ps(xr[j][c]);
      for (int v = 0; v < kDenseVectors; ++v) acc[v][j] = _mm512_fmadd_ps(w[v], xv, acc[v][j]);
    }
  }
  store_panel_tile(acc, nr, J, j0, bias, out, ldo);
}

// dense_panel_tile for a tile of n real rows, n = 1 .. kDenseTileRows.
using DensePanelTile = void (*)(const float*, int, const float*, int64_t, int64_t, const float*,
                                float*, int64_t, const char*, int64_t);
constexpr DensePanelTile kDensePanelTiles[kDenseTileRows + 1] = {nullptr,
                                                                 &dense_panel_tile<1>,
                                                                 &dense_panel_tile<2>,
                                                                 &dense_panel_tile<3>,
                                                                 &dense_panel_tile<4>,
                                                                 &dense_panel_tile<5>,
                                                                 &dense_panel_tile<6>};
static_assert(kDenseTileRows == 6, "kDensePanelTiles lists one kernel per tile height");

template <class W>
void dense_gemm_panels(const W* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                       const float* bias, float* out, int64_t ldo) {
  thread_local AlignedVector<float> panel_store;
  if (panel_store.size() < static_cast<size_t>(k * kDensePanelRows)) {
    panel_store.resize(static_cast<size_t>(k * kDensePanelRows));
  }
  float* panel = panel_store.data();
  const int64_t tiles = (nx + kDenseTileRows - 1) / kDenseTileRows;
  for (int64_t r0 = 0; r0 < rows; r0 += kDensePanelRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kDensePanelRows, rows - r0));
    pack_dense_panel<W>(w + r0 * k, nr, k, panel);
    // The next panel's rows (contiguous) requested into L2, a slice during each tile, as the
    // bf16 pair tiles do (kernels_bf16dot.cc): else packing reads them from DRAM at the pace of
    // its misses.
    const char* next = reinterpret_cast<const char*>(w + (r0 + nr) * k);
    const size_t next_bytes =
        static_cast<size_t>(std::min<int64_t>(kDensePanelRows, rows - r0 - nr) * k) * sizeof(W);
    const size_t slice = (next_bytes / static_cast<size_t>(tiles) + 63) / 64 * 64;
    size_t fetched = 0;
    for (int64_t j0 = 0; j0 < nx; j0 += kDenseTileRows) {
      const int n = static_cast<int>(std::min<int64_t>(kDenseTileRows, nx - j0));
      const int64_t lines = std::min<int64_t>(
          k, static_cast<int64_t>((std::min(next_bytes, fetched + slice) - fetched) / 64));
      kDensePanelTiles[n](panel, nr, x, j0, k, bias ? bias + r0 : nullptr, out + r0, ldo,
                          next + fetched, lines);
      fetched += static_cast<size_t>(lines) * 64;
    }
  }
}

template <class W>
void dense_gemm_any(const W* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                    const float* bias, float* out, int64_t ldo) {
  if (nx == 1) {
    dense_matvec<W>(w, rows, x, k, bias, out);
  } else if (nx >= kDensePanelMinRows) {
    dense_gemm_panels<W>(w, rows, x, nx, k, bias, out, ldo);
  } else {
    dense_gemm<W>(w, rows, x, nx, k, bias, out, ldo);
  }
}

// exp(x) for 16 floats: 2^n * p(r), x = n ln2 + r with |r| <= ln2 / 2, p a degree-7 Taylor
// polynomial (relative error ~2e-7, well inside float32 attention tolerances); exp(-inf) = 0.
inline __m512 exp512(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.0f);
  const __mmask16 neg_inf = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  x = _mm512_max_ps(x, lo);
  x = _mm512_min_ps(x, _mm512_set1_ps(88.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  return _mm512_maskz_mov_ps(static_cast<__mmask16>(~neg_inf), _mm512_scalef_ps(p, n));
}

// cap * tanh(s / cap) (Gemma 2's logit softcapping), tanh(z) = sign(z) (1 - e) / (1 + e) with
// e = exp(-2|z|) from exp512 (0 far out, so tanh 1 there).
inline __m512 softcap512(__m512 s, float cap) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 z = _mm512_mul_ps(s, _mm512_set1_ps(1.0f / cap));
  const __m512 e = exp512(_mm512_mul_ps(_mm512_abs_ps(z), _mm512_set1_ps(-2.0f)));
  const __m512 magnitude = _mm512_div_ps(_mm512_sub_ps(one, e), _mm512_add_ps(one, e));
  const __m512 sign = _mm512_and_ps(z, _mm512_set1_ps(-0.0f));
  return _mm512_mul_ps(_mm512_or_ps(magnitude, sign), _mm512_set1_ps(cap));
}

// Sums of 4 vectors' lanes, one per lane of the result: a transpose-add tree (independent of
// the next keys' FMAs, where 4 horizontal reductions were each a serial chain).
inline __m128 hsum4(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  const auto half = [](__m512 v) {
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  };
  const __m256 h =
      _mm256_hadd_ps(_mm256_hadd_ps(half(a0), half(a1)), _mm256_hadd_ps(half(a2), half(a3)));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// A KV cache holds float32 or IEEE half (uint16_t bits) elements; these read either as floats.
inline __m512 load_kv(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
inline __m512 load_kv(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
inline __m512 load_kv(const float* p) {
  return _mm512_loadu_ps(p);
}
inline __m512 load_kv(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline float kv_scalar(const float* p) {
  return *p;
}
inline float kv_scalar(const uint16_t* p) {
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(*p)));
}

// The dot products of R query rows (R <= 4) with keys [0, nt) of k (nt <= 16, keys dim elements
// apart): out[r] holds row r's in lanes 0..nt-1 (the other lanes repeat the last key). Four keys
// at a time, each key vector loaded (and widened) once for all the rows, every (row, key) sum
// its own FMA chain; before_keys(t) as keys t..t + 3 begin.
template <int R, class KV, class BeforeKeys>
inline void scores16_rows(const float* const* q, const KV* k, int nt, int64_t dim, __m512* out,
                          const BeforeKeys& before_keys) {
  alignas(64) float sc[R][16];
  for (int t = 0; t < 16; t += 4) {
    before_keys(t);
    const KV* kt[4];
    for (int j = 0; j < 4; ++j) kt[j] = k + std::min(t + j, nt - 1) * dim;
    __m512 a[R][4];
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < 4; ++j) a[r][j] = _mm512_setzero_ps();
    }
    for (int64_t d = 0; d < dim; d += 16) {
      const auto m = dim - d >= 16 ? static_cast<__mmask16>(0xffff)
                                   : static_cast<__mmask16>((1u << (dim - d)) - 1);
      __m512 kv[4];
      for (int j = 0; j < 4; ++j) kv[j] = load_kv(kt[j] + d, m);
      for (int r = 0; r < R; ++r) {
        const __m512 qd = _mm512_maskz_loadu_ps(m, q[r] + d);
        for (int j = 0; j < 4; ++j) a[r][j] = _mm512_fmadd_ps(qd, kv[j], a[r][j]);
      }
    }
    for (int r = 0; r < R; ++r) _mm_store_ps(sc[r] + t, hsum4(a[r][0], a[r][1], a[r][2], a[r][3]));
  }
  for (int r = 0; r < R; ++r) out[r] = _mm512_load_ps(sc[r]);
}

// Columns [c, c + 16 C) of accumulate_values_rows: the C chunks of every row at once, C R FMA
// chains side by side, each value vector loaded once for the R rows.
template <int R, int C, class KV>
void accumulate_value_chunks(const float* p, int stride, const KV* v, int nt, int64_t dim,
                             int64_t c, float* acc) {
  __m512 a[R][C];
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < C; ++j) a[r][j] = _mm512_loadu_ps(acc + r * dim + c + 16 * j);
  }
  for (int t = 0; t < nt; ++t) {
    __m512 vt[C];
    for (int j = 0; j < C; ++j) vt[j] = load_kv(v + t * dim + c + 16 * j);
    for (int r = 0; r < R; ++r) {
      const __m512 pr = _mm512_set1_ps(p[r * stride + t]);
      for (int j = 0; j < C; ++j) a[r][j] = _mm512_fmadd_ps(pr, vt[j], a[r][j]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int j = 0; j < C; ++j) _mm512_storeu_ps(acc + r * dim + c + 16 * j, a[r][j]);
  }
}

// acc[r] += sum_t p[r * stride + t] v[t] for R rows at once (R <= 4, dim a multiple of 16):
// four column chunks at a time, then the rest one by one. One chunk at a time had left R FMA
// chains, each nt dependent FMAs long, and a decode task's value loop waiting on FMA latency.
// Each element's additions are in the order of the plain loop over t.
template <int R, class KV>
void accumulate_values_rows(const float* p, int stride, const KV* v, int nt, int64_t dim,
                            float* acc) {
  int64_t c = 0;
  for (; c + 64 <= dim; c += 64) accumulate_value_chunks<R, 4>(p, stride, v, nt, dim, c, acc);
  for (; c < dim; c += 16) accumulate_value_chunks<R, 1>(p, stride, v, nt, dim, c, acc);
}

// acc[r] = acc[r] * corr[r] + sum_t p[t][r] v[t] for rows [0, rc) of a 16-row query group (p
// holds 16 keys x 16 rows), dim = 16 C: two rows at a time, all of their C vectors at once, so
// 2 C FMA chains run side by side (one vector at a time made each a chain of nt dependent FMAs,
// one per FMA latency). Each element's additions stay in the order of t.
template <int C>
void accumulate_value_block(float* acc, int rc, const float* corr, const float* p, const float* v,
                            int nt, int64_t dim) {
  for (int r = 0; r < rc; r += 2) {
    // Row r + 1 may be past rc (p and acc have 16 rows): computed, not stored.
    float* a0 = acc + r * dim;
    float* a1 = a0 + dim;
    const __m512 c0 = _mm512_set1_ps(corr[r]), c1 = _mm512_set1_ps(corr[r + 1]);
    __m512 x0[C], x1[C];
    for (int c = 0; c < C; ++c) {
      x0[c] = _mm512_mul_ps(_mm512_loadu_ps(a0 + 16 * c), c0);
      x1[c] = _mm512_mul_ps(_mm512_loadu_ps(a1 + 16 * c), c1);
    }
    for (int t = 0; t < nt; ++t) {
      const __m512 p0 = _mm512_set1_ps(p[t * 16 + r]), p1 = _mm512_set1_ps(p[t * 16 + r + 1]);
      for (int c = 0; c < C; ++c) {
        const __m512 vt = _mm512_loadu_ps(v + t * dim + 16 * c);
        x0[c] = _mm512_fmadd_ps(p0, vt, x0[c]);
        x1[c] = _mm512_fmadd_ps(p1, vt, x1[c]);
      }
    }
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(a0 + 16 * c, x0[c]);
    if (r + 1 < rc) {
      for (int c = 0; c < C; ++c) _mm512_storeu_ps(a1 + 16 * c, x1[c]);
    }
  }
}

}  // namespace

// Few rows (decode): keys in runs of up to 64 (four blocks of 16): each row's scores of a run
// are computed first (four rows per pass over the keys, a key's vector loaded once for them),
// then one softmax update per row and run (a maximum, an exp of the running max, a rescale of
// the accumulators, the run's sum), then the values. An update per 16 keys had been a serial
// chain of horizontal reductions and scalar exps per row that cost about a third of a SmolLM2
// task. Keys [begin, end) only; leaves the unnormalised state (acc, m, l) of every row for the
// caller.
template <class KV>
static void attention_rows_range(int rows, const float* const* q, const int64_t* last,
                                 int64_t window, const KV* k, const KV* v, const int32_t* key_mask,
                                 int64_t begin, int64_t end, int64_t dim, float scale,
                                 float softcap, float* acc, float* m, float* l, float* p) {
  constexpr int kBlock = 16, kRun = kAttentionRunKeys, kRunBlocks = kRun / kBlock;
  for (int r = 0; r < rows; ++r) {
    m[r] = -std::numeric_limits<float>::infinity();
    l[r] = 0;
    std::memset(acc + r * dim, 0, static_cast<size_t>(dim) * sizeof(float));
  }
  int64_t max_last = -1;
  for (int r = 0; r < rows; ++r) max_last = std::max(max_last, last[r]);
  end = std::min(end, max_last + 1);
  begin = std::max(begin, first_key_of_rows(last, rows, window));
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  const __m512 scale_v = _mm512_set1_ps(scale);
  // Read ahead per 16-key block, as its scores go (cache_touch.h): per run, the prefetching way
  // (Intel's default) left a task's first 64 keys to demand misses, 8% slower from L3 on a Xeon.
  const KeyValueReadAhead ahead(k, v, dim * static_cast<int64_t>(sizeof(KV)), begin, end, kBlock);
  for (int64_t t0 = begin; t0 < end; t0 += kRun) {
    const int nt = static_cast<int>(std::min<int64_t>(kRun, end - t0));
    const int blocks = (nt + kBlock - 1) / kBlock;
    // Keys of this run that no mask hides.
    uint64_t open = 0;
    for (int t = 0; t < nt; ++t) open |= uint64_t{key_mask[t0 + t] != 0} << t;
    for (int r0 = 0; r0 < rows; r0 += 4) {
      const int rc = std::min(4, rows - r0);
      __m512 sc[kRunBlocks][4];
      for (int b = 0; b < blocks; ++b) {
        const int64_t tb = t0 + b * kBlock;
        if (r0 == 0) ahead.before_block(tb);
        const int bt = std::min(kBlock, nt - b * kBlock);
        with_count<4>(rc, [&](auto n) {
          scores16_rows<decltype(n)::value>(q + r0, k + tb * dim, bt, dim, sc[b], [&](int t) {
            if (r0 == 0) ahead.before_keys(tb + t, 4);
          });
        });
      }
      for (int i = 0; i < rc; ++i) {
        const int r = r0 + i;
        const uint64_t keep =
            open & visible_bits(ops::first_visible_key(last[r], window), last[r], t0, nt);
        float* pr = p + r * kRun;
        if (keep == 0) {
          for (int b = 0; b < blocks; ++b) _mm512_storeu_ps(pr + b * kBlock, _mm512_setzero_ps());
          continue;
        }
        __m512 s[kRunBlocks], top = neg_inf;
        for (int b = 0; b < blocks; ++b) {
          const auto kb = static_cast<__mmask16>(keep >> (b * kBlock));
          const __m512 scaled = _mm512_mul_ps(sc[b][i], scale_v);
          s[b] =
              _mm512_mask_mov_ps(neg_inf, kb, softcap > 0 ? softcap512(scaled, softcap) : scaled);
          top = _mm512_max_ps(top, s[b]);
        }
        const float m_new = std::max(m[r], _mm512_reduce_max_ps(top));
        const float corr = std::exp(m[r] - m_new);  // 0 when m was -inf
        const __m512 base = _mm512_set1_ps(m_new);
        __m512 sum = _mm512_setzero_ps();
        for (int b = 0; b < blocks; ++b) {
          const __m512 e = exp512(_mm512_sub_ps(s[b], base));
          sum = _mm512_add_ps(sum, e);
          _mm512_storeu_ps(pr + b * kBlock, e);
        }
        l[r] = l[r] * corr + _mm512_reduce_add_ps(sum);
        m[r] = m_new;
        if (corr != 1.0f) {
          float* ar = acc + r * dim;
          for (int64_t d = 0; d < dim; ++d) ar[d] *= corr;
        }
      }
    }
    // acc[r] += sum_t p[r][t] v[t]: each value vector loaded once per four rows.
    if (dim % 16 == 0) {
      for (int r0 = 0; r0 < rows; r0 += 4) {
        with_count<4>(std::min(4, rows - r0), [&](auto n) {
          accumulate_values_rows<decltype(n)::value>(p + r0 * kRun, kRun, v + t0 * dim, nt, dim,
                                                     acc + r0 * dim);
        });
      }
      continue;
    }
    for (int r = 0; r < rows; ++r) {
      const float* pr = p + r * kRun;
      float* ar = acc + r * dim;
      int64_t d = 0;
      for (; d + 16 <= dim; d += 16) {
        __m512 a = _mm512_loadu_ps(ar + d);
        for (int t = 0; t < nt; ++t) {
          a = _mm512_fmadd_ps(_mm512_set1_ps(pr[t]), load_kv(v + (t0 + t) * dim + d), a);
        }
        _mm512_storeu_ps(ar + d, a);
      }
      for (; d < dim; ++d) {
        float a = ar[d];
        for (int t = 0; t < nt; ++t) a += pr[t] * kv_scalar(v + (t0 + t) * dim + d);
        ar[d] = a;
      }
    }
  }
}

void attention_rows_partial_avx512(int rows, const float* const* q, const int64_t* last,
                                   int64_t window, const float* k, const float* v,
                                   const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                                   float scale, float softcap, float* acc, float* m, float* l,
                                   float* scratch) {
  attention_rows_range(rows, q, last, window, k, v, key_mask, begin, end, dim, scale, softcap, acc,
                       m, l, scratch);
}

void attention_rows_partial_avx512(int rows, const float* const* q, const int64_t* last,
                                   int64_t window, const uint16_t* k, const uint16_t* v,
                                   const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                                   float scale, float softcap, float* acc, float* m, float* l,
                                   float* scratch) {
  attention_rows_range(rows, q, last, window, k, v, key_mask, begin, end, dim, scale, softcap, acc,
                       m, l, scratch);
}

template <class KV>
static void attention_rows_few(int rows, const float* const* q, float* const* out,
                               const int64_t* last, int64_t window, const KV* k, const KV* v,
                               const int32_t* key_mask, int64_t n_keys, int64_t dim, float scale,
                               float* scratch) {
  float* acc = scratch;         // rows * dim
  float* m = acc + rows * dim;  // rows
  float* l = m + rows;          // rows
  float* p = l + rows;          // rows * kAttentionRunKeys
  attention_rows_range(rows, q, last, window, k, v, key_mask, 0, n_keys, dim, scale, 0.0f, acc, m,
                       l, p);
  for (int r = 0; r < rows; ++r) {
    const float inv = l[r] > 0 ? 1.0f / l[r] : 0.0f;
    for (int64_t d = 0; d < dim; ++d) out[r][d] = acc[r * dim + d] * inv;
  }
}

template <class KV>
static void attention_rows_any(int rows, const float* const* q, float* const* out,
                               const int64_t* last, int64_t window, const KV* k, const KV* v,
                               const int32_t* key_mask, int64_t n_keys, int64_t dim, float scale,
                               float* scratch) {
  // Query rows in groups of 16, one per vector lane: the scores of a key for all 16 rows are
  // dim FMAs of the transposed queries with the key's values broadcast (no horizontal sums),
  // and the online softmax runs on vectors of 16 rows.
  constexpr int kLanes = 16, kBlock = 16;
  if (rows <= 4) {
    attention_rows_few(rows, q, out, last, window, k, v, key_mask, n_keys, dim, scale, scratch);
    return;
  }
  float* acc = scratch;                   // 16 * dim
  float* qt = acc + kLanes * dim;         // dim * 16, the group's queries transposed, scaled
  float* p = qt + kLanes * dim;           // 16 keys x 16 rows
  float* corr_out = p + kBlock * kLanes;  // 16
  float* kf = corr_out + kLanes;          // a half cache's block of keys as floats, 16 * dim
  float* vf = kf + kBlock * dim;          // and of values
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int r0 = 0; r0 < rows; r0 += kLanes) {
    const int rc = std::min(kLanes, rows - r0);
    alignas(64) int32_t last32[kLanes];
    alignas(64) int32_t first32[kLanes];
    int64_t max_last = -1;
    for (int i = 0; i < kLanes; ++i) {
      const int64_t lr = i < rc ? std::min<int64_t>(last[r0 + i], n_keys - 1) : -1;
      last32[i] = static_cast<int32_t>(lr);
      first32[i] = static_cast<int32_t>(i < rc ? ops::first_visible_key(last[r0 + i], window) : 0);
      max_last = std::max(max_last, lr);
    }
    const __m512i lastv = _mm512_load_si512(last32);
    const __m512i firstv = _mm512_load_si512(first32);
    // The keys before every row's window are skipped (a long prompt's tile reads only its
    // rows' windows); blocks start there, not at a multiple of 16.
    const int64_t begin = first_key_of_rows(last + r0, rc, window);
    for (int64_t d = 0; d < dim; ++d) {
      for (int i = 0; i < kLanes; ++i) qt[d * kLanes + i] = i < rc ? q[r0 + i][d] * scale : 0.0f;
    }
    std::memset(acc, 0, static_cast<size_t>(kLanes * dim) * sizeof(float));
    __m512 m = neg_inf, l = _mm512_setzero_ps();
    const int64_t end = max_last + 1;
    for (int64_t t0 = begin; t0 < end; t0 += kBlock) {
      const int nt = static_cast<int>(std::min<int64_t>(kBlock, end - t0));
      // The block's keys and values as floats: a half cache's converted once for all 16 rows
      // (converting each key element for its broadcast, and each value vector once per row,
      // took 3-4 operations per multiply-add: attention was ~37% of a 2048-token prefill).
      const float* kb;
      const float* vb;
      if constexpr (std::is_same_v<KV, uint16_t>) {
        const int64_t n = nt * dim;
        for (int64_t i = 0; i < n; i += 16) {
          const auto lanes = n - i >= 16 ? static_cast<__mmask16>(0xffff)
                                         : static_cast<__mmask16>((1u << (n - i)) - 1);
          _mm512_mask_storeu_ps(kf + i, lanes, load_kv(k + t0 * dim + i, lanes));
          _mm512_mask_storeu_ps(vf + i, lanes, load_kv(v + t0 * dim + i, lanes));
        }
        kb = kf;
        vb = vf;
      } else {
        kb = k + t0 * dim;
        vb = v + t0 * dim;
      }
      __m512 sc[kBlock];
      // Scores, 8 keys at a time: 8 independent FMA chains keep both FMA pipes busy (4 left
      // the loop waiting on the FMA latency, 1 per cycle).
      constexpr int kKeysPerPass = 8;
      for (int t = 0; t < kBlock; t += kKeysPerPass) {
        const float* kp[kKeysPerPass];
        __m512 s[kKeysPerPass];
        for (int u = 0; u < kKeysPerPass; ++u) {
          kp[u] = kb + std::min(t + u, nt - 1) * dim;
          s[u] = _mm512_setzero_ps();
        }
        if (t < nt) {
          for (int64_t d = 0; d < dim; ++d) {
            const __m512 qd = _mm512_load_ps(qt + d * kLanes);
            for (int u = 0; u < kKeysPerPass; ++u) {
              s[u] = _mm512_fmadd_ps(qd, _mm512_set1_ps(kp[u][d]), s[u]);
            }
          }
        }
        for (int u = 0; u < kKeysPerPass; ++u) sc[t + u] = s[u];
      }
      __m512 block_max = neg_inf;
      for (int t = 0; t < kBlock; ++t) {
        const int64_t key = t0 + t;
        __mmask16 visible = 0;
        if (t < nt && key_mask[key] != 0) {
          const __m512i keyv = _mm512_set1_epi32(static_cast<int32_t>(key));
          visible = _mm512_cmp_epi32_mask(lastv, keyv, _MM_CMPINT_NLT) &
                    _mm512_cmp_epi32_mask(firstv, keyv, _MM_CMPINT_LE);
        }
        sc[t] = _mm512_mask_mov_ps(neg_inf, visible, sc[t]);
        block_max = _mm512_max_ps(block_max, sc[t]);
      }
      const __m512 m_new = _mm512_max_ps(m, block_max);
      // Rows that have seen no key yet keep m = -inf; subtract 0 for them (their terms are 0).
      const __mmask16 none = _mm512_cmp_ps_mask(m_new, neg_inf, _CMP_EQ_OQ);
      const __m512 base = _mm512_mask_mov_ps(m_new, none, _mm512_setzero_ps());
      const __m512 corr = exp512(_mm512_sub_ps(m, base));
      __m512 psum = _mm512_setzero_ps();
      for (int t = 0; t < kBlock; ++t) {
        const __m512 e = exp512(_mm512_sub_ps(sc[t], base));
        psum = _mm512_add_ps(psum, e);
        _mm512_store_ps(p + t * kLanes, e);
      }
      l = _mm512_fmadd_ps(l, corr, psum);
      m = m_new;
      _mm512_storeu_ps(corr_out, corr);
      // acc[r] = acc[r] * corr[r] + sum_t p[t][r] v[t].
      if (dim % 16 == 0 && dim <= 8 * 16) {
        with_count<8>(static_cast<int>(dim / 16), [&](auto c) {
          accumulate_value_block<decltype(c)::value>(acc, rc, corr_out, p, vb, nt, dim);
        });
        continue;
      }
      for (int r = 0; r < rc; ++r) {
        float* ar = acc + r * dim;
        const __m512 cr = _mm512_set1_ps(corr_out[r]);
        for (int64_t d = 0; d < dim; d += 16) {
          const auto dm = dim - d >= 16 ? static_cast<__mmask16>(0xffff)
                                        : static_cast<__mmask16>((1u << (dim - d)) - 1);
          __m512 a = _mm512_mul_ps(_mm512_maskz_loadu_ps(dm, ar + d), cr);
          for (int t = 0; t < nt; ++t) {
            a = _mm512_fmadd_ps(_mm512_set1_ps(p[t * kLanes + r]),
                                _mm512_maskz_loadu_ps(dm, vb + t * dim + d), a);
          }
          _mm512_mask_storeu_ps(ar + d, dm, a);
        }
      }
    }
    alignas(64) float lsum[kLanes];
    _mm512_store_ps(lsum, l);
    for (int r = 0; r < rc; ++r) {
      const float inv = lsum[r] > 0 ? 1.0f / lsum[r] : 0.0f;
      for (int64_t d = 0; d < dim; ++d) out[r0 + r][d] = acc[r * dim + d] * inv;
    }
  }
}

void attention_rows_avx512(int rows, const float* const* q, float* const* out, const int64_t* last,
                           int64_t window, const float* k, const float* v, const int32_t* key_mask,
                           int64_t n_keys, int64_t dim, float scale, float* scratch) {
  attention_rows_any(rows, q, out, last, window, k, v, key_mask, n_keys, dim, scale, scratch);
}

void attention_rows_avx512(int rows, const float* const* q, float* const* out, const int64_t* last,
                           int64_t window, const uint16_t* k, const uint16_t* v,
                           const int32_t* key_mask, int64_t n_keys, int64_t dim, float scale,
                           float* scratch) {
  attention_rows_any(rows, q, out, last, window, k, v, key_mask, n_keys, dim, scale, scratch);
}

void swiglu_avx512(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const auto m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i), u = _mm512_maskz_loadu_ps(m, up + i);
    // exp512 clamps its argument to [-87, 88]: for g < -88 this gives g / 1.7e38 ~ -0, silu's
    // limit there (g e^g underflows too).
    const __m512 e = exp512(_mm512_sub_ps(_mm512_setzero_ps(), g));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), u));
  }
}

void geglu_avx512(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 c1 = _mm512_set1_ps(-kGeluTanhLinear), c3 = _mm512_set1_ps(-kGeluTanhCubic);
  for (int64_t i = 0; i < n; i += 16) {
    const auto m =
        n - i >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i), u = _mm512_maskz_loadu_ps(m, up + i);
    // g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)), GELU's tanh form; exp512's clamp gives the
    // limits (-0 and g) far out, as in swiglu_avx512.
    const __m512 arg = _mm512_mul_ps(g, _mm512_fmadd_ps(_mm512_mul_ps(g, g), c3, c1));
    const __m512 e = exp512(arg);
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), u));
  }
}

void quantize_rows_q8_avx512(const float* x, int64_t n, const Q8Rows& o) {
  const int64_t kb = o.k / 32;
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t b = 0; b < kb; ++b) {
      const float* p = x + r * o.k + b * 32;
      const __m512 a = _mm512_loadu_ps(p), c = _mm512_loadu_ps(p + 16);
      const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(a), _mm512_abs_ps(c)));
      const float d = amax / 127.0f;
      const __m512 id = _mm512_set1_ps(amax > 0 ? 127.0f / amax : 0.0f);
      const __m512i qa = _mm512_cvtps_epi32(_mm512_mul_ps(a, id));
      const __m512i qc = _mm512_cvtps_epi32(_mm512_mul_ps(c, id));
      int8_t* q = o.q + r * o.k + b * 32;
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(qa));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtsepi32_epi8(qc));
      o.d[r * kb + b] = d;
      const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(qa, qc));
      o.s[r * kb + b] = sum;
      o.ds[r * kb + b] = d * static_cast<float>(sum);
    }
  }
}

void gemm_quant_avx512(QuantKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                       const Q8Rows& x, int64_t nx, const float* bias, float* out, int64_t ldo) {
  gemm_quant_impl(kind, w, row_bytes, rows, x, nx, bias, out, ldo);
}

void gemm_kquant_avx512(QuantKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                        const Q8Rows& x, int64_t nx, const float* bias, float* out, int64_t ldo) {
  gemm_kquant_impl(kind, w, row_bytes, rows, x, nx, bias, out, ldo);
}

void gemm_packed_avx512(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                        int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                        float* out, int64_t ldo) {
  gemm_packed_impl(kind, packed, block_bytes, rows, g0, g1, x, nx, bias, out, ldo);
}

void packed_lanes_avx512(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                         const Lanes& lanes, const Q8Rows& x, int64_t nx, const float* bias,
                         float* out, int64_t ldo) {
  packed_lanes_impl(kind, packed, block_bytes, rows, lanes, x, nx, bias, out, ldo);
}

bool attach_lane_words_avx512(QuantKind kind, int64_t nx, Q8Rows& x) {
  return attach_lane_words_impl(kind, nx, x);
}

bool wide_tiles_take(QuantKind kind) {
  float ds_scale;
  return wide_tile_kind(kind, &ds_scale);
}

size_t q8_tiles_bytes(int64_t n, int64_t k) {
  return static_cast<size_t>(n * (k / 32) * kWideActBytes);
}

int64_t q8_tile_count(int64_t n, QuantKind kind) {
  return wide_tile_count(n, wide_tile_rows(kind));
}

int64_t wide_span_groups(QuantKind kind) {
  return wide_quad(kind) ? 4 : 2;
}

void interleave_q8_tiles_avx512(const Q8Rows& x, int64_t n, QuantKind kind, int64_t t0, int64_t t1,
                                uint8_t* out) {
  float ds_scale = 0.0f;
  if (wide_tile_kind(kind, &ds_scale)) {
    interleave_tiles(x, n, wide_tile_rows(kind), t0, t1, ds_scale, kind == QuantKind::q6_k, out);
  }
}

void gemm_f32_avx512(const float* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                     const float* bias, float* out, int64_t ldo) {
  dense_gemm_any<float>(w, rows, x, nx, k, bias, out, ldo);
}

void gemm_bf16_avx512(const uint16_t* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                      const float* bias, float* out, int64_t ldo) {
  dense_gemm_any<uint16_t>(w, rows, x, nx, k, bias, out, ldo);
}

void gemm_f16_avx512(const uint16_t* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                     const float* bias, float* out, int64_t ldo) {
  static_assert(sizeof(F16) == sizeof(uint16_t));
  dense_gemm_any<F16>(reinterpret_cast<const F16*>(w), rows, x, nx, k, bias, out, ldo);
}

}  // namespace anvil::cpu
