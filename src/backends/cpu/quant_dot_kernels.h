// The per-ISA quantized dot-product kernels. Kept free of other headers: the files defining them
// are compiled for a specific ISA, and any inline function they instantiate must not leak
// AVX2 code into the rest of the program.
#pragma once

#include <cstddef>
#include <cstdint>

namespace anvil::cpu {

/// out[r] = dot(x, row r) for `n_rows` consecutive rows of `k` values (k a multiple of 32).
/// `xsum` holds the sum of x over each 32-value block (used by types with a minimum, Q4_1).
using QuantDotRows = void (*)(const uint8_t* rows, size_t row_bytes, int64_t n_rows, const float* x,
                              const float* xsum, int64_t k, float* out);

// AVX2 + FMA + F16C (quant_dot_avx2.cc).
void dot_rows_q8_0_avx2(const uint8_t*, size_t, int64_t, const float*, const float*, int64_t,
                        float*);
void dot_rows_q4_0_avx2(const uint8_t*, size_t, int64_t, const float*, const float*, int64_t,
                        float*);
void dot_rows_q4_1_avx2(const uint8_t*, size_t, int64_t, const float*, const float*, int64_t,
                        float*);

}  // namespace anvil::cpu

namespace anvil::cpu {

/// out[r] = dot(x, row r) for `n_rows` rows of `k` float32 / bfloat16 values (row stride k).
void dot_rows_f32_avx2(const float* rows, int64_t n_rows, const float* x, int64_t k, float* out);
void dot_rows_bf16_avx2(const uint16_t* rows, int64_t n_rows, const float* x, int64_t k,
                        float* out);
void dot_rows_f16_avx2(const uint16_t* rows, int64_t n_rows, const float* x, int64_t k, float* out);

}  // namespace anvil::cpu
