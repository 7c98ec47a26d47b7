// ops::token_nll on the CPU: each row's log-sum-exp less its target's logit, rows spread over
// the threads (a perplexity window scores hundreds of rows of a 50-150k vocabulary; one thread
// computing exp in double took 0.26 ms a 49k row on Zen 4, ~17% of a window's time).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "anvil/error.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/logsumexp_avx2.h"
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

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_token_nll() {
  register_kernel<ops::TokenNllArgs>(ops::kTokenNll, DeviceType::cpu, DType::f32, DType::f32,
                                     &cpu::token_nll_kernel);
}

}  // namespace anvil
