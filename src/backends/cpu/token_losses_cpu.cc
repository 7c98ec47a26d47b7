// ops::token_nll and ops::token_kl on the CPU: each row's log-sum-exp less its target's logit,
// and two rows' KL divergence, rows spread over the threads (a perplexity window scores hundreds
// of rows of a 50-150k vocabulary; one thread computing exp in double took 0.26 ms a 49k row on
// this session's Xeon, ~17% of a window's time).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "anvil/error.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/token_losses_avx2.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

// The baseline's: exp in double (no vector unit assumed).
double logsumexp_scalar(const float* x, int64_t n) {
  double max = -INFINITY;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return NAN;  // as torch's: a NaN anywhere makes the row's NaN
    max = std::max(max, static_cast<double>(x[i]));
  }
  if (std::isinf(max)) return max;
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  return max + std::log(sum);
}

void token_nll_kernel(const ops::TokenNllArgs& a) {
  const int64_t rows = a.logits.size(0), vocab = a.logits.size(1);
  const float* logits = a.logits.data<float>();
  const int64_t* targets = a.targets.data<int64_t>();
  for (int64_t r = 0; r < rows; ++r) {
    if (targets[r] >= vocab) {
      throw Error("token_nll: target " + std::to_string(targets[r]) + " of row " +
                  std::to_string(r) + " is outside the " + std::to_string(vocab) +
                  "-token vocabulary");
    }
  }
  const auto lse = isa() >= Isa::avx2 ? &logsumexp_avx2 : &logsumexp_scalar;
  float* out = a.out.data<float>();
  cpu::parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* row = logits + r * vocab;
      out[r] = targets[r] < 0
                   ? 0.0f
                   : static_cast<float>(lse(row, vocab) - static_cast<double>(row[targets[r]]));
    }
  });
}

double kl_sum_scalar(const float* p, const float* q, double lse_p, double lse_q, int64_t n) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double lp = static_cast<double>(p[i]) - lse_p;
    const double prob = std::exp(lp);
    if (prob > 0.0) sum += prob * (lp - (static_cast<double>(q[i]) - lse_q));
  }
  return sum;
}

// The first index of the row's largest value (torch.argmax without NaN).
int64_t first_argmax(const float* x, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = i;
  }
  return best;
}

void token_kl_kernel(const ops::TokenKlArgs& a) {
  const int64_t rows = a.logits.size(0), vocab = a.logits.size(1);
  const bool avx2 = isa() >= Isa::avx2;
  const auto lse = avx2 ? &logsumexp_avx2 : &logsumexp_scalar;
  const auto kl_sum = avx2 ? &kl_sum_avx2 : &kl_sum_scalar;
  const float* ref = a.reference.data<float>();
  const float* logits = a.logits.data<float>();
  float* kl = a.kl.data<float>();
  int64_t* same = a.same_top.data<int64_t>();
  cpu::parallel_for(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* p = ref + r * vocab;
      const float* q = logits + r * vocab;
      const double lse_p = lse(p, vocab), lse_q = lse(q, vocab);
      kl[r] = std::isnan(lse_p) || std::isnan(lse_q)
                  ? NAN
                  : static_cast<float>(kl_sum(p, q, lse_p, lse_q, vocab));
      same[r] = first_argmax(p, vocab) == first_argmax(q, vocab) ? 1 : 0;
    }
  });
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_token_losses() {
  register_kernel<ops::TokenNllArgs>(ops::kTokenNll, DeviceType::cpu, DType::f32, DType::f32,
                                     &cpu::token_nll_kernel);
  register_kernel<ops::TokenKlArgs>(ops::kTokenKl, DeviceType::cpu, DType::f32, DType::f32,
                                    &cpu::token_kl_kernel);
}

}  // namespace anvil
