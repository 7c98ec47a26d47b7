// Float32 rows rounded to IEEE half with the F16C instructions (every AVX2 CPU has them).
// Compiled with -mf16c and called only after runtime detection; free of other headers.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// dst[i] = src[i] rounded to half, nearest even (as f32_to_f16 rounds finite values, subnormal
/// halves included), for i < n.
void f32_to_f16_row_f16c(const float* src, int64_t n, uint16_t* dst);

}  // namespace anvil::cpu
