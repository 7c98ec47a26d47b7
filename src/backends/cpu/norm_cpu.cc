// CPU RMSNorm over rows, float32 math as transformers' LlamaRMSNorm does it.
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/row_kernels.h"
#include "backends/cpu/weight_load.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

template <class W>
void rms_norm_kernel(const ops::RmsNormArgs& a) {
  const int64_t n = a.x.size(0), d = a.x.size(1);
  const float* x = a.x.data<float>();
  const W* w = a.weight.data<W>();
  float* out = a.out.data<float>();
  cpu::parallel_for(n, std::max<int64_t>(1, 4096 / d), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) rms_norm_row(x + r * d, w, d, a.eps, out + r * d);
  });
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_norm() {
  for (DType w : cpu::kCpuWeightTypes) {
    cpu::with_weight_type(w, [&]<class W>() {
      register_kernel<ops::RmsNormArgs>(ops::kRmsNorm, DeviceType::cpu, DType::f32, w,
                                        &cpu::rms_norm_kernel<W>);
    });
  }
}

}  // namespace anvil
