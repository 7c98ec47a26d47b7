// Element type names, sizes and scalar conversions shared by file readers and backends.
#include "anvil/dtype.h"

#include <cmath>

#include "anvil/error.h"
#include "core/quant_types.h"

namespace anvil {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f64:
    case DType::i64:
      return 8;
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::bf16:
    case DType::f16:
    case DType::i16:
      return 2;
    case DType::i8:
    case DType::u8:
    case DType::boolean:
    case DType::f8_e4m3:
    case DType::f8_e5m2:
      return 1;
    default:
      return 0;  // block-quantized
  }
}

bool is_quantized(DType t) {
  return t >= DType::q8_0;
}

int64_t dtype_block_elems(DType t) {
  if (!is_quantized(t)) return 1;
  return quant_block_elems(t);
}

size_t dtype_nbytes(DType t, int64_t n) {
  if (!is_quantized(t)) return static_cast<size_t>(n) * dtype_size(t);
  return static_cast<size_t>(n / quant_block_elems(t)) * quant_block_bytes(t);
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::f64:
      return "f64";
    case DType::i64:
      return "i64";
    case DType::i32:
      return "i32";
    case DType::i16:
      return "i16";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
    case DType::boolean:
      return "bool";
    case DType::f8_e4m3:
      return "f8_e4m3";
    case DType::f8_e5m2:
      return "f8_e5m2";
    default:
      return quant_name(t);
  }
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(DType::iq4_xs); ++i) {
    const auto t = static_cast<DType>(i);
    if (dtype_name(t) == name) return t;
  }
  return std::nullopt;
}

std::optional<DType> parse_compute_dtype(std::string_view s) {
  if (s == "f32" || s == "float32" || s == "float") return DType::f32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "f16" || s == "float16" || s == "half") return DType::f16;
  return std::nullopt;
}

bool is_floating(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16 || t == DType::f64 ||
         t == DType::f8_e4m3 || t == DType::f8_e5m2;
}

uint16_t f32_to_f16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);   // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {                                               // subnormal or zero
    // Scale into the subnormal range and let the FPU round to nearest even.
    float a;
    std::memcpy(&a, &abs, sizeof a);
    const float scaled = a * 16777216.0f;  // 2^24: one unit of the last place of a subnormal half
    const auto m = static_cast<uint32_t>(std::nearbyint(scaled));
    return static_cast<uint16_t>(sign | m);
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to nearest even.
  abs += 0xc8000fffu + ((abs >> 13) & 1u);  // (15-127)<<23 plus the rounding bias
  return static_cast<uint16_t>(sign | (abs >> 13));
}

float f8_e4m3_to_f32(uint8_t b) {
  const bool neg = b & 0x80u;
  const int exp = (b >> 3) & 0xf;
  const int mant = b & 0x7;
  float v;
  if (exp == 0xf && mant == 0x7) {
    v = NAN;
  } else if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -9);
  } else {
    v = std::ldexp(static_cast<float>(8 + mant), exp - 10);
  }
  return neg ? -v : v;
}

float f8_e5m2_to_f32(uint8_t b) {
  // e5m2 is the top byte of an IEEE half.
  return f16_to_f32(static_cast<uint16_t>(b << 8));
}

void convert_to_f32(const void* src, DType src_type, float* dst, size_t n) {
  if (is_quantized(src_type)) {
    dequantize(src_type, src, dst, static_cast<int64_t>(n));
    return;
  }
  switch (src_type) {
    case DType::f32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::bf16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
      return;
    }
    case DType::f16: {
      const auto* s = static_cast<const uint16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(s[i]);
      return;
    }
    case DType::f64: {
      const auto* s = static_cast<const double*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::f8_e4m3: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f8_e4m3_to_f32(s[i]);
      return;
    }
    case DType::f8_e5m2: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = f8_e5m2_to_f32(s[i]);
      return;
    }
    case DType::i64: {
      const auto* s = static_cast<const int64_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::i32: {
      const auto* s = static_cast<const int32_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
      return;
    }
    case DType::i16: {
      const auto* s = static_cast<const int16_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = s[i];
      return;
    }
    case DType::i8: {
      const auto* s = static_cast<const int8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = s[i];
      return;
    }
    case DType::u8:
    case DType::boolean: {
      const auto* s = static_cast<const uint8_t*>(src);
      for (size_t i = 0; i < n; ++i) dst[i] = s[i];
      return;
    }
    default:
      return;  // quantized: handled above
  }
}

void convert_from_f32(const float* src, void* dst, DType dst_type, size_t n) {
  switch (dst_type) {
    case DType::f32:
      std::memcpy(dst, src, n * 4);
      return;
    case DType::bf16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
      return;
    }
    case DType::f16: {
      auto* d = static_cast<uint16_t*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = f32_to_f16(src[i]);
      return;
    }
    default:
      throw Error("cannot convert float32 to " + std::string(dtype_name(dst_type)));
  }
}

}  // namespace anvil
