// ggml's type table and the scalar dequantization of its block types. Each decoder evaluates
// the same float operations, in the same order, as ggml's reference dequantize_row_* so the
// results are bit-identical; this file is compiled with -ffp-contract=off (see
// src/formats/gguf_sources.cmake) because a fused multiply-add would round differently.
#include "formats/ggml_quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <string>

#include "anvil/error.h"

namespace anvil {
namespace {

struct TypeTraits {
  GgmlType type;
  std::string_view name;
  int64_t block_size;
  size_t block_bytes;
  bool supported;  // dequantize_row handles it
};

// Sizes are ggml's type_traits (ggml.c); Q8_1 follows current ggml (two f16 fields, 36 bytes).
constexpr TypeTraits kTypes[] = {
    {GgmlType::f32, "F32", 1, 4, true},
    {GgmlType::f16, "F16", 1, 2, true},
    {GgmlType::q4_0, "Q4_0", 32, 18, true},
    {GgmlType::q4_1, "Q4_1", 32, 20, true},
    {GgmlType::q5_0, "Q5_0", 32, 22, true},
    {GgmlType::q5_1, "Q5_1", 32, 24, true},
    {GgmlType::q8_0, "Q8_0", 32, 34, true},
    {GgmlType::q8_1, "Q8_1", 32, 36, false},
    {GgmlType::q2_k, "Q2_K", 256, 84, true},
    {GgmlType::q3_k, "Q3_K", 256, 110, true},
    {GgmlType::q4_k, "Q4_K", 256, 144, true},
    {GgmlType::q5_k, "Q5_K", 256, 176, true},
    {GgmlType::q6_k, "Q6_K", 256, 210, true},
    {GgmlType::q8_k, "Q8_K", 256, 292, true},
    {GgmlType::iq2_xxs, "IQ2_XXS", 256, 66, false},
    {GgmlType::iq2_xs, "IQ2_XS", 256, 74, false},
    {GgmlType::iq3_xxs, "IQ3_XXS", 256, 98, false},
    {GgmlType::iq1_s, "IQ1_S", 256, 50, false},
    {GgmlType::iq4_nl, "IQ4_NL", 32, 18, true},
    {GgmlType::iq3_s, "IQ3_S", 256, 110, false},
    {GgmlType::iq2_s, "IQ2_S", 256, 82, false},
    {GgmlType::iq4_xs, "IQ4_XS", 256, 136, true},
    {GgmlType::i8, "I8", 1, 1, false},
    {GgmlType::i16, "I16", 1, 2, false},
    {GgmlType::i32, "I32", 1, 4, false},
    {GgmlType::i64, "I64", 1, 8, false},
    {GgmlType::f64, "F64", 1, 8, false},
    {GgmlType::iq1_m, "IQ1_M", 256, 56, false},
    {GgmlType::bf16, "BF16", 1, 2, true},
    {GgmlType::tq1_0, "TQ1_0", 256, 54, false},
    {GgmlType::tq2_0, "TQ2_0", 256, 66, false},
    {GgmlType::mxfp4, "MXFP4", 32, 17, false},
    {GgmlType::nvfp4, "NVFP4", 64, 36, false},
    {GgmlType::q1_0, "Q1_0", 128, 18, false},
};

const TypeTraits* traits(GgmlType t) {
  for (const auto& x : kTypes) {
    if (x.type == t) return &x;
  }
  return nullptr;
}

float load_f32(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

float to_f(int v) {
  return static_cast<float>(v);
}

}  // namespace

std::string_view ggml_type_name(GgmlType t) {
  const TypeTraits* x = traits(t);
  return x ? x->name : "unknown";
}

std::optional<GgmlType> ggml_type_from_id(uint32_t id) {
  const TypeTraits* x = traits(static_cast<GgmlType>(id));
  if (!x) return std::nullopt;
  return x->type;
}

int64_t ggml_block_size(GgmlType t) {
  const TypeTraits* x = traits(t);
  return x ? x->block_size : 0;
}

size_t ggml_block_bytes(GgmlType t) {
  const TypeTraits* x = traits(t);
  return x ? x->block_bytes : 0;
}

bool ggml_type_supported(GgmlType t) {
  const TypeTraits* x = traits(t);
  return x && x->supported;
}

uint64_t ggml_row_bytes(GgmlType t, int64_t n) {
  const TypeTraits* x = traits(t);
  if (!x) throw Error("ggml_row_bytes: unknown type " + std::to_string(static_cast<uint32_t>(t)));
  if (n < 0 || n % x->block_size != 0) {
    throw Error("ggml_row_bytes: " + std::to_string(n) + " elements of " + std::string(x->name) +
                " are not a whole number of " + std::to_string(x->block_size) + "-element blocks");
  }
  return static_cast<uint64_t>(n / x->block_size) * x->block_bytes;
}

void unpack_q3_k_scales(const uint8_t packed[12], int8_t out[16]) {
  // Low 4 bits: bytes 0-7 (low nibbles give scales 0-7, high nibbles 8-15). High 2 bits: bytes
  // 8-11, scale j taking bits 2*(j/4)..+1 of byte 8 + j%4.
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (packed[j] & 0x0F) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    out[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

void unpack_k_scale_min(const uint8_t packed[12], uint8_t scale[8], uint8_t min[8]) {
  // Sub-blocks 0-3 keep 6 bits in bytes 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 keep their
  // low 4 bits in bytes 8-11 and their top 2 bits in the spare top bits of bytes 0-7.
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      scale[j] = static_cast<uint8_t>(packed[j] & 63);
      min[j] = static_cast<uint8_t>(packed[j + 4] & 63);
    } else {
      scale[j] = static_cast<uint8_t>((packed[j + 4] & 0x0F) | ((packed[j - 4] >> 6) << 4));
      min[j] = static_cast<uint8_t>((packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
    }
  }
}

void dequantize_block_q4_0(const BlockQ4_0& b, float* y) {
  const float d = load_f16(b.d);
  for (int j = 0; j < 16; ++j) {
    y[j] = to_f((b.qs[j] & 0x0F) - 8) * d;
    y[j + 16] = to_f((b.qs[j] >> 4) - 8) * d;
  }
}

void dequantize_block_q4_1(const BlockQ4_1& b, float* y) {
  const float d = load_f16(b.d);
  const float m = load_f16(b.m);
  for (int j = 0; j < 16; ++j) {
    y[j] = to_f(b.qs[j] & 0x0F) * d + m;
    y[j + 16] = to_f(b.qs[j] >> 4) * d + m;
  }
}

void dequantize_block_q5_0(const BlockQ5_0& b, float* y) {
  const float d = load_f16(b.d);
  const uint32_t qh = load_u32(b.qh);
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = to_f(((b.qs[j] & 0x0F) | h0) - 16) * d;
    y[j + 16] = to_f(((b.qs[j] >> 4) | h1) - 16) * d;
  }
}

void dequantize_block_q5_1(const BlockQ5_1& b, float* y) {
  const float d = load_f16(b.d);
  const float m = load_f16(b.m);
  const uint32_t qh = load_u32(b.qh);
  for (int j = 0; j < 16; ++j) {
    const int h0 = static_cast<int>((qh >> j) & 1u) << 4;
    const int h1 = static_cast<int>((qh >> (j + 16)) & 1u) << 4;
    y[j] = to_f((b.qs[j] & 0x0F) | h0) * d + m;
    y[j + 16] = to_f((b.qs[j] >> 4) | h1) * d + m;
  }
}

void dequantize_block_q8_0(const BlockQ8_0& b, float* y) {
  const float d = load_f16(b.d);
  for (int j = 0; j < 32; ++j) y[j] = to_f(b.qs[j]) * d;
}

void dequantize_block_q2_k(const BlockQ2_K& b, float* y) {
  const float d = load_f16(b.d);
  const float dmin = load_f16(b.dmin);
  // Two halves of 128 elements; each reads 32 bytes of qs four times, two bits at a time, and
  // each group of 16 elements has its own 4-bit scale and min.
  int is = 0;
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = b.qs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2) {
      for (int part = 0; part < 2; ++part) {
        const uint8_t sc = b.scales[is++];
        const float dl = d * to_f(sc & 0x0F);
        const float ml = dmin * to_f(sc >> 4);
        for (int l = 0; l < 16; ++l) *y++ = dl * to_f((q[16 * part + l] >> shift) & 3) - ml;
      }
    }
  }
}

void dequantize_block_q3_k(const BlockQ3_K& b, float* y) {
  const float d = load_f16(b.d);
  int8_t scales[16];
  unpack_q3_k_scales(b.scales, scales);
  int is = 0;
  int bit = 0;  // hmask bit of the current group of 32 elements
  for (int half = 0; half < 2; ++half) {
    const uint8_t* q = b.qs + 32 * half;
    for (int shift = 0; shift < 8; shift += 2, ++bit) {
      for (int part = 0; part < 2; ++part) {
        const float dl = d * to_f(scales[is++]);
        for (int l = 16 * part; l < 16 * part + 16; ++l) {
          const int low = (q[l] >> shift) & 3;
          const int sub = (b.hmask[l] >> bit) & 1 ? 0 : 4;
          *y++ = dl * to_f(low - sub);
        }
      }
    }
  }
}

void dequantize_block_q4_k(const BlockQ4_K& b, float* y) {
  const float d = load_f16(b.d);
  const float dmin = load_f16(b.dmin);
  uint8_t sc[8], mn[8];
  unpack_k_scale_min(b.scales, sc, mn);
  // Each 32 bytes of qs hold 64 elements: the low nibbles first, then the high nibbles.
  for (int g = 0; g < 4; ++g) {
    const uint8_t* q = b.qs + 32 * g;
    const float d1 = d * to_f(sc[2 * g]), m1 = dmin * to_f(mn[2 * g]);
    const float d2 = d * to_f(sc[2 * g + 1]), m2 = dmin * to_f(mn[2 * g + 1]);
    for (int l = 0; l < 32; ++l) *y++ = d1 * to_f(q[l] & 0x0F) - m1;
    for (int l = 0; l < 32; ++l) *y++ = d2 * to_f(q[l] >> 4) - m2;
  }
}

void dequantize_block_q5_k(const BlockQ5_K& b, float* y) {
  const float d = load_f16(b.d);
  const float dmin = load_f16(b.dmin);
  uint8_t sc[8], mn[8];
  unpack_k_scale_min(b.scales, sc, mn);
  // Like Q4_K; the fifth bit of sub-block s (32 elements) is bit s of qh[l].
  for (int g = 0; g < 4; ++g) {
    const uint8_t* q = b.qs + 32 * g;
    const float d1 = d * to_f(sc[2 * g]), m1 = dmin * to_f(mn[2 * g]);
    const float d2 = d * to_f(sc[2 * g + 1]), m2 = dmin * to_f(mn[2 * g + 1]);
    for (int l = 0; l < 32; ++l) {
      const int h = (b.qh[l] >> (2 * g)) & 1;
      *y++ = d1 * to_f((q[l] & 0x0F) + 16 * h) - m1;
    }
    for (int l = 0; l < 32; ++l) {
      const int h = (b.qh[l] >> (2 * g + 1)) & 1;
      *y++ = d2 * to_f((q[l] >> 4) + 16 * h) - m2;
    }
  }
}

void dequantize_block_q6_k(const BlockQ6_K& b, float* y) {
  const float d = load_f16(b.d);
  // Two halves of 128 elements, each from 64 bytes of ql, 32 of qh and 8 scales (one per 16).
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = b.ql + 64 * half;
    const uint8_t* qh = b.qh + 32 * half;
    const int8_t* sc = b.scales + 8 * half;
    float* out = y + 128 * half;
    for (int l = 0; l < 32; ++l) {
      const int is = l / 16;
      const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
      const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
      const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      out[l] = d * to_f(sc[is]) * to_f(q1);
      out[l + 32] = d * to_f(sc[is + 2]) * to_f(q2);
      out[l + 64] = d * to_f(sc[is + 4]) * to_f(q3);
      out[l + 96] = d * to_f(sc[is + 6]) * to_f(q4);
    }
  }
}

void dequantize_block_iq4_nl(const BlockIQ4_NL& b, float* y) {
  const float d = load_f16(b.d);
  for (int j = 0; j < 16; ++j) {
    y[j] = d * to_f(kIq4nlValues[b.qs[j] & 0x0F]);
    y[j + 16] = d * to_f(kIq4nlValues[b.qs[j] >> 4]);
  }
}

void dequantize_block_iq4_xs(const BlockIQ4_XS& b, float* y) {
  const float d = load_f16(b.d);
  const auto high = static_cast<uint32_t>(b.scales_h[0] | (b.scales_h[1] << 8));
  for (int s = 0; s < 8; ++s) {
    const uint32_t low = (b.scales_l[s / 2] >> (4 * (s % 2))) & 0x0Fu;
    const int scale = static_cast<int>(low | (((high >> (2 * s)) & 3u) << 4)) - 32;
    const float dl = d * to_f(scale);
    const uint8_t* q = b.qs + 16 * s;
    for (int j = 0; j < 16; ++j) {
      y[32 * s + j] = dl * to_f(kIq4nlValues[q[j] & 0x0F]);
      y[32 * s + j + 16] = dl * to_f(kIq4nlValues[q[j] >> 4]);
    }
  }
}

void dequantize_block_q8_k(const BlockQ8_K& b, float* y) {
  const float d = load_f32(b.d);
  for (int j = 0; j < kQK_K; ++j) y[j] = d * to_f(b.qs[j]);
}

namespace {

[[noreturn]] void unsupported(GgmlType t) {
  const TypeTraits* x = traits(t);
  if (!x) {
    throw Error("dequantize: unknown ggml type " + std::to_string(static_cast<uint32_t>(t)));
  }
  throw Error("dequantize: " + std::string(x->name) + " is not supported");
}

// Applies `decode` to each of `nb` blocks of type B.
template <typename B, typename F>
void each_block(const void* src, float* dst, int64_t nb, int64_t block_size, F decode) {
  const auto* p = static_cast<const uint8_t*>(src);
  for (int64_t i = 0; i < nb; ++i) {
    decode(*reinterpret_cast<const B*>(p + static_cast<size_t>(i) * sizeof(B)),
           dst + i * block_size);
  }
}

}  // namespace

void dequantize_row(GgmlType t, const void* src, float* dst, int64_t n) {
  const TypeTraits* x = traits(t);
  if (!x || !x->supported) unsupported(t);
  if (n < 0 || n % x->block_size != 0) {
    throw Error("dequantize: " + std::to_string(n) + " elements of " + std::string(x->name) +
                " are not a whole number of " + std::to_string(x->block_size) + "-element blocks");
  }
  const int64_t nb = n / x->block_size;
  const auto* p = static_cast<const uint8_t*>(src);
  switch (t) {
    case GgmlType::f32:
      if (n > 0) std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return;
    case GgmlType::f16:
      for (int64_t i = 0; i < n; ++i) dst[i] = load_f16(p + 2 * i);
      return;
    case GgmlType::bf16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(load_u16(p + 2 * i));
      return;
    case GgmlType::q4_0:
      return each_block<BlockQ4_0>(src, dst, nb, 32, dequantize_block_q4_0);
    case GgmlType::q4_1:
      return each_block<BlockQ4_1>(src, dst, nb, 32, dequantize_block_q4_1);
    case GgmlType::q5_0:
      return each_block<BlockQ5_0>(src, dst, nb, 32, dequantize_block_q5_0);
    case GgmlType::q5_1:
      return each_block<BlockQ5_1>(src, dst, nb, 32, dequantize_block_q5_1);
    case GgmlType::q8_0:
      return each_block<BlockQ8_0>(src, dst, nb, 32, dequantize_block_q8_0);
    case GgmlType::q2_k:
      return each_block<BlockQ2_K>(src, dst, nb, 256, dequantize_block_q2_k);
    case GgmlType::q3_k:
      return each_block<BlockQ3_K>(src, dst, nb, 256, dequantize_block_q3_k);
    case GgmlType::q4_k:
      return each_block<BlockQ4_K>(src, dst, nb, 256, dequantize_block_q4_k);
    case GgmlType::q5_k:
      return each_block<BlockQ5_K>(src, dst, nb, 256, dequantize_block_q5_k);
    case GgmlType::q6_k:
      return each_block<BlockQ6_K>(src, dst, nb, 256, dequantize_block_q6_k);
    case GgmlType::q8_k:
      return each_block<BlockQ8_K>(src, dst, nb, 256, dequantize_block_q8_k);
    case GgmlType::iq4_nl:
      return each_block<BlockIQ4_NL>(src, dst, nb, 32, dequantize_block_iq4_nl);
    case GgmlType::iq4_xs:
      return each_block<BlockIQ4_XS>(src, dst, nb, 256, dequantize_block_iq4_xs);
    default:
      unsupported(t);
  }
}

void dequantize_block(GgmlType t, const void* src, float* dst) {
  dequantize_row(t, src, dst, ggml_block_size(t) > 0 ? ggml_block_size(t) : 1);
}

}  // namespace anvil
