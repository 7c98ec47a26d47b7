// AVX512_BF16 products (kernels_bf16dot.h). Compiled with -mavx512bf16 beside the AVX-512 flags.
// A row of k bf16 values is read 32 at a time; pairs (2i, 2i + 1) of the weight and the
// activation rows line up because both start at element 0 of their rows, and a tail shorter than
// 32 is read with a mask that zeroes the rest of both (0 x 0 adds nothing).
#include "backends/cpu/kernels_bf16dot.h"

// GCC 12's AVX-512 intrinsics start some results from an uninitialised "undefined" vector and
// warn about their own code (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "backends/cpu/aligned_vector.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/panel_tiles_avx512.h"
#include "backends/cpu/side_by_side.h"

namespace anvil::cpu {
namespace {

inline __m512bh as_bf16(__m512i v) {
  return (__m512bh)v;
}

// Lanes 0 .. n-1 of 32 (n < 32 only for a row's tail).
inline __mmask32 first_lanes(int64_t n) {
  return n >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint32_t{1} << n) - 1);
}

inline float hsum(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

inline __m512i load32(const uint16_t* p, __mmask32 m) {
  return m == ~__mmask32{0} ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(m, p);
}

// One activation row (decode) against S weight rows read side by side, each with four
// accumulators so the dot products do not wait on one chain; the rows' lines requested into L2
// `ahead` bytes before their loads (cpu::decode_read_ahead, 0 for none; it says why L2). Each row's
// sums are added in the same order whatever S.
template <int S>
void rows_side_by_side(const uint16_t* const (&row)[S], const uint16_t* x, int64_t k, size_t ahead,
                       const float* const (&bias)[S], float* const (&out)[S]) {
  __m512 acc[S][4];
  for (auto& a : acc) {
    for (auto& u : a) u = _mm512_setzero_ps();
  }
  int64_t c = 0;
  for (; c + 128 <= k; c += 128) {
    if (ahead) {
      for (int s = 0; s < S; ++s) {
        const char* next = reinterpret_cast<const char*>(row[s] + c) + ahead;
        for (int u = 0; u < 4; ++u) _mm_prefetch(next + 64 * u, _MM_HINT_T1);
      }
    }
    for (int u = 0; u < 4; ++u) {
      const __m512bh xv = as_bf16(_mm512_loadu_si512(x + c + 32 * u));
      for (int s = 0; s < S; ++s)
        acc[s][u] =
            _mm512_dpbf16_ps(acc[s][u], as_bf16(_mm512_loadu_si512(row[s] + c + 32 * u)), xv);
    }
  }
  for (; c < k; c += 32) {
    const __mmask32 m = first_lanes(k - c);
    const __m512bh xv = as_bf16(load32(x + c, m));
    for (int s = 0; s < S; ++s)
      acc[s][0] = _mm512_dpbf16_ps(acc[s][0], as_bf16(load32(row[s] + c, m)), xv);
  }
  for (int s = 0; s < S; ++s) {
    const __m512 total =
        _mm512_add_ps(_mm512_add_ps(acc[s][0], acc[s][1]), _mm512_add_ps(acc[s][2], acc[s][3]));
    *out[s] = hsum(total) + (bias[s] ? *bias[s] : 0.0f);
  }
}

// The rows read as streams side by side (side_by_side.h).
void matvec(const uint16_t* w, int64_t rows, const uint16_t* x, int64_t k, const float* bias,
            float* out) {
  const auto ahead = static_cast<size_t>(decode_read_ahead());
  visit_side_by_side(0, rows, [&](const auto& at) {
    constexpr int kCount = static_cast<int>(sizeof(at) / sizeof(at[0]));
    const uint16_t* row[kCount];
    const float* row_bias[kCount];
    float* row_out[kCount];
    for (int s = 0; s < kCount; ++s) {
      row[s] = w + at[s] * k;
      row_bias[s] = bias ? bias + at[s] : nullptr;
      row_out[s] = out + at[s];
    }
    rows_side_by_side<kCount>(row, x, k, ahead, row_bias, row_out);
  });
}

// 4 weight rows x 6 activation rows: each weight vector used 6 times, each activation vector
// 4 times (24 accumulators, 4 weight vectors and one activation vector: 29 of the 32 registers;
// 4 x 4 measured ~10% slower). The accumulators are named variables: GCC 12 kept an array of
// them in memory, storing every one each step.
constexpr int kTileRows = 4, kTileCols = 6;

void tile(const uint16_t* w, int nr, const uint16_t* x, int64_t j0, int nx, int64_t k,
          const float* bias, float* out, int64_t ldo) {
  const uint16_t* w0 = w + std::min(0, nr - 1) * k;
  const uint16_t* w1 = w + std::min(1, nr - 1) * k;
  const uint16_t* w2 = w + std::min(2, nr - 1) * k;
  const uint16_t* w3 = w + std::min(3, nr - 1) * k;
  const uint16_t* x0 = x + (j0 + std::min(0, nx - 1)) * k;
  const uint16_t* x1 = x + (j0 + std::min(1, nx - 1)) * k;
  const uint16_t* x2 = x + (j0 + std::min(2, nx - 1)) * k;
  const uint16_t* x3 = x + (j0 + std::min(3, nx - 1)) * k;
  const uint16_t* x4 = x + (j0 + std::min(4, nx - 1)) * k;
  const uint16_t* x5 = x + (j0 + std::min(5, nx - 1)) * k;
  __m512 a00 = _mm512_setzero_ps(), a01 = _mm512_setzero_ps(), a02 = _mm512_setzero_ps(),
         a03 = _mm512_setzero_ps(), a04 = _mm512_setzero_ps(), a05 = _mm512_setzero_ps(),
         a10 = _mm512_setzero_ps(), a11 = _mm512_setzero_ps(), a12 = _mm512_setzero_ps(),
         a13 = _mm512_setzero_ps(), a14 = _mm512_setzero_ps(), a15 = _mm512_setzero_ps(),
         a20 = _mm512_setzero_ps(), a21 = _mm512_setzero_ps(), a22 = _mm512_setzero_ps(),
         a23 = _mm512_setzero_ps(), a24 = _mm512_setzero_ps(), a25 = _mm512_setzero_ps(),
         a30 = _mm512_setzero_ps(), a31 = _mm512_setzero_ps(), a32 = _mm512_setzero_ps(),
         a33 = _mm512_setzero_ps(), a34 = _mm512_setzero_ps(), a35 = _mm512_setzero_ps();
  // Whole vectors, then the tail under a mask.
  const auto step = [&](int64_t c, __mmask32 m) {
    const __m512bh v0 = as_bf16(load32(w0 + c, m)), v1 = as_bf16(load32(w1 + c, m)),
                   v2 = as_bf16(load32(w2 + c, m)), v3 = as_bf16(load32(w3 + c, m));
    // One activation row against the four weight vectors, into that column's accumulators.
    const auto column = [&](const uint16_t* xr, __m512& c0, __m512& c1, __m512& c2, __m512& c3) {
      const __m512bh xv = as_bf16(load32(xr + c, m));
      c0 = _mm512_dpbf16_ps(c0, v0, xv);
      c1 = _mm512_dpbf16_ps(c1, v1, xv);
      c2 = _mm512_dpbf16_ps(c2, v2, xv);
      c3 = _mm512_dpbf16_ps(c3, v3, xv);
    };
    column(x0, a00, a10, a20, a30);
    column(x1, a01, a11, a21, a31);
    column(x2, a02, a12, a22, a32);
    column(x3, a03, a13, a23, a33);
    column(x4, a04, a14, a24, a34);
    column(x5, a05, a15, a25, a35);
  };
  int64_t c = 0;
  for (; c + 32 <= k; c += 32) step(c, ~__mmask32{0});
  if (c < k) step(c, first_lanes(k - c));
  const float sums[4][6] = {{hsum(a00), hsum(a01), hsum(a02), hsum(a03), hsum(a04), hsum(a05)},
                            {hsum(a10), hsum(a11), hsum(a12), hsum(a13), hsum(a14), hsum(a15)},
                            {hsum(a20), hsum(a21), hsum(a22), hsum(a23), hsum(a24), hsum(a25)},
                            {hsum(a30), hsum(a31), hsum(a32), hsum(a33), hsum(a34), hsum(a35)}};
  for (int j = 0; j < nx; ++j) {
    for (int i = 0; i < nr; ++i) out[(j0 + j) * ldo + i] = sums[i][j] + (bias ? bias[i] : 0.0f);
  }
}

// Prefill's other shape: 16 weight rows in the lanes of a vector, each lane adding its row's
// pair of products with the pair of an activation row broadcast to all of them, as the int8
// prefill tiles do (quant_int8_wide.inc): no horizontal sums, each broadcast feeding
// kPanelVectors products, the weights read from a packed panel. The tile above reads a weight
// vector and an activation vector per product pair and measured ~55% of vdpbf16ps's peak here.
constexpr int kPanelRows = kBf16PanelRows;
constexpr int kPanelVectors = kPanelRows / 16;

// Weight rows [0, nr) (nr <= kPanelRows, row stride k) as a panel: word p * kPanelRows + i holds
// pair p of row i (zeros past nr, and past k in the last pair of an odd k).
void pack_panel(const uint16_t* w, int nr, int64_t k, uint32_t* panel) {
  const int64_t pairs = (k + 1) / 2;
  for (int v = 0; v < kPanelVectors; ++v) {
    // A vector of 16 real rows: 16 pairs at a time by transposes, then the rest word by word.
    const int64_t whole = 16 * (v + 1) <= nr ? k / 32 : 0;
    for (int64_t c = 0; c < whole; ++c) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_si512(w + (16 * v + i) * k + 32 * c);
      transpose16(r);
      for (int p = 0; p < 16; ++p) {
        _mm512_storeu_si512(panel + (16 * c + p) * kPanelRows + 16 * v, r[p]);
      }
    }
    for (int64_t p = 16 * whole; p < pairs; ++p) {
      for (int i = 16 * v; i < 16 * (v + 1); ++i) {
        uint32_t word = 0;
        if (i < nr) {
          const uint16_t* row = w + i * k;
          word = row[2 * p] | (2 * p + 1 < k ? uint32_t{row[2 * p + 1]} << 16 : 0u);
        }
        panel[p * kPanelRows + i] = word;
      }
    }
  }
}

// A panel against the first J rows of a tile of activation rows starting at j0 (its words at
// xt, kBf16TileRows per pair; nx <= J of them real): out[(j0 + j) * ldo + i] for rows i < nr of
// the panel. J below kBf16TileRows takes a prompt's last tile without multiplying its zero rows.
// Lines [0, ahead_lines) from `ahead` are requested into L2, one per pair step, so that the
// requests never queue up behind each other.
template <int J>
void panel_tile(const uint32_t* panel, int nr, const uint32_t* xt, int64_t pairs, int64_t j0,
                int nx, const float* bias, float* out, int64_t ldo, const char* ahead,
                int64_t ahead_lines) {
  static_assert(J <= kBf16TileRows);
  __m512 acc[kPanelVectors][J];
  for (auto& row : acc) {
    for (auto& a : row) a = _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < pairs; ++p) {
    if (p < ahead_lines) _mm_prefetch(ahead + 64 * p, _MM_HINT_T1);
    __m512bh w[kPanelVectors];
    for (int v = 0; v < kPanelVectors; ++v) {
      w[v] = as_bf16(_mm512_loadu_si512(panel + p * kPanelRows + 16 * v));
    }
    for (int j = 0; j < J; ++j) {
      const __m512bh x = as_bf16(_mm512_set1_epi32(static_cast<int>(xt[p * kBf16TileRows + j])));
      for (int v = 0; v < kPanelVectors; ++v) acc[v][j] = _mm512_dpbf16_ps(acc[v][j], w[v], x);
    }
  }
  store_panel_tile(acc, nr, nx, j0, bias, out, ldo);
}

// panel_tile for a tile of n real rows, n = 1 .. kBf16TileRows.
using PanelTile = void (*)(const uint32_t*, int, const uint32_t*, int64_t, int64_t, int,
                           const float*, float*, int64_t, const char*, int64_t);
constexpr PanelTile kPanelTiles[kBf16TileRows + 1] = {
    nullptr,        &panel_tile<1>, &panel_tile<2>, &panel_tile<3>,
    &panel_tile<4>, &panel_tile<5>, &panel_tile<6>};
static_assert(kBf16TileRows == 6, "kPanelTiles lists one kernel per tile height");

}  // namespace

int64_t bf16_tile_words(int64_t nx, int64_t k) {
  return (nx + kBf16TileRows - 1) / kBf16TileRows * kBf16TileRows * ((k + 1) / 2);
}

void pack_bf16_tiles(const float* x, int64_t nx, int64_t k, int64_t t0, int64_t t1, uint32_t* xt) {
  const int64_t pairs = (k + 1) / 2;
  for (int64_t t = t0; t < t1; ++t) {
    uint32_t* tile = xt + t * pairs * kBf16TileRows;
    for (int j = 0; j < kBf16TileRows; ++j) {
      const int64_t row = t * kBf16TileRows + j;
      if (row >= nx) {
        for (int64_t p = 0; p < pairs; ++p) tile[p * kBf16TileRows + j] = 0;
        continue;
      }
      // 32 values (16 pairs) at a time, the row's tail under a mask that reads zeros.
      for (int64_t c = 0; c < k; c += 32) {
        const int64_t left = k - c;
        const auto lo_mask = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1);
        const auto hi_mask = static_cast<__mmask16>(left >= 32  ? 0xffff
                                                    : left > 16 ? (1u << (left - 16)) - 1
                                                                : 0);
        const __m512 lo = _mm512_maskz_loadu_ps(lo_mask, x + row * k + c);
        const __m512 hi = _mm512_maskz_loadu_ps(hi_mask, x + row * k + c + 16);
        alignas(64) uint32_t words[16];
        _mm512_store_si512(words, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
        const int64_t n_pairs = std::min<int64_t>(16, pairs - c / 2);
        for (int64_t p = 0; p < n_pairs; ++p) tile[(c / 2 + p) * kBf16TileRows + j] = words[p];
      }
    }
  }
}

void gemm_bf16dot_tiles_avx512(const uint16_t* w, int64_t rows, const uint32_t* xt, int64_t nx,
                               int64_t k, const float* bias, float* out, int64_t ldo) {
  const int64_t pairs = (k + 1) / 2;
  thread_local AlignedVector<uint32_t> panel_store;
  if (panel_store.size() < static_cast<size_t>(pairs * kPanelRows)) {
    panel_store.resize(static_cast<size_t>(pairs * kPanelRows));
  }
  uint32_t* panel = panel_store.data();
  const int64_t tiles = (nx + kBf16TileRows - 1) / kBf16TileRows;
  for (int64_t r0 = 0; r0 < rows; r0 += kPanelRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kPanelRows, rows - r0));
    pack_panel(w + r0 * k, nr, k, panel);
    // The next panel's rows (contiguous) requested into L2, a slice during each tile: packing
    // read them from DRAM at the pace of its misses (perf: packing 24% of the tiles' time in a
    // 128-token prompt, 18% with this; docs/perf.md, twenty-third session).
    const char* next = reinterpret_cast<const char*>(w + (r0 + nr) * k);
    const size_t next_bytes =
        static_cast<size_t>(std::min<int64_t>(kPanelRows, rows - r0 - nr) * k) * sizeof(*w);
    const size_t slice = (next_bytes / static_cast<size_t>(tiles) + 63) / 64 * 64;
    size_t fetched = 0;
    for (int64_t j0 = 0; j0 < nx; j0 += kBf16TileRows) {
      const int n = static_cast<int>(std::min<int64_t>(kBf16TileRows, nx - j0));
      const uint32_t* x = xt + j0 * pairs;
      const float* b = bias ? bias + r0 : nullptr;
      // A tile has a pair step per line to request (fewer when a short prompt's few tiles
      // leave a slice longer than its pairs: the rest of the panel is then read unrequested).
      const int64_t lines = std::min<int64_t>(
          pairs, static_cast<int64_t>((std::min(next_bytes, fetched + slice) - fetched) / 64));
      kPanelTiles[n](panel, nr, x, pairs, j0, n, b, out + r0, ldo, next + fetched, lines);
      fetched += static_cast<size_t>(lines) * 64;
    }
  }
}

void round_rows_bf16_avx512(const float* x, int64_t n, int64_t k, uint16_t* out) {
  const int64_t total = n * k;
  int64_t i = 0;
  for (; i + 16 <= total; i += 16) {
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), (__m256i)b);
  }
  if (i < total) {
    const auto m = static_cast<__mmask16>((1u << (total - i)) - 1);
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
    _mm256_mask_storeu_epi16(out + i, m, (__m256i)b);
  }
}

void gemm_bf16dot_avx512(const uint16_t* w, int64_t rows, const uint16_t* xb, int64_t nx, int64_t k,
                         const float* bias, float* out, int64_t ldo) {
  if (nx == 1) {
    matvec(w, rows, xb, k, bias, out);
    return;
  }
  for (int64_t r0 = 0; r0 < rows; r0 += kTileRows) {
    const int nr = static_cast<int>(std::min<int64_t>(kTileRows, rows - r0));
    for (int64_t j0 = 0; j0 < nx; j0 += kTileCols) {
      tile(w + r0 * k, nr, xb, j0, static_cast<int>(std::min<int64_t>(kTileCols, nx - j0)), k,
           bias ? bias + r0 : nullptr, out + r0, ldo);
    }
  }
}

namespace {

// Seconds for `steps` rounds of 12 independent chains of `op` on this core: enough chains to
// cover either instruction's latency, so the time is the issue rate.
template <class Op>
double chain_seconds(int steps, Op op) {
  __m512 acc[12];  // distinct starts, or the compiler merges identical chains into one
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
#pragma GCC unroll 12
    for (auto& a : acc) a = op(a);
  }
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  __m512 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm512_add_ps(sum, acc[i]);
  // Kept observable so the chains are not removed.
  volatile float sink = _mm512_reduce_add_ps(sum);
  (void)sink;
  return took.count();
}

}  // namespace

double bf16_pair_speedup() {
  // Operands the compiler cannot see through (zeros, so the sums stay finite).
  volatile int16_t zero = 0;
  const __m512bh w = as_bf16(_mm512_set1_epi16(zero));
  const __m512 f = _mm512_set1_ps(zero);
  constexpr int kSteps = 2000;  // 24,000 instructions: 10-60 us a chain
  double pairs = 1e30, fmas = 1e30;
  // The first round wakes the 512-bit units (Intel's cores run them slowly for some
  // microseconds after idling); the best of the alternated rounds after it counts.
  for (int round = 0; round < 6; ++round) {
    const double p = chain_seconds(kSteps, [&](__m512 a) { return _mm512_dpbf16_ps(a, w, w); });
    const double m = chain_seconds(kSteps, [&](__m512 a) { return _mm512_fmadd_ps(f, f, a); });
    if (round == 0) continue;
    pairs = std::min(pairs, p);
    fmas = std::min(fmas, m);
  }
  // A clock too coarse to time the chains says nothing: the pair products, as without timing.
  if (!(pairs > 0 && fmas > 0)) return 1.0;
  // Multiply-adds: 32 per pair product, 16 per FMA.
  return (32.0 / pairs) / (16.0 / fmas);
}

}  // namespace anvil::cpu
