// bf16 weights times bf16-rounded activations with AVX512_BF16's pair dot product (vdpbf16ps:
// two bf16 products, exact in float32, added into a float32 lane). Half the instructions of
// widening the weights and using float32 FMA, and twice the multiply-adds per cycle for prefill;
// the price is the activations' rounding to bf16, which llama.cpp's and transformers' bf16 paths
// pay too. Only called when cpu::isa() is Isa::avx512bf16. Kept free of other headers, like
// kernels_avx512.h, so nothing inline is compiled here with wider instructions than the caller's.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// Rounds n rows of k float32 values (row stride k) to bf16, round to nearest even.
void round_rows_bf16_avx512(const float* x, int64_t n, int64_t k, uint16_t* out);

/// out[j * ldo + r] = sum_c w[r * k + c] * xb[j * k + c] (+ bias[r]) for `rows` weight rows and
/// nx activation rows, the products of bf16 values summed in float32.
void gemm_bf16dot_avx512(const uint16_t* w, int64_t rows, const uint16_t* xb, int64_t nx, int64_t k,
                         const float* bias, float* out, int64_t ldo);

}  // namespace anvil::cpu
