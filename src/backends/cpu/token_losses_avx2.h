// Per-token losses' row reductions on AVX2 + FMA CPUs (token_losses_cpu.cc): a row's
// log-sum-exp (perplexity's loss) and the KL divergence of two rows' softmaxes.
// Compiled with -mavx2 -mfma and called only after runtime detection; free of other headers.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// log(sum_i e^(x[i])) over n > 0 floats: the largest taken out first, e^(x - max) by the
/// AVX-512 kernels' polynomial (~2e-7 relative to expf), summed in double.
double logsumexp_avx2(const float* x, int64_t n);

/// sum_i e^(p[i] - lse_p) ((p[i] - lse_p) - (q[i] - lse_q)) over n floats: KL(P || Q) of the
/// softmaxes of p and q, given their log-sum-exps; e^x as logsumexp_avx2's, summed in double.
double kl_sum_avx2(const float* p, const float* q, double lse_p, double lse_q, int64_t n);

}  // namespace anvil::cpu
