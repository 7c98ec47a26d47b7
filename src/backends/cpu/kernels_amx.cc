// kernels_amx.h: prefill products on AMX tiles. A tile multiply takes A as M rows of K values
// in memory order and B with each column's consecutive values interleaved (4 int8 or 2 bf16 per
// 32-bit element), so:
//   bf16: A = 16 weight rows as stored (a strided tile load, no repacking of the weights), B =
//         16 activation rows interleaved by pairs (packed once per call), C accumulates the
//         whole row in float32: out = C transposed.
//   int8: A = 16 activation rows of int8 (Q8Rows as quantized), B = two repacked 8-row groups'
//         block (repack.h already interleaves 4 values of 8 rows: the tile's two halves), C the
//         block's int32 sums, scaled per block in float32 (each 32-value block has its own
//         scales), so the AVX-512 work per block caps the gain, not the tile unit.
#include "backends/cpu/kernels_amx.h"

// GCC 12 reports its own 512-bit insert intrinsic's undefined pass-through operand as
// maybe-uninitialized once inlined here; the instruction overwrites every lane it leaves.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/repack.h"

namespace anvil::cpu {
namespace {

// The 64-byte tile configuration (palette 1): bytes per row and rows of each tile register.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void set_tile(TileConfig& c, int tile, int rows, int colsb) {
  c.rows[tile] = static_cast<uint8_t>(rows);
  c.colsb[tile] = static_cast<uint16_t>(colsb);
}

// Tiles configured on the calling thread for one kernel call, released after it (the tile
// state is per thread, and a thread holding it costs the OS a larger context switch).
class TileScope {
 public:
  explicit TileScope(const TileConfig& c) { _tile_loadconfig(&c); }
  ~TileScope() { _tile_release(); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

// ---- bf16 --------------------------------------------------------------------------------

TileConfig bf16_config() {
  TileConfig c;
  for (int t = 0; t < 8; ++t) set_tile(c, t, 16, 64);
  return c;
}

// ---- int8 --------------------------------------------------------------------------------

// What the int8 tile kernel needs of a repacked type (repack.h): where a 32-value block's quants
// are, the offset they carry, whether a minimum term and fifth bits follow. The K types (super:
// Q4_K, Q5_K) hold 8 such blocks per super-block, their quants at 160 + sub_stride * s, and
// their row scales are d times a six-bit scale and dmin times a six-bit minimum.
struct Int8Layout {
  int quants_at, offset;
  bool with_min, fifth, q8, super;
  int sub_stride;
  bool q6 = false;  // Q6_K: a scale per 16 values, so tiles of 16-value blocks
};

Int8Layout layout_of(QuantKind kind) {
  switch (kind) {
    case QuantKind::q8_0:
      return {16, 0, false, false, true, false, 0};
    case QuantKind::q4_0:
      return {16, 8, false, false, false, false, 0};
    case QuantKind::q4_1:
      return {32, 0, true, false, false, false, 0};
    case QuantKind::q5_0:
      return {16, 16, false, true, false, false, 0};
    case QuantKind::q5_1:
      return {32, 0, true, true, false, false, 0};
    case QuantKind::q4_k:
      return {160, 0, true, false, false, true, 128};
    case QuantKind::q5_k:
      return {160, 0, true, true, false, true, 160};
    default:  // q6_k: 144 + 192 s, the top two bits after each 32-value block's nibbles
      return {144, 32, false, false, false, true, 192, true};
  }
}

// Where 32-value block b of a group (`group`: its first byte) keeps its quants.
const uint8_t* block_quants(const Int8Layout& lay, const uint8_t* group, size_t block_bytes,
                            int64_t b) {
  if (!lay.super) return group + static_cast<size_t>(b) * block_bytes + lay.quants_at;
  return group + static_cast<size_t>(b / 8) * block_bytes + lay.quants_at +
         static_cast<size_t>(lay.sub_stride * (b % 8));
}

// Two f16 fields of 8 rows each (groups a and b) as 16 floats.
__m512 two_groups_f16(const uint8_t* a, const uint8_t* b) {
  const __m256i both = _mm256_inserti128_si256(
      _mm256_zextsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
  return _mm512_maskz_cvtph_ps(0xffff, both);  // maskz: no undefined pass-through (GCC 12 warns)
}

// Two groups' 8 bytes each as 16 floats.
__m512 two_groups_u8(const uint8_t* a, const uint8_t* b) {
  uint64_t wa, wb;
  std::memcpy(&wa, a, 8);
  std::memcpy(&wb, b, 8);
  const __m128i both = _mm_set_epi64x(static_cast<long long>(wb), static_cast<long long>(wa));
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(both));
}

// Block b's 16 row scales into d_out and, with a minimum, the 16 terms that multiply the
// activation block's d x sum into m_out, for groups a and b (block_bytes apart per block).
void block_scales(const Int8Layout& lay, const uint8_t* ga, const uint8_t* gb, size_t block_bytes,
                  int64_t b, float* d_out, float* m_out) {
  if (!lay.super) {
    const uint8_t* ba = ga + static_cast<size_t>(b) * block_bytes;
    const uint8_t* bb = gb + static_cast<size_t>(b) * block_bytes;
    _mm512_storeu_ps(d_out, two_groups_f16(ba, bb));
    if (lay.with_min) _mm512_storeu_ps(m_out, two_groups_f16(ba + 16, bb + 16));
    return;
  }
  // value = d sc q - dmin m: the minimum's term is -dmin m.
  const size_t at = static_cast<size_t>(b / 8) * block_bytes;
  const int s = static_cast<int>(b % 8);
  const uint8_t* ba = ga + at;
  const uint8_t* bb = gb + at;
  const __m512 d =
      _mm512_mul_ps(two_groups_f16(ba, bb), two_groups_u8(ba + 32 + 8 * s, bb + 32 + 8 * s));
  const __m512 m = _mm512_mul_ps(two_groups_f16(ba + 16, bb + 16),
                                 two_groups_u8(ba + 96 + 8 * s, bb + 96 + 8 * s));
  _mm512_storeu_ps(d_out, d);
  _mm512_storeu_ps(m_out, _mm512_sub_ps(_mm512_setzero_ps(), m));
}

// One 32-value block of two 8-row groups as a signed B tile: 8 rows (4 values each) of 16
// columns, group a's 8 rows then group b's. Q8_0 is stored as q + 128; the nibble types as
// the Q4 layout (step t: low nibbles values 4t.., high nibbles 16 + 4t..) with Q5's fifth bits
// in one word (bit t / 4 + t of each byte), minus their offset.
void build_b(const Int8Layout& lay, const uint8_t* qa, const uint8_t* qb, int8_t* tile) {
  const auto pair = [](const uint8_t* pa, const uint8_t* pb) {
    return _mm512_inserti64x4(
        _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pa))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb)), 1);
  };
  if (lay.q8) {
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int t = 0; t < 8; ++t) {
      _mm512_storeu_si512(tile + 64 * t, _mm512_xor_si512(pair(qa + 32 * t, qb + 32 * t), flip));
    }
    return;
  }
  const __m512i low = _mm512_set1_epi8(0x0f), bit4 = _mm512_set1_epi8(0x10);
  const __m512i offset = _mm512_set1_epi8(static_cast<char>(lay.offset));
  const __m512i bits = lay.fifth ? pair(qa + 128, qb + 128) : _mm512_setzero_si512();
  for (int t = 0; t < 4; ++t) {
    const __m512i v = pair(qa + 32 * t, qb + 32 * t);
    __m512i lo = _mm512_and_si512(v, low);
    __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    if (lay.fifth) {
      // 16-bit shifts by a run-time count; the mask drops what crosses from the next byte.
      lo = _mm512_or_si512(
          lo, _mm512_and_si512(_mm512_sll_epi16(bits, _mm_cvtsi32_si128(4 - t)), bit4));
      hi =
          _mm512_or_si512(hi, _mm512_and_si512(_mm512_srl_epi16(bits, _mm_cvtsi32_si128(t)), bit4));
    }
    _mm512_storeu_si512(tile + 64 * t, _mm512_sub_epi8(lo, offset));
    _mm512_storeu_si512(tile + 64 * (4 + t), _mm512_sub_epi8(hi, offset));
  }
}

// Q6_K's top two bits of step t (bits 2t..2t+1 of each byte) moved to bits 4-5.
inline __m512i top2_at(__m512i v, int t) {
  const __m512i mask = _mm512_set1_epi8(0x30);
  if (t < 2) return _mm512_and_si512(_mm512_sll_epi16(v, _mm_cvtsi32_si128(4 - 2 * t)), mask);
  return _mm512_and_si512(_mm512_srl_epi16(v, _mm_cvtsi32_si128(2 * t - 4)), mask);
}

// A repacked Q6_K 32-value block of two groups (quants qa / qb, their top bits 128 bytes on) as
// two signed B tiles of 16 values (4 rows x 16 columns): values 0-15 (the low nibbles) and
// 16-31 (the high ones), each with its own scale, minus the stored offset 32.
void build_q6_halves(const uint8_t* qa, const uint8_t* qb, int8_t* half0, int8_t* half1) {
  const auto pair = [](const uint8_t* pa, const uint8_t* pb) {
    return _mm512_inserti64x4(
        _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pa))),
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb)), 1);
  };
  const __m512i low = _mm512_set1_epi8(0x0f), offset = _mm512_set1_epi8(32);
  const __m512i top_lo = pair(qa + 128, qb + 128), top_hi = pair(qa + 160, qb + 160);
  for (int t = 0; t < 4; ++t) {
    const __m512i v = pair(qa + 32 * t, qb + 32 * t);
    const __m512i lo = _mm512_or_si512(_mm512_and_si512(v, low), top2_at(top_lo, t));
    const __m512i hi =
        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), low), top2_at(top_hi, t));
    _mm512_storeu_si512(half0 + 64 * t, _mm512_sub_epi8(lo, offset));
    _mm512_storeu_si512(half1 + 64 * t, _mm512_sub_epi8(hi, offset));
  }
}

// Q6_K's row scales of 16-value block h (0-15) of a super-block (sb_a / sb_b: its bytes in
// groups a and b): d times the signed scale.
__m512 q6_scales(const uint8_t* sb_a, const uint8_t* sb_b, int h) {
  uint64_t wa, wb;
  std::memcpy(&wa, sb_a + 16 + 8 * h, 8);
  std::memcpy(&wb, sb_b + 16 + 8 * h, 8);
  const __m128i both = _mm_set_epi64x(static_cast<long long>(wb), static_cast<long long>(wa));
  return _mm512_mul_ps(two_groups_f16(sb_a, sb_b), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(both)));
}

// Block of activations `a` (16 rows, `stride` apart) times the B tile at `b` into a zeroed C
// tile: tiles 0, 2 -> 4 for even blocks, 1, 3 -> 5 for odd ones (the tile intrinsics take
// literal register numbers).
inline void issue_even(const int8_t* a, const int8_t* b, long stride) {
  _tile_loadd(0, a, stride);
  _tile_loadd(2, b, 64);
  _tile_zero(4);
  _tile_dpbssd(4, 0, 2);
}
inline void issue_odd(const int8_t* a, const int8_t* b, long stride) {
  _tile_loadd(1, a, stride);
  _tile_loadd(3, b, 64);
  _tile_zero(5);
  _tile_dpbssd(5, 1, 3);
}

// Tiles for blocks of `block` (32 or 16) values.
TileConfig int8_config(int block) {
  TileConfig c;
  set_tile(c, 0, 16, block);  // A: 16 activation rows x block int8
  set_tile(c, 1, 16, block);
  set_tile(c, 2, block / 4, 64);  // B: block / 4 rows of 4 values x 16 columns
  set_tile(c, 3, block / 4, 64);
  set_tile(c, 4, 16, 64);  // C: 16 x 16 int32
  set_tile(c, 5, 16, 64);
  return c;
}

}  // namespace

size_t amx_pairs_words(int64_t nx, int64_t k) {
  return static_cast<size_t>((nx + 15) / 16 * (k / 32) * 256);
}

void pack_pairs_amx(const uint16_t* xb, int64_t nx, int64_t k, uint32_t* pairs) {
  const int64_t blocks = (nx + 15) / 16, chunks = k / 32;
  for (int64_t jb = 0; jb < blocks; ++jb) {
    for (int64_t s = 0; s < chunks; ++s) {
      uint32_t* tile = pairs + (jb * chunks + s) * 256;
      for (int j = 0; j < 16; ++j) {
        const int64_t row = jb * 16 + j;
        uint32_t words[16] = {};
        if (row < nx) std::memcpy(words, xb + row * k + s * 32, 64);
        for (int i = 0; i < 16; ++i) tile[i * 16 + j] = words[i];
      }
    }
  }
}

void gemm_bf16_amx(const uint16_t* w, int64_t rows, const uint32_t* packed, int64_t nx, int64_t k,
                   const float* bias, float* out, int64_t ldo) {
  const int64_t chunks = k / 32, jblocks = (nx + 15) / 16;
  thread_local std::vector<uint16_t> tail_store;
  // The last panel's missing rows read zeros from a padded copy (a tile load of 16 rows would
  // run past the matrix).
  const int64_t full = rows / 16 * 16;
  if (rows > full) {
    tail_store.assign(static_cast<size_t>(16 * k), 0);
    std::memcpy(tail_store.data(), w + full * k, static_cast<size_t>((rows - full) * k) * 2);
  }
  const auto panel = [&](int64_t r0) { return r0 < full ? w + r0 * k : tail_store.data(); };
  const int64_t panels = (rows + 15) / 16;
  const TileScope tiles(bf16_config());
  alignas(64) float c[4][16][16];
  for (int64_t p = 0; p < panels; p += 2) {
    const bool two_panels = p + 1 < panels;
    const uint16_t* a0 = panel(p * 16);
    const uint16_t* a1 = two_panels ? panel((p + 1) * 16) : a0;
    for (int64_t jb = 0; jb < jblocks; jb += 2) {
      const bool two_blocks = jb + 1 < jblocks;
      const uint32_t* b0 = packed + jb * chunks * 256;
      const uint32_t* b1 = two_blocks ? b0 + chunks * 256 : b0;
      _tile_zero(4);
      _tile_zero(5);
      _tile_zero(6);
      _tile_zero(7);
      const auto stride = static_cast<long>(k * 2);
      for (int64_t s = 0; s < chunks; ++s) {
        _tile_loadd(0, a0 + s * 32, stride);
        _tile_loadd(1, a1 + s * 32, stride);
        _tile_loadd(2, b0 + s * 256, 64);
        _tile_loadd(3, b1 + s * 256, 64);
        _tile_dpbf16ps(4, 0, 2);
        _tile_dpbf16ps(5, 0, 3);
        _tile_dpbf16ps(6, 1, 2);
        _tile_dpbf16ps(7, 1, 3);
      }
      _tile_stored(4, c[0], 64);
      _tile_stored(5, c[1], 64);
      _tile_stored(6, c[2], 64);
      _tile_stored(7, c[3], 64);
      // c[2 pa + jbb][r][j]: weight row r of panel p + pa, activation row j of block jb + jbb.
      for (int pa = 0; pa < (two_panels ? 2 : 1); ++pa) {
        for (int jbb = 0; jbb < (two_blocks ? 2 : 1); ++jbb) {
          const int64_t r0 = (p + pa) * 16, j0 = (jb + jbb) * 16;
          const int nr = static_cast<int>(std::min<int64_t>(16, rows - r0));
          const int nj = static_cast<int>(std::min<int64_t>(16, nx - j0));
          for (int j = 0; j < nj; ++j) {
            float* o = out + (j0 + j) * ldo + r0;
            for (int r = 0; r < nr; ++r)
              o[r] = c[2 * pa + jbb][r][j] + (bias ? bias[r0 + r] : 0.0f);
          }
        }
      }
    }
  }
}

bool amx_takes(QuantKind kind) {
  return kind == QuantKind::q8_0 || kind == QuantKind::q4_0 || kind == QuantKind::q4_1 ||
         kind == QuantKind::q5_0 || kind == QuantKind::q5_1 || kind == QuantKind::q4_k ||
         kind == QuantKind::q5_k || kind == QuantKind::q6_k;
}

namespace {

// gemm_packed_amx for one type family (kMin: a minimum term; kBlock: values per scale, 32, or
// 16 for Q6_K).
template <bool kMin, int kBlock>
void packed_tiles(const Int8Layout& lay, const uint8_t* packed, size_t block_bytes, int64_t rows,
                  int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                  float* out, int64_t ldo) {
  const int64_t kb = x.k / 32, jblocks = (nx + 15) / 16;
  const int64_t nb = x.k / kBlock;  // tile blocks (kb, or 2 kb for Q6_K)
  constexpr int kTileBytes = kBlock * 16;
  const size_t group_bytes = static_cast<size_t>(lay.super ? kb / 8 : kb) * block_bytes;
  // A missing second group (an odd count) reads a group of zeros: d = 0, quants 0.
  thread_local std::vector<uint8_t> zero_store;
  if ((g1 - g0) % 2 != 0) zero_store.assign(group_bytes, 0);
  const uint8_t* zero_group = zero_store.data();
  // The last activation rows (nx not a multiple of 16) from a zero-padded copy, so every tile
  // takes 16 rows.
  thread_local std::vector<int8_t> tail_q;
  const int64_t full = nx / 16 * 16;
  if (nx > full) {
    tail_q.assign(static_cast<size_t>(16 * x.k), 0);
    std::memcpy(tail_q.data(), x.q + full * x.k,
                static_cast<size_t>(nx - full) * static_cast<size_t>(x.k));
  }
  // The activation scales (and d * sum for the minimums) per 16 rows and block, 16 in a row:
  // the epilogue then reads them from one base address (16 row pointers cost the accumulators
  // their registers), zeros past nx.
  thread_local std::vector<float> xd_store, xds_store;
  const size_t scale_count = static_cast<size_t>(jblocks * kb * 16);
  xd_store.assign(scale_count, 0.0f);
  if (kMin) xds_store.assign(scale_count, 0.0f);
  for (int64_t j = 0; j < nx; ++j) {
    for (int64_t b = 0; b < kb; ++b) {
      const size_t at = static_cast<size_t>(((j / 16) * kb + b) * 16 + j % 16);
      xd_store[at] = x.d[j * kb + b];
      if (kMin) xds_store[at] = x.ds[j * kb + b];
    }
  }
  // A group pair's B tiles and scales for every block, built once and read by each 16 rows of
  // activations.
  thread_local std::vector<int8_t> b_store;
  thread_local std::vector<float> w_store;
  if (b_store.size() < static_cast<size_t>(kb * 512)) b_store.resize(static_cast<size_t>(kb * 512));
  if (w_store.size() < static_cast<size_t>(nb * 32)) w_store.resize(static_cast<size_t>(nb * 32));
  int8_t* b_tiles = b_store.data();
  float* wscale = w_store.data();  // per block: the 16 rows' d, then their minimums
  const TileScope tiles(int8_config(kBlock));
  alignas(64) int32_t c[16][16];
  for (int64_t g = g0; g < g1; g += 2) {
    const uint8_t* ga = packed + static_cast<size_t>(g) * group_bytes;
    const bool two = g + 1 < g1;
    const int64_t r0 = g * kPackRows;
    const int nr = static_cast<int>(std::min<int64_t>(two ? 16 : 8, rows - r0));
    const uint8_t* gb = two ? ga + group_bytes : zero_group;
    for (int64_t b = 0; b < kb; ++b) {
      if constexpr (kBlock == 16) {  // Q6_K: two tiles and two scales per 32 values
        const size_t at = static_cast<size_t>(b / 8) * block_bytes;
        const int s = static_cast<int>(b % 8);
        build_q6_halves(ga + at + 144 + 192 * s, gb + at + 144 + 192 * s, b_tiles + b * 512,
                        b_tiles + b * 512 + 256);
        _mm512_storeu_ps(wscale + 64 * b, q6_scales(ga + at, gb + at, 2 * s));
        _mm512_storeu_ps(wscale + 64 * b + 32, q6_scales(ga + at, gb + at, 2 * s + 1));
      } else {
        build_b(lay, block_quants(lay, ga, block_bytes, b), block_quants(lay, gb, block_bytes, b),
                b_tiles + b * 512);
        block_scales(lay, ga, gb, block_bytes, b, wscale + 32 * b, wscale + 32 * b + 16);
      }
    }
    for (int64_t jb = 0; jb < jblocks; ++jb) {
      const int64_t j0 = jb * 16;
      const int8_t* a = j0 < full ? x.q + j0 * x.k : tail_q.data();
      const float* xd = xd_store.data() + jb * kb * 16;
      const float* xds = kMin ? xds_store.data() + jb * kb * 16 : nullptr;
      __m512 acc[16];
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) acc[j] = _mm512_setzero_ps();
      // Two C tiles in turn: block b + 1's multiply is issued before block b's sums are read
      // back, so the tile unit and the vector units overlap.
      const long stride = static_cast<long>(x.k);
      issue_even(a, b_tiles, stride);
      for (int64_t b = 0; b < nb; ++b) {
        if (b + 1 < nb) {
          const int8_t* next_a = a + (b + 1) * kBlock;
          const int8_t* next_b = b_tiles + (b + 1) * kTileBytes;
          if (b % 2 == 0) {
            issue_odd(next_a, next_b, stride);
          } else {
            issue_even(next_a, next_b, stride);
          }
        }
        if (b % 2 == 0) {
          _tile_stored(4, c, 64);
        } else {
          _tile_stored(5, c, 64);
        }
        // Per activation row: the sums times the rows' d and the row's activation scale, plus
        // the minimums times the activation sum.
        const __m512 dw = _mm512_loadu_ps(wscale + 32 * b);
        [[maybe_unused]] const __m512 mw = _mm512_loadu_ps(wscale + 32 * b + 16);
        const float* d = xd + b / (32 / kBlock) * 16;
#pragma GCC unroll 16
        for (int j = 0; j < 16; ++j) {
          const __m512 sums = _mm512_cvtepi32_ps(_mm512_load_si512(c[j]));
          acc[j] = _mm512_fmadd_ps(sums, _mm512_mul_ps(dw, _mm512_set1_ps(d[j])), acc[j]);
          if constexpr (kMin) acc[j] = _mm512_fmadd_ps(mw, _mm512_set1_ps(xds[b * 16 + j]), acc[j]);
        }
      }
      const int nj = static_cast<int>(std::min<int64_t>(16, nx - j0));
      const __mmask16 valid = static_cast<__mmask16>((1u << nr) - 1u);
      const __m512 bv = bias ? _mm512_maskz_loadu_ps(valid, bias + r0) : _mm512_setzero_ps();
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        if (j < nj) {
          _mm512_mask_storeu_ps(out + (j0 + j) * ldo + r0, valid, _mm512_add_ps(acc[j], bv));
        }
      }
    }
  }
}

}  // namespace

void gemm_packed_amx(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                     int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                     float* out, int64_t ldo) {
  const Int8Layout lay = layout_of(kind);
  if (lay.q6) {
    packed_tiles<false, 16>(lay, packed, block_bytes, rows, g0, g1, x, nx, bias, out, ldo);
  } else if (lay.with_min) {
    packed_tiles<true, 32>(lay, packed, block_bytes, rows, g0, g1, x, nx, bias, out, ldo);
  } else {
    packed_tiles<false, 32>(lay, packed, block_bytes, rows, g0, g1, x, nx, bias, out, ldo);
  }
}

}  // namespace anvil::cpu
