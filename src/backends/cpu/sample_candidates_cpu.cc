// Sampling's warpers and draw over each row's candidates on the CPU: the definition the device
// kernels are tested against, which is the host's own sample_from_candidates.
#include <span>

#include "backends/cpu/cpu_backend.h"
#include "core/kernels.h"
#include "generate/logits_processor.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

void sample_candidates_kernel(const ops::SampleCandidatesArgs& a) {
  const int64_t rows = a.values.size(0), n = a.values.size(1);
  SamplingParams p;
  p.do_sample = true;
  p.temperature = a.temperature;
  p.top_k = a.top_k;
  p.top_p = a.top_p;
  p.min_p = a.min_p;
  for (int64_t r = 0; r < rows; ++r) {
    const auto at = static_cast<size_t>(r * n);
    const std::optional<int64_t> token = sample_from_candidates(
        std::span<const float>(a.values.data<float>() + at, static_cast<size_t>(n)),
        std::span<const int64_t>(a.indices.data<int64_t>() + at, static_cast<size_t>(n)), p,
        a.uniforms.data<double>()[r]);
    if (a.decided.defined()) {
      a.decided.data<int64_t>()[r] = token ? 1 : 0;
      a.out.data<int64_t>()[r] = token.value_or(a.indices.data<int64_t>()[at]);
    } else {
      a.out.data<int64_t>()[r] = token.value_or(-1);
    }
  }
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_sample_candidates() {
  register_kernel<ops::SampleCandidatesArgs>(ops::kSampleCandidates, DeviceType::cpu, DType::f32,
                                             DType::f32, &cpu::sample_candidates_kernel);
}

}  // namespace anvil
