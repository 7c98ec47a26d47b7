// CPU rotary embedding, half-split layout; angles in float32 as transformers computes them.
#include <cmath>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_threads.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

void rope_kernel(const ops::RopeArgs& a) {
  const int64_t n = a.x.size(0), heads = a.x.size(1), d = a.x.size(2), half = d / 2;
  float* x = a.x.data<float>();
  const int32_t* pos = a.positions.data<int32_t>();
  const float* inv = a.inv_freq.data<float>();
  cpu::parallel_for(n, 1, [&](int64_t t0, int64_t t1) {
    // cos/sin of one token's angles; grown once per thread, not allocated per call.
    thread_local std::vector<float> c, s;
    if (static_cast<int64_t>(c.size()) < half) {
      c.resize(static_cast<size_t>(half));
      s.resize(static_cast<size_t>(half));
    }
    for (int64_t t = t0; t < t1; ++t) {
      for (int64_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(pos[t]) * inv[i];
        c[i] = std::cos(angle) * a.scaling;
        s[i] = std::sin(angle) * a.scaling;
      }
      for (int64_t h = 0; h < heads; ++h) {
        float* v = x + (t * heads + h) * d;
        for (int64_t i = 0; i < half; ++i) {
          const float x1 = v[i], x2 = v[i + half];
          v[i] = x1 * c[i] - x2 * s[i];
          v[i + half] = x2 * c[i] + x1 * s[i];
        }
      }
    }
  });
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_rope() {
  register_kernel<ops::RopeArgs>(ops::kRope, DeviceType::cpu, DType::f32, DType::f32,
                                 &cpu::rope_kernel);
}

}  // namespace anvil
