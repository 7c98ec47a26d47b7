// The int8-activation kernels of kernels_avx512.h for CPUs with AVX2 but no AVX-512 (most
// desktop and laptop CPUs: Intel's since Alder Lake, AMD's before Zen 4): the same code
// (quant_int8_kernels.inc) with vpmaddubsw + vpmaddwd for the dot products. Every block type;
// Q8_0's weights are multiplied as signed bytes (|q| against sign(x, q)), since its q + 128
// would overflow vpmaddubsw's int16 pair sums. Reached only when cpu::isa() is Isa::avx2 or
// above.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels_avx512.h"  // Q8Rows, QuantKind: declarations only

namespace anvil::cpu {

/// As quantize_rows_q8_avx512, bit for bit.
void quantize_rows_q8_avx2(const float* x, int64_t n, const Q8Rows& out);

/// As gemm_quant_avx512.
void gemm_quant_avx2(QuantKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                     const Q8Rows& x, int64_t nx, const float* bias, float* out, int64_t ldo);

/// As gemm_packed_avx512 (every repacked kind).
void gemm_packed_avx2(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                      int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                      float* out, int64_t ldo);

/// Decode (nx activation rows) over the repacked groups of `lanes`: out[j * ldo + r] for the
/// rows r of those groups, the lanes read side by side where the kernels stream.
void packed_lanes_avx2(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                       const Lanes& lanes, const Q8Rows& x, int64_t nx, const float* bias,
                       float* out, int64_t ldo);

}  // namespace anvil::cpu
