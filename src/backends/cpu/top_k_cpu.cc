// The K largest entries of each row on the CPU (a partial sort per row), largest first, equal
// values in index order, NaN above every number: the definition the device kernels are tested
// against. (Generation on the CPU samples from the logits in place and does not need it.)
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

void top_k_kernel(const ops::TopKArgs& a) {
  const int64_t rows = a.x.size(0), cols = a.x.size(1), k = a.values.size(1);
  std::vector<int64_t> order(static_cast<size_t>(cols));
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = a.x.data<float>() + r * cols;
    const auto before = [x](int64_t i, int64_t j) {
      const bool ni = std::isnan(x[i]), nj = std::isnan(x[j]);
      if (ni || nj) return ni && (!nj || i < j);
      return x[i] > x[j] || (x[i] == x[j] && i < j);
    };
    std::iota(order.begin(), order.end(), int64_t{0});
    std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
    for (int64_t j = 0; j < k; ++j) {
      a.values.data<float>()[r * k + j] = x[order[static_cast<size_t>(j)]];
      a.indices.data<int64_t>()[r * k + j] = order[static_cast<size_t>(j)];
    }
  }
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_top_k() {
  register_kernel<ops::TopKArgs>(ops::kTopK, DeviceType::cpu, DType::f32, DType::f32,
                                 &cpu::top_k_kernel);
}

}  // namespace anvil
