// kernels_amx.h: prefill products on AMX bf16 tiles. A tile multiply takes A as 16 rows of 32
// values in memory order and B with each column's consecutive values paired in 32-bit elements,
// so A is 16 activation rows (rounded to bf16 and packed once per product) and B 16 weight rows
// (bf16 rows transposed by pairs, quantized rows dequantized first), turned into tiles by the
// thread that multiplies them, one pair of 16-row panels at a time; C holds 16 activation rows x
// 16 weight rows in float32 over the whole of k, stored straight into the output's rows.
// Quantized weights take the bf16 tiles too: the int8 tiles need each 32-value block's sums
// scaled in float32 on the vector units (16 conversions, multiplies and adds per block of
// 16 x 16 outputs), which held them to ~150 GMAC/s a thread; dequantizing a panel costs about
// as much once and is shared by all the activation rows.
#include "backends/cpu/kernels_amx.h"

// GCC 12 reports its own 512-bit intrinsics' undefined pass-through operands (insert, permute,
// conversions) as uninitialized once inlined here; the instructions overwrite every lane.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/aligned_vector.h"
#include "backends/cpu/panel_tiles_avx512.h"
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

// ---- Quantized rows: a 32-value block of two repacked 8-row groups ------------------------

// What unpacking a block needs of a repacked type (repack.h): where a 32-value block's quants
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

// One 32-value block of two 8-row groups as signed int8 values: 8 steps of 4 values of 16
// columns (group a's 8 rows then group b's), step t holding values 4t..4t+3. Q8_0 is stored as
// q + 128; the nibble types as the Q4 layout (step t: low nibbles values 4t.., high nibbles
// 16 + 4t..) with Q5's fifth bits in one word (bit t / 4 + t of each byte), minus their offset.
void block_int8(const Int8Layout& lay, const uint8_t* qa, const uint8_t* qb, int8_t* tile) {
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
// block_int8's layout in two halves of 4 steps: values 0-15 (the low nibbles) and 16-31 (the
// high ones), each with its own scale, minus the stored offset 32.
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

// Lane l of the result: scale[4 i + l / 4], the column of the l-th value of a 16-value quarter
// of a step (4 columns x 4 values).
inline __m512 quarter_scales(__m512 scale, int i) {
  const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  return _mm512_permutexvar_ps(
      _mm512_add_epi32(_mm512_set1_epi32(4 * i), _mm512_srli_epi32(lane, 2)), scale);
}

// One 32-value block of 16 rows as a bf16 B tile: `q` holds the int8 values as block_int8 lays them
// out (step t: values 4t..4t+3 of each of the 16 columns), value = q x scale + minimum, with
// `lo` the columns' scales for steps 0-3 and `hi` for steps 4-7 (Q6_K's two 16-value halves).
// Tile row i holds values 2i and 2i + 1 of every column. q x scale is exact in float32 for every
// type (at most 25 significant bits only for Q6_K, whose reference multiplies in the same order),
// so the one rounding of the minimum's add and the one to bf16 (to nearest even) are the
// reference dequantization's, then Tensor::to(bf16)'s.
template <bool kMin>
void block_pairs(const int8_t* q, __m512 lo, __m512 hi, __m512 minimum, uint16_t* tile) {
  __m512 s_lo[4], s_hi[4], m[4];
  for (int i = 0; i < 4; ++i) {
    s_lo[i] = quarter_scales(lo, i);
    s_hi[i] = quarter_scales(hi, i);
    m[i] = kMin ? quarter_scales(minimum, i) : _mm512_setzero_ps();
  }
  // Pair (c, p) of a converted half-step sits in 32-bit element 2 c + p: the even elements of
  // columns 0-7 and 8-15 make row 2t, the odd ones row 2t + 1.
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (int t = 0; t < 8; ++t) {
    __m512 f[4];
    for (int i = 0; i < 4; ++i) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 64 * t + 16 * i));
      const __m512 qf = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(v));
      const __m512 s = t < 4 ? s_lo[i] : s_hi[i];
      f[i] = kMin ? _mm512_fmadd_ps(qf, s, m[i]) : _mm512_mul_ps(qf, s);
    }
    const __m512i cols_lo = (__m512i)_mm512_cvtne2ps_pbh(f[1], f[0]);
    const __m512i cols_hi = (__m512i)_mm512_cvtne2ps_pbh(f[3], f[2]);
    _mm512_storeu_si512(tile + 64 * t, _mm512_permutex2var_epi32(cols_lo, even, cols_hi));
    _mm512_storeu_si512(tile + 64 * t + 32, _mm512_permutex2var_epi32(cols_lo, odd, cols_hi));
  }
}

// Step t's four quarters (16 columns x values 4t..4t+3, as floats: quarter i holds columns
// 4i..4i+3) as tile rows 2t and 2t + 1, rounded to bf16 (to nearest even).
inline void store_step_rows(const __m512* f, int t, uint16_t* tile) {
  // Pair (c, p) of a converted half-step sits in 32-bit element 2 c + p: the even elements of
  // columns 0-7 and 8-15 make row 2t, the odd ones row 2t + 1.
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  const __m512i cols_lo = (__m512i)_mm512_cvtne2ps_pbh(f[1], f[0]);
  const __m512i cols_hi = (__m512i)_mm512_cvtne2ps_pbh(f[3], f[2]);
  _mm512_storeu_si512(tile + 64 * t, _mm512_permutex2var_epi32(cols_lo, even, cols_hi));
  _mm512_storeu_si512(tile + 64 * t + 32, _mm512_permutex2var_epi32(cols_lo, odd, cols_hi));
}

// A Q8_0 block (stored as q + 128) or a nibble block of the Q4 layout (no fifth bits) of two
// 8-row groups straight from the repacked quants `qa` / `qb` as a bf16 B tile: value = stored x
// scale + addend, the addend -128 x scale (Q8_0), -8 x scale (Q4_0) or the block's minimum term.
// Stored x scale is exact in float32 (8 bits times f16's 11, or a six-bit scale's product), and
// so is the offset's product, so the one rounding of the fused multiply-add gives q x scale (+
// minimum) as block_int8 + block_pairs compute it: the same tile, without block_int8's pass
// through memory; one widening per 16 bytes serves both nibbles.
template <bool kNibbles>
void direct_chunk(const uint8_t* qa, const uint8_t* qb, __m512 scale, __m512 addend,
                  uint16_t* tile) {
  __m512 s[4], a[4];
  for (int i = 0; i < 4; ++i) {
    s[i] = quarter_scales(scale, i);
    a[i] = quarter_scales(addend, i);
  }
  // Quarter i of a step: group a's rows (columns 0-7) for i < 2, group b's for the others.
  const auto quarter = [&](int t, int i) {
    const uint8_t* q = (i < 2 ? qa : qb) + 32 * t + 16 * (i & 1);
    return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q)));
  };
  if (!kNibbles) {
    for (int t = 0; t < 8; ++t) {
      __m512 f[4];
      for (int i = 0; i < 4; ++i) {
        f[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(quarter(t, i)), s[i], a[i]);
      }
      store_step_rows(f, t, tile);
    }
    return;
  }
  const __m512i low = _mm512_set1_epi32(0x0f);
  for (int t = 0; t < 4; ++t) {  // low nibbles: values 4t.., high nibbles: 16 + 4t..
    __m512 lo[4], hi[4];
    for (int i = 0; i < 4; ++i) {
      const __m512i v = quarter(t, i);
      lo[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_and_si512(v, low)), s[i], a[i]);
      hi[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(v, 4)), s[i], a[i]);
    }
    store_step_rows(lo, t, tile);
    store_step_rows(hi, 4 + t, tile);
  }
}

// Block b (values 32b..32b+31) of rows [16 panel, 16 panel + 16) of repacked weights (groups
// 2 panel and 2 panel + 1; a missing second group reads zeros) as a B tile.
template <bool kMin>
void quantized_chunk(const Int8Layout& lay, const AmxWeights& w, int64_t panel, int64_t b,
                     uint16_t* tile) {
  const int64_t kb = w.k / 32, groups = (w.rows + kPackRows - 1) / kPackRows;
  const size_t group_bytes = static_cast<size_t>(lay.super ? kb / 8 : kb) * w.block_bytes;
  thread_local std::vector<uint8_t> zero_store;
  const uint8_t* ga = w.packed + static_cast<size_t>(2 * panel) * group_bytes;
  const uint8_t* gb = ga + group_bytes;
  if (2 * panel + 1 >= groups) {
    if (zero_store.size() < group_bytes) zero_store.assign(group_bytes, 0);
    gb = zero_store.data();
  }
  alignas(64) int8_t q[512];
  if (lay.q6) {  // a scale per 16 values: one for steps 0-3, one for 4-7
    const size_t at = static_cast<size_t>(b / 8) * w.block_bytes;
    const int s = static_cast<int>(b % 8);
    build_q6_halves(ga + at + 144 + 192 * s, gb + at + 144 + 192 * s, q, q + 256);
    block_pairs<false>(q, q6_scales(ga + at, gb + at, 2 * s),
                       q6_scales(ga + at, gb + at, 2 * s + 1), _mm512_setzero_ps(), tile);
    return;
  }
  alignas(64) float d[16], m[16];
  block_scales(lay, ga, gb, w.block_bytes, b, d, m);
  if (!lay.fifth) {
    const __m512 scale = _mm512_load_ps(d);
    // Without a minimum the stored value's offset: Q8_0's 128, the nibble types' own.
    const float offset = lay.q8 ? 128.0f : static_cast<float>(lay.offset);
    const __m512 addend = kMin ? _mm512_load_ps(m) : _mm512_mul_ps(scale, _mm512_set1_ps(-offset));
    const uint8_t* qa = block_quants(lay, ga, w.block_bytes, b);
    const uint8_t* qb = block_quants(lay, gb, w.block_bytes, b);
    if (lay.q8) {
      direct_chunk<false>(qa, qb, scale, addend, tile);
    } else {
      direct_chunk<true>(qa, qb, scale, addend, tile);
    }
    return;
  }
  block_int8(lay, block_quants(lay, ga, w.block_bytes, b), block_quants(lay, gb, w.block_bytes, b),
             q);
  const __m512 scale = _mm512_load_ps(d);
  block_pairs<kMin>(q, scale, scale, kMin ? _mm512_load_ps(m) : _mm512_setzero_ps(), tile);
}

// Chunk s (values 32s..32s+31) of rows [16 panel, 16 panel + 16) of bf16 weights as a B tile:
// the 16 rows of 16 pairs transposed (a 16 x 16 transpose of 32-bit elements), zeros past the
// rows and k.
void bf16_chunk(const AmxWeights& w, int64_t panel, int64_t s, uint16_t* tile) {
  const int64_t r0 = 16 * panel;
  const int nr = static_cast<int>(std::min<int64_t>(16, w.rows - r0));
  const int64_t left = std::min<int64_t>(32, w.k - 32 * s);
  const auto keep = static_cast<__mmask32>(left == 32 ? ~0u : (1u << left) - 1u);
  __m512i r[16];
  for (int c = 0; c < 16; ++c) {
    r[c] = c < nr ? _mm512_maskz_loadu_epi16(keep, w.bf16 + (r0 + c) * w.k + 32 * s)
                  : _mm512_setzero_si512();
  }
  transpose16(r);
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(tile + 32 * i, r[i]);
}

// Chunk s of a weight panel as a B tile (zeros for a panel past the rows: an odd last panel's
// partner).
void weight_chunk(const AmxWeights& w, int64_t panel, int64_t s, uint16_t* tile) {
  if (16 * panel >= w.rows) {
    std::memset(tile, 0, 1024);
  } else if (w.bf16) {
    bf16_chunk(w, panel, s, tile);
  } else if (const Int8Layout lay = layout_of(w.kind); lay.with_min) {
    quantized_chunk<true>(lay, w, panel, s, tile);
  } else {
    quantized_chunk<false>(lay, w, panel, s, tile);
  }
}

// C tile `c` (16 activation rows from j0 x 16 weight rows from r0, float32, the bias already in
// it) into the output: only the rows and columns that exist (a block at the edge of the output).
void write_edge_tile(const float (*c)[16], int64_t j0, int64_t r0, int64_t nx, int64_t rows,
                     float* out, int64_t ldo) {
  const int nj = static_cast<int>(std::min<int64_t>(16, nx - j0));
  const int nr = static_cast<int>(std::min<int64_t>(16, rows - r0));
  if (nj <= 0 || nr <= 0) return;
  const auto valid = static_cast<__mmask16>((1u << nr) - 1u);
  for (int j = 0; j < nj; ++j) {
    _mm512_mask_storeu_ps(out + (j0 + j) * ldo + r0, valid, _mm512_load_ps(c[j]));
  }
}

// The 16 floats a panel's C tiles start from: its rows' biases (zeros past the rows), or zeros.
void panel_bias(const float* bias, int64_t r0, int64_t rows, float* row16) {
  const int nr = static_cast<int>(std::clamp<int64_t>(rows - r0, 0, 16));
  const auto valid = static_cast<__mmask16>((1u << nr) - 1u);
  _mm512_store_ps(row16, bias ? _mm512_maskz_loadu_ps(valid, bias + r0) : _mm512_setzero_ps());
}

}  // namespace

bool amx_takes(QuantKind kind) {
  return kind == QuantKind::q8_0 || kind == QuantKind::q4_0 || kind == QuantKind::q4_1 ||
         kind == QuantKind::q5_0 || kind == QuantKind::q5_1 || kind == QuantKind::q4_k ||
         kind == QuantKind::q5_k || kind == QuantKind::q6_k;
}

int64_t amx_row_blocks(int64_t nx) {
  return ((nx + 15) / 16 + 1) / 2 * 2;
}

size_t amx_row_tiles_words(int64_t nx, int64_t k) {
  return static_cast<size_t>(amx_row_blocks(nx) * ((k + 31) / 32) * 512);
}

void pack_rows_amx(const float* x, int64_t nx, int64_t k, int64_t b0, int64_t b1, uint16_t* tiles) {
  const int64_t chunks = (k + 31) / 32;
  for (int64_t jb = b0; jb < b1; ++jb) {
    for (int64_t s = 0; s < chunks; ++s) {
      uint16_t* tile = tiles + (jb * chunks + s) * 512;
      const int64_t left = std::min<int64_t>(32, k - 32 * s);
      const auto first = static_cast<__mmask16>(left >= 16 ? 0xffff : (1u << left) - 1u);
      const auto second = static_cast<__mmask16>(left >= 32   ? 0xffff
                                                 : left <= 16 ? 0
                                                              : (1u << (left - 16)) - 1u);
      for (int j = 0; j < 16; ++j) {
        const int64_t row = 16 * jb + j;
        __m512i v = _mm512_setzero_si512();
        if (row < nx) {
          const float* src = x + row * k + 32 * s;
          v = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(second, src + 16),
                                           _mm512_maskz_loadu_ps(first, src));
        }
        _mm512_storeu_si512(tile + 32 * j, v);
      }
    }
  }
}

size_t amx_panel_words(int64_t k) {
  return static_cast<size_t>((k + 31) / 32 * 512);
}

void weight_tiles_amx(const AmxWeights& w, int64_t panel, uint16_t* tiles) {
  for (int64_t s = 0; s < (w.k + 31) / 32; ++s) weight_chunk(w, panel, s, tiles + s * 512);
}

void gemm_amx(const AmxWeights& w, int64_t p0, int64_t p1, const uint16_t* a_tiles, int64_t nx,
              const float* bias, float* out, int64_t ldo) {
  const int64_t chunks = (w.k + 31) / 32, blocks = amx_row_blocks(nx);
  const size_t panel_words = amx_panel_words(w.k);
  thread_local AlignedVector<uint16_t> b_store;
  if (b_store.size() < 2 * panel_words) b_store.resize(2 * panel_words);
  uint16_t* b0 = b_store.data();
  uint16_t* b1 = b0 + panel_words;
  const TileScope scope(bf16_config());
  alignas(64) float c[16][16];
  alignas(64) float bias0[16], bias1[16];
  constexpr long kStride = 64;  // bytes per tile row: every tile is packed
  const int64_t full_blocks = nx / 16;
  const long ld = static_cast<long>(ldo * 4);
  for (int64_t p = p0; p < p1; p += 2) {
    weight_tiles_amx(w, p, b0);
    weight_tiles_amx(w, p + 1, b1);  // zeros past the rows
    const int64_t r0 = 16 * p;
    panel_bias(bias, r0, w.rows, bias0);
    panel_bias(bias, r0 + 16, w.rows, bias1);
    const bool full_panels = r0 + 32 <= w.rows;
    for (int64_t jb = 0; jb < blocks; jb += 2) {
      const uint16_t* a0 = a_tiles + jb * chunks * 512;
      const uint16_t* a1 = a0 + chunks * 512;
      // C starts as the bias: a tile row stride of 0 repeats the 16 floats in every row.
      _tile_loadd(4, bias0, 0);
      _tile_loadd(5, bias1, 0);
      _tile_loadd(6, bias0, 0);
      _tile_loadd(7, bias1, 0);
      for (int64_t s = 0; s < chunks; ++s) {
        // The next step's A tiles (activations, from L2) requested into L1 while this step's
        // products run: +3-8% on the Xeon guest, measured call by call. (B, made by this thread
        // just before, is already near; keeping it in L1 by spans of k, with C parked between
        // spans, measured 7-10% slower.)
        if (s + 1 < chunks) {
          const char* next0 = reinterpret_cast<const char*>(a0 + (s + 1) * 512);
          const char* next1 = reinterpret_cast<const char*>(a1 + (s + 1) * 512);
          for (int line = 0; line < 1024; line += 64) {
            _mm_prefetch(next0 + line, _MM_HINT_T0);
            _mm_prefetch(next1 + line, _MM_HINT_T0);
          }
        }
        // Each load placed right before its first use, so loads overlap the products of the
        // tiles already in (all four loads first measured 11-40% slower in a probe on the Xeon).
        _tile_loadd(0, a0 + s * 512, kStride);
        _tile_loadd(2, b0 + s * 512, kStride);
        _tile_dpbf16ps(4, 0, 2);
        _tile_loadd(3, b1 + s * 512, kStride);
        _tile_dpbf16ps(5, 0, 3);
        _tile_loadd(1, a1 + s * 512, kStride);
        _tile_dpbf16ps(6, 1, 2);
        _tile_dpbf16ps(7, 1, 3);
      }
      // Whole 16 x 16 blocks go from the tiles straight into the output's rows; blocks at its
      // edges through `c`, only their rows and columns that exist.
      const int64_t j0 = 16 * jb;
      if (full_panels && jb + 2 <= full_blocks) {
        float* o = out + j0 * ldo + r0;
        _tile_stored(4, o, ld);
        _tile_stored(5, o + 16, ld);
        _tile_stored(6, o + 16 * ldo, ld);
        _tile_stored(7, o + 16 * ldo + 16, ld);
        continue;
      }
      _tile_stored(4, c, 64);
      write_edge_tile(c, j0, r0, nx, w.rows, out, ldo);
      _tile_stored(5, c, 64);
      write_edge_tile(c, j0, r0 + 16, nx, w.rows, out, ldo);
      _tile_stored(6, c, 64);
      write_edge_tile(c, j0 + 16, r0, nx, w.rows, out, ldo);
      _tile_stored(7, c, 64);
      write_edge_tile(c, j0 + 16, r0 + 16, nx, w.rows, out, ldo);
    }
  }
}

}  // namespace anvil::cpu
