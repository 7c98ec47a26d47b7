// bf16 weights times bf16-rounded activations with AVX512_BF16's pair dot product (vdpbf16ps:
// two bf16 products, exact in float32, added into a float32 lane). Half the instructions of
// widening the weights and using float32 FMA, and twice the multiply-adds per cycle for prefill;
// the price is the activations' rounding to bf16, which llama.cpp's and transformers' bf16 paths
// pay too. Only called when cpu::isa() is Isa::avx512bf16. Kept free of other headers, like
// kernels_avx512.h, so nothing inline is compiled here with wider instructions than the caller's.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// Multiply-adds per second of the pair dot product (vdpbf16ps) over those of float32 FMA on the
/// calling core, from a few alternated chains of each (~0.3 ms). About 2 where the pair products
/// issue as fast as FMA (Zen 4); 0.5 on a Sapphire Rapids-class Xeon guest, whose vdpbf16ps
/// issues once every two cycles against FMA's two a cycle: there widening bf16 weights to
/// float32 multiplies twice as fast (cpu_isa.h: bf16_pair_products).
double bf16_pair_speedup();

/// Rounds n rows of k float32 values (row stride k) to bf16, round to nearest even.
void round_rows_bf16_avx512(const float* x, int64_t n, int64_t k, uint16_t* out);

/// out[j * ldo + r] = sum_c w[r * k + c] * xb[j * k + c] (+ bias[r]) for `rows` weight rows and
/// nx activation rows, the products of bf16 values summed in float32.
void gemm_bf16dot_avx512(const uint16_t* w, int64_t rows, const uint16_t* xb, int64_t nx, int64_t k,
                         const float* bias, float* out, int64_t ldo);

/// Activation rows per tile of gemm_bf16dot_tiles_avx512, and weight rows per packed panel
/// (callers that split the rows among threads split them in whole panels).
constexpr int kBf16TileRows = 6;
constexpr int kBf16PanelRows = 64;

/// The 32-bit words pack_bf16_tiles writes for nx rows of k values.
int64_t bf16_tile_words(int64_t nx, int64_t k);

/// Tiles [t0, t1) of nx float32 activation rows (k values each, row stride k) rounded to bf16
/// (to nearest even, as round_rows_bf16_avx512) for gemm_bf16dot_tiles_avx512: tile t's word
/// p * kBf16TileRows + j holds values 2p and 2p + 1 of row t * kBf16TileRows + j (zeros past
/// nx, and past k in the last pair of an odd k).
void pack_bf16_tiles(const float* x, int64_t nx, int64_t k, int64_t t0, int64_t t1, uint32_t* xt);

/// gemm_bf16dot_avx512 for prefill: the weights packed 32 rows at a time into pairs of 16 rows
/// (a vector each), against the activations packed by pack_bf16_tiles; each broadcast pair of
/// an activation row feeds two pair dot products. The same products, summed in another order.
void gemm_bf16dot_tiles_avx512(const uint16_t* w, int64_t rows, const uint32_t* xt, int64_t nx,
                               int64_t k, const float* bias, float* out, int64_t ldo);

}  // namespace anvil::cpu
