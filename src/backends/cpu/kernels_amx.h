// Prefill products on AMX tiles (kernels_amx.cc, compiled with -mamx-tile/int8/bf16 and reached
// only when cpu::isa() is Isa::amx, after the OS granted the tile state: cpu_isa.cc). A tile
// multiply is 16 x 16 x 32 (int8: 16 x 16 x 64 bytes' worth at 32) multiply-adds in 16 cycles,
// 8-16x what a core does with AVX-512 VNNI or BF16 dot products; decode's one row stays on the
// vector kernels (its time is the weights' stream, not the arithmetic).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels_avx512.h"

namespace anvil::cpu {

/// Activation rows at or above which the AMX kernels pay for their setup (a tile is 16 rows).
constexpr int64_t kAmxMinRows = 16;

/// 32-bit words that pack_pairs_amx writes for nx activation rows of k values.
size_t amx_pairs_words(int64_t nx, int64_t k);

/// Activations rounded to bf16 (xb: nx rows of k, k a multiple of 32) laid out as the B tiles
/// of gemm_bf16_amx: per 16 rows and 32-value chunk, 16 pairs x 16 rows (zeros past nx).
void pack_pairs_amx(const uint16_t* xb, int64_t nx, int64_t k, uint32_t* pairs);

/// bf16 weights as stored (rows of k, k a multiple of 32) times the packed activations:
/// out[j * ldo + r] = dot(w row r, activation row j) (+ bias[r]), float32 accumulation, for
/// weight rows [0, rows).
void gemm_bf16_amx(const uint16_t* w, int64_t rows, const uint32_t* pairs, int64_t nx, int64_t k,
                   const float* bias, float* out, int64_t ldo);

/// True for the repacked block types the int8 tile kernel takes (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
/// Q4_K, Q5_K, Q6_K).
bool amx_takes(QuantKind kind);

/// gemm_packed_avx512's contract (repacked weights, 8-row groups [g0, g1)) on int8 tiles: per
/// 32-value block, two groups' quants as one 16-column tile, the activation rows' int8 as the
/// other operand, then each block's scales applied in float32.
void gemm_packed_amx(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                     int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                     float* out, int64_t ldo);

}  // namespace anvil::cpu
