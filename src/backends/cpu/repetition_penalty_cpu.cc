// transformers' repetition penalty on a row's listed ids, the definition the device kernels are
// tested against. (Generation on the CPU edits the logits in place on the host and does not
// need it.)
#include "backends/cpu/cpu_backend.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

void repetition_penalty_kernel(const ops::RepetitionPenaltyArgs& a) {
  const int64_t rows = a.logits.size(0), vocab = a.logits.size(1), m = a.ids.size(1);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = a.logits.data<float>() + r * vocab;
    const int64_t* ids = a.ids.data<int64_t>() + r * m;
    for (int64_t j = 0; j < m; ++j) {
      if (ids[j] < 0 || ids[j] >= vocab) continue;
      float& s = row[ids[j]];
      s = s < 0 ? s * a.penalty : s / a.penalty;
    }
  }
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_repetition_penalty() {
  register_kernel<ops::RepetitionPenaltyArgs>(ops::kRepetitionPenalty, DeviceType::cpu, DType::f32,
                                              DType::f32, &cpu::repetition_penalty_kernel);
}

}  // namespace anvil
