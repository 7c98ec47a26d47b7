// The int8-activation kernels of kernels_avx2_int8.h for CPUs with AVX-VNNI but no AVX-512
// (Intel's client cores since Alder Lake): the same code (quant_int8_kernels.inc) with the
// 256-bit vpdpbusd, one instruction where AVX2 takes vpmaddubsw, vpmaddwd and an add, and
// Q8_0 as q + 128 as on AVX-512. Reached only when cpu::isa() is Isa::avxvnni.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels_avx512.h"  // Q8Rows, QuantKind: declarations only

namespace anvil::cpu {

/// As gemm_quant_avx512 (activations from quantize_rows_q8_avx2).
void gemm_quant_avxvnni(QuantKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                        const Q8Rows& x, int64_t nx, const float* bias, float* out, int64_t ldo);

/// As gemm_packed_avx512 (every repacked kind).
void gemm_packed_avxvnni(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                         int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                         float* out, int64_t ldo);

/// Decode (nx activation rows) over the repacked groups of `lanes`: out[j * ldo + r] for the
/// rows r of those groups, the lanes read side by side where the kernels stream.
void packed_lanes_avxvnni(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                          const Lanes& lanes, const Q8Rows& x, int64_t nx, const float* bias,
                          float* out, int64_t ldo);

}  // namespace anvil::cpu
