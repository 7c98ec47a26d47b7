// A row's log-sum-exp on AVX2 + FMA CPUs (perplexity's per-token loss, token_nll_cpu.cc).
// Compiled with -mavx2 -mfma and called only after runtime detection; free of other headers.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// log(sum_i e^(x[i])) over n > 0 floats: the largest taken out first, e^(x - max) by the
/// AVX-512 kernels' polynomial (~2e-7 relative to expf), summed in double.
double logsumexp_avx2(const float* x, int64_t n);

}  // namespace anvil::cpu
