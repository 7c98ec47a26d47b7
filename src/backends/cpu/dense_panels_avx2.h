// Prefill products of float32, bfloat16 and IEEE half weights on AVX2 + FMA (+ F16C) CPUs:
// the weights widened to float and packed per call in panels of kAvx2PanelRows rows (a 256-bit
// vector per column of 8 rows), against tiles of 6 activation rows whose values are broadcast,
// each into two FMAs; no horizontal sums. Compiled with -mavx2 -mfma -mf16c and called only
// after runtime detection; free of other headers, like kernels_avx512.h.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// Weight rows per packed panel (callers that split the rows among threads split whole
/// panels), and the activation rows from which the panels pay for their packing.
constexpr int kAvx2PanelRows = 16;
constexpr int64_t kAvx2PanelMinRows = 8;

/// out[j * ldo + r] = sum_c w[r * k + c] * x[j * k + c] (+ bias[r]) for weight rows [0, rows)
/// and activation rows [0, nx) (float32, row stride k); the 16-bit types as their bits.
void gemm_dense_panels_f32_avx2(const float* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                                const float* bias, float* out, int64_t ldo);
void gemm_dense_panels_bf16_avx2(const uint16_t* w, int64_t rows, const float* x, int64_t nx,
                                 int64_t k, const float* bias, float* out, int64_t ldo);
void gemm_dense_panels_f16_avx2(const uint16_t* w, int64_t rows, const float* x, int64_t nx,
                                int64_t k, const float* bias, float* out, int64_t ldo);

}  // namespace anvil::cpu
