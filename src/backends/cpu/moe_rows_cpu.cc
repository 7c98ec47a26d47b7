// The CPU's row gather and weighted row scatter for mixture-of-experts layers (activations are
// float32 here, so the products and sums need no rounding).
#include <cstring>
#include <string>

#include "anvil/error.h"
#include "backends/cpu/cpu_backend.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

// Entry i of an op's index, checked against the n rows it addresses.
int64_t row_at(const char* op, const int32_t* index, int64_t i, int64_t n) {
  if (index[i] < 0 || index[i] >= n) {
    throw Error(std::string(op) + ": index " + std::to_string(index[i]) + " is outside the " +
                std::to_string(n) + " rows");
  }
  return index[i];
}

void gather_rows_kernel(const ops::GatherRowsArgs& a) {
  const int64_t m = a.index.size(0), d = a.x.size(1), n = a.x.size(0);
  const int32_t* index = a.index.data<int32_t>();
  const float* x = a.x.data<float>();
  float* out = a.out.data<float>();
  for (int64_t i = 0; i < m; ++i) {
    const int64_t r = row_at(ops::kGatherRows, index, i, n);
    std::memcpy(out + i * d, x + r * d, static_cast<size_t>(d) * sizeof(float));
  }
}

void scatter_add_rows_kernel(const ops::ScatterAddRowsArgs& a) {
  const int64_t m = a.y.size(0), d = a.y.size(1), n = a.out.size(0);
  const int32_t* index = a.index.data<int32_t>();
  const float* w = a.weight.data<float>();
  const float* y = a.y.data<float>();
  float* out = a.out.data<float>();
  for (int64_t i = 0; i < m; ++i) {
    float* row = out + row_at(ops::kScatterAddRows, index, i, n) * d;
    for (int64_t j = 0; j < d; ++j) row[j] += y[i * d + j] * w[i];
  }
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_moe_rows() {
  register_kernel<ops::GatherRowsArgs>(ops::kGatherRows, DeviceType::cpu, DType::f32, DType::f32,
                                       &cpu::gather_rows_kernel);
  register_kernel<ops::ScatterAddRowsArgs>(ops::kScatterAddRows, DeviceType::cpu, DType::f32,
                                           DType::f32, &cpu::scatter_add_rows_kernel);
}

}  // namespace anvil
