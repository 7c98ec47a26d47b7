/// @file dtype.h
/// Element types anvil stores, with their sizes, names and the scalar conversions that every
/// backend and file reader shares (bf16/f16/f8 are stored as raw bits).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace anvil {

/// Storage types. f32/bf16/f16 are compute types; the rest exist so every dtype that
/// transformers writes into a safetensors file can be read and converted.
enum class DType : uint8_t {
  f32,
  bf16,
  f16,
  f64,
  i64,
  i32,
  i16,
  i8,
  u8,
  boolean,
  f8_e4m3,
  f8_e5m2,
  // ggml's block-quantized types (GGUF): a block of 32 or 256 values shares its scales.
  q8_0,
  q4_0,
  q4_1,
  q5_0,
  q5_1,
  q2_k,
  q3_k,
  q4_k,
  q5_k,
  q6_k,
  iq4_nl,  // 32 values: an f16 scale and 4-bit indices into a fixed non-linear table
  iq4_xs,  // 256 values: IQ4_NL's indices with a six-bit scale per 32
  // The last value: dtype_from_name walks the values up to iq4_xs (dtype.cc).
};

/// Bytes per element; 0 for block-quantized types (use dtype_nbytes).
size_t dtype_size(DType t);
/// True for the ggml block-quantized types.
bool is_quantized(DType t);
/// Values per block: 1 for element types, 32 or 256 for quantized ones.
int64_t dtype_block_elems(DType t);
/// Bytes of `n` values (n a multiple of the block size for quantized types).
size_t dtype_nbytes(DType t, int64_t n);
/// Short name used in messages and on the command line ("f32", "bf16", ...).
std::string_view dtype_name(DType t);
/// The type whose dtype_name is `name` ("q4_k", "bf16", ...), or none.
std::optional<DType> dtype_from_name(std::string_view name);
/// Parses "f32"/"float32", "bf16"/"bfloat16", "f16"/"float16" (the dtypes a model can run in).
std::optional<DType> parse_compute_dtype(std::string_view s);
/// True for the floating-point types a kernel may read as weights.
bool is_floating(DType t);

/// bfloat16 bits -> float (exact).
inline float bf16_to_f32(uint16_t bits) {
  uint32_t u = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// float -> bfloat16 bits, rounding to nearest even as torch does; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// IEEE half bits -> float (exact, subnormals included). Inline bit operations: the portable
/// kernels call it per element (through ldexp it was a quarter of a step's time on the CPU
/// without F16C paths).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    // Zero or subnormal: mant x 2^-24, exact in float.
    float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
    std::memcpy(&bits, &v, sizeof bits);
    bits |= sign;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);  // infinity, or NaN with its payload kept
  } else {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  }
  float out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}
/// float -> IEEE half bits, round to nearest even.
uint16_t f32_to_f16(float f);
/// `v` as a tensor of `dtype` holds it: rounded to bf16 / f16 (nearest even), else unchanged.
inline float round_to_dtype(float v, DType dtype) {
  if (dtype == DType::bf16) return bf16_to_f32(f32_to_bf16(v));
  if (dtype == DType::f16) return f16_to_f32(f32_to_f16(v));
  return v;
}
/// float8 e4m3fn (no infinities, 0x7f/0xff are NaN) -> float.
float f8_e4m3_to_f32(uint8_t bits);
/// float8 e5m2 -> float.
float f8_e5m2_to_f32(uint8_t bits);

/// Converts `n` elements of `src_type` at `src` into float32 at `dst` (quantized types are
/// dequantized exactly as ggml does; n must be a multiple of their block size).
void convert_to_f32(const void* src, DType src_type, float* dst, size_t n);
/// Converts `n` float32 values into `dst_type` (f32, bf16, f16) at `dst`.
void convert_from_f32(const float* src, void* dst, DType dst_type, size_t n);

}  // namespace anvil
