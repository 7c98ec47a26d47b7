// Dot products of float32 activations with rows of GGUF blocks, decoded in registers: the
// matrix-vector path of quantized models. One function per (block type, ISA); nullptr where a
// type has no fused kernel at that level (the caller then dequantizes rows first).
#pragma once

#include <cstddef>
#include <cstdint>

#include "anvil/dtype.h"

namespace anvil::cpu {

/// out[r] = dot(x, row r) for `rows` consecutive rows of `k` values (k a multiple of 32).
/// `xsum` holds the sum of x over each 32-value block (used by types with a minimum, Q4_1).
using QuantDotRows = void (*)(const uint8_t* rows, size_t row_bytes, int64_t n_rows, const float* x,
                              const float* xsum, int64_t k, float* out);

QuantDotRows quant_dot_rows(DType weights);

// AVX2 + FMA + F16C implementations (quant_dot_avx2.cc, compiled for that ISA only).
void dot_rows_q8_0_avx2(const uint8_t*, size_t, int64_t, const float*, const float*, int64_t,
                        float*);
void dot_rows_q4_0_avx2(const uint8_t*, size_t, int64_t, const float*, const float*, int64_t,
                        float*);
void dot_rows_q4_1_avx2(const uint8_t*, size_t, int64_t, const float*, const float*, int64_t,
                        float*);

}  // namespace anvil::cpu
