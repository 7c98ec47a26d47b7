// ggml's block types: byte layouts, sizes, and exact dequantization (the same floats as ggml's
// reference dequantize_row_* in ggml-quants.c). The structs mirror ggml-common.h with every
// field as bytes (alignment 1), so a block may be read in place from any offset of a mapped
// file; multi-byte fields are little-endian and are read with the load helpers below.
// Vectorised kernels can reuse the layouts and the scale unpacking helpers.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "anvil/dtype.h"
#include "anvil/gguf.h"

namespace anvil {

static_assert(std::endian::native == std::endian::little,
              "GGUF block fields are little-endian and are read in place");

/// Elements per super-block of the K types.
inline constexpr int kQK_K = 256;

// 32-element blocks: value = d * q (q signed) or d * q + m (q unsigned).
struct BlockQ4_0 {
  uint8_t d[2];    // f16 scale
  uint8_t qs[16];  // element j in the low nibble of qs[j], element j + 16 in the high nibble
};
struct BlockQ4_1 {
  uint8_t d[2];  // f16 scale
  uint8_t m[2];  // f16 minimum
  uint8_t qs[16];
};
struct BlockQ5_0 {
  uint8_t d[2];
  uint8_t qh[4];  // bit j of this u32 is the fifth bit of element j
  uint8_t qs[16];
};
struct BlockQ5_1 {
  uint8_t d[2];
  uint8_t m[2];
  uint8_t qh[4];
  uint8_t qs[16];
};
struct BlockQ8_0 {
  uint8_t d[2];
  int8_t qs[32];
};
// Q8_1 is ggml's activation format for dot products (d, and s = d * sum(qs)); ggml has no
// dequantization for it, and it does not appear in model files.
struct BlockQ8_1 {
  uint8_t d[2];
  uint8_t s[2];
  int8_t qs[32];
};

// 256-element super-blocks.
struct BlockQ2_K {
  uint8_t scales[16];  // per 16 elements: low nibble scale, high nibble min
  uint8_t qs[64];      // 2-bit quants
  uint8_t d[2];        // f16 scale of the scales
  uint8_t dmin[2];     // f16 scale of the mins
};
struct BlockQ3_K {
  uint8_t hmask[32];   // high bit of each quant; bit clear means subtract 4
  uint8_t qs[64];      // low 2 bits
  uint8_t scales[12];  // 16 six-bit scales, see unpack_q3_k_scales
  uint8_t d[2];
};
struct BlockQ4_K {
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];  // 8 six-bit scales and 8 six-bit mins, see unpack_k_scale_min
  uint8_t qs[128];
};
struct BlockQ5_K {
  uint8_t d[2];
  uint8_t dmin[2];
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
struct BlockQ6_K {
  uint8_t ql[128];  // low 4 bits
  uint8_t qh[64];   // high 2 bits
  int8_t scales[16];
  uint8_t d[2];
};
struct BlockQ8_K {
  uint8_t d[4];  // f32 (not f16: Q8_K is ggml's intermediate for K-type dot products)
  int8_t qs[256];
  uint8_t bsums[32];  // 16 i16 sums of groups of 16 quants
};
struct BlockIQ4_NL {
  uint8_t d[2];
  uint8_t qs[16];  // 4-bit indices into kIq4nlValues: element j low nibble, j + 16 high nibble
};
static_assert(sizeof(BlockIQ4_NL) == 18);
struct BlockIQ4_XS {
  uint8_t d[2];
  uint8_t scales_h[2];  // 16-bit word: bits 2s..2s+1 are the top bits of sub-block s's scale
  uint8_t scales_l[4];  // sub-block s's low 4 bits: nibble s % 2 of byte s / 2
  uint8_t qs[128];      // 16 bytes per 32 values, as IQ4_NL
};
static_assert(sizeof(BlockIQ4_XS) == 136);

/// IQ4_NL's 16 levels (ggml's kvalues_iq4nl): a non-linear grid, denser near zero.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 &&
              sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144 &&
              sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

/// Little-endian field loads that are safe at any address.
inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
/// An f16 field, widened exactly.
inline float load_f16(const uint8_t* p) {
  return f16_to_f32(load_u16(p));
}

/// Elements per block: 32 for Q4_0..Q8_1 and IQ4_NL/MXFP4, 256 for the K and most IQ types,
/// 1 for the plain types; 0 for an unknown type.
int64_t ggml_block_size(GgmlType t);
/// Bytes per block (ggml's type size); 0 for an unknown type.
size_t ggml_block_bytes(GgmlType t);
/// True when dequantize_row handles `t`.
bool ggml_type_supported(GgmlType t);
/// Bytes of `n` elements of `t`; `n` must be a multiple of the block size.
uint64_t ggml_row_bytes(GgmlType t, int64_t n);

/// Q3_K: the 16 six-bit scales, unbiased (stored value - 32).
void unpack_q3_k_scales(const uint8_t packed[12], int8_t out[16]);
/// Q4_K and Q5_K: the scale and min of each of the 8 sub-blocks of 32 elements.
void unpack_k_scale_min(const uint8_t packed[12], uint8_t scale[8], uint8_t min[8]);

/// One block into ggml_block_size(t) floats. Throws anvil::Error for unsupported types.
void dequantize_block(GgmlType t, const void* src, float* dst);
/// `n` elements (a multiple of the block size) starting at a block boundary. Throws
/// anvil::Error "dequantize: IQ2_XXS is not supported" and for a bad `n`.
void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n);

/// Quantizes `n` floats (whole blocks) into Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1 blocks at `dst`,
/// exactly as ggml's reference quantize_row_*_ref (llama.cpp's `llama-quantize` without an
/// imatrix), or into Q4_K, Q5_K or Q6_K blocks by a min/max fit per sub-block (ggml_quantize.cc);
/// F32, F16 and BF16 are a conversion (round to nearest even). Throws anvil::Error for other
/// types and for a partial block.
void quantize_row(GgmlType t, const float* src, void* dst, int64_t n);

// Per-type block decoders (32 or 256 floats), for kernels that dispatch once per row.
void dequantize_block_q4_0(const BlockQ4_0& b, float* y);
void dequantize_block_q4_1(const BlockQ4_1& b, float* y);
void dequantize_block_q5_0(const BlockQ5_0& b, float* y);
void dequantize_block_q5_1(const BlockQ5_1& b, float* y);
void dequantize_block_q8_0(const BlockQ8_0& b, float* y);
void dequantize_block_q2_k(const BlockQ2_K& b, float* y);
void dequantize_block_q3_k(const BlockQ3_K& b, float* y);
void dequantize_block_q4_k(const BlockQ4_K& b, float* y);
void dequantize_block_q5_k(const BlockQ5_K& b, float* y);
void dequantize_block_q6_k(const BlockQ6_K& b, float* y);
void dequantize_block_q8_k(const BlockQ8_K& b, float* y);
void dequantize_block_iq4_nl(const BlockIQ4_NL& b, float* y);
void dequantize_block_iq4_xs(const BlockIQ4_XS& b, float* y);

}  // namespace anvil
