// Prefill products on AMX tiles (kernels_amx.cc, compiled with -mamx-tile/int8/bf16 and reached
// only when cpu::isa() is Isa::amx, after the OS granted the tile state: cpu_isa.cc). A bf16
// tile multiply is 16 x 16 x 32 multiply-adds in 16 cycles, 8x what a core does with AVX-512
// BF16 dot products; decode's one row stays on the vector kernels (its time is the weights'
// stream, not the arithmetic). Only the tile multiplies need AMX: the packing functions run on
// any CPU with AVX-512 BF16 (the tests check their layouts there).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/kernels_avx512.h"

namespace anvil::cpu {

/// Activation rows at or above which the AMX kernels pay for their setup (a tile is 16 rows).
constexpr int64_t kAmxMinRows = 16;

/// The weights of an AMX product: bf16 rows of k values as stored, or repack.h's groups of a
/// block type amx_takes.
struct AmxWeights {
  const uint16_t* bf16 = nullptr;
  const uint8_t* packed = nullptr;
  size_t block_bytes = 0;
  QuantKind kind = QuantKind::q8_0;
  int64_t rows = 0, k = 0;
};

/// True for the repacked block types the AMX kernel takes (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
/// Q5_K, Q6_K).
bool amx_takes(QuantKind kind);

/// 16-row blocks of pack_rows_amx's output for nx activation rows (an even count: the kernel
/// takes them two at a time, the last one zeros where nx leaves it empty).
int64_t amx_row_blocks(int64_t nx);

/// 16-bit words of pack_rows_amx's output for nx rows of k values.
size_t amx_row_tiles_words(int64_t nx, int64_t k);

/// Blocks [b0, b1) of activation rows x (nx rows of k floats) as A tiles: per 16 rows and
/// 32-value chunk, 16 rows of 32 values rounded to bf16 (to nearest even), block-major, zeros
/// past nx and past k.
void pack_rows_amx(const float* x, int64_t nx, int64_t k, int64_t b0, int64_t b1, uint16_t* tiles);

/// 16-bit words of one 16-row weight panel's B tiles.
size_t amx_panel_words(int64_t k);

/// Weight rows [16 panel, 16 panel + 16) as B tiles: per 32-value chunk, 16 rows of 16 bf16
/// pairs (tile row i, element c: values 2i and 2i + 1 of weight row c), quantized rows
/// dequantized in float32 and rounded to bf16 (to nearest even), zeros past the rows and k.
void weight_tiles_amx(const AmxWeights& w, int64_t panel, uint16_t* tiles);

/// out[j * ldo + r] = dot(weight row r, activation row j) (+ bias[r]) for the weight rows of
/// panels [p0, p1) (p0 even) and every activation row, float32 accumulation, from
/// pack_rows_amx's tiles of all nx rows. Each pair of panels is turned into tiles once.
void gemm_amx(const AmxWeights& w, int64_t p0, int64_t p1, const uint16_t* a_tiles, int64_t nx,
              const float* bias, float* out, int64_t ldo);

}  // namespace anvil::cpu
