// CPU embedding lookup, SwiGLU / GeGLU, residual add and softcapping.
#include <cmath>
#include <cstring>

#include "backends/cpu/activations_avx2.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/gelu_tanh.h"
#include "backends/cpu/kernels_avx512.h"
#include "backends/cpu/swiglu_rows.h"
#include "backends/cpu/weight_load.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

template <class W>
void embedding_kernel(const ops::EmbeddingArgs& a) {
  const int64_t n = a.ids.size(0), h = a.table.size(1);
  const int64_t* ids = a.ids.data<int64_t>();
  const W* table = a.table.data<W>();
  float* out = a.out.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    const W* row = table + ids[i] * h;
    for (int64_t j = 0; j < h; ++j) out[i * h + j] = widen(row[j]) * a.scale;
  }
}

// A quantized table: each looked-up row is dequantized on its own.
void embedding_quant_kernel(const ops::EmbeddingArgs& a) {
  const int64_t n = a.ids.size(0), h = a.table.size(1);
  const int64_t* ids = a.ids.data<int64_t>();
  const size_t row_bytes = dtype_nbytes(a.table.dtype(), h);
  const auto* table = static_cast<const uint8_t*>(a.table.raw());
  float* out = a.out.data<float>();
  for (int64_t i = 0; i < n; ++i) {
    convert_to_f32(table + static_cast<size_t>(ids[i]) * row_bytes, a.table.dtype(), out + i * h,
                   static_cast<size_t>(h));
    if (a.scale != 1.0f) {
      for (int64_t j = 0; j < h; ++j) out[i * h + j] *= a.scale;
    }
  }
}

void swiglu_kernel(const ops::SwigluArgs& a) {
  const float* g = a.gate.data<float>();
  const float* u = a.up.data<float>();
  float* out = a.out.data<float>();
  if (const SwigluRows rows = glu_rows(a.act)) {  // vectorised exp (~2e-7 relative to expf)
    cpu::parallel_for(a.gate.numel(), 32768,
                      [&](int64_t b, int64_t e) { rows(g + b, u + b, out + b, e - b); });
    return;
  }
  cpu::parallel_for(a.gate.numel(), 16384, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  });
}

void softcap_kernel(const ops::SoftcapArgs& a) {
  float* x = a.x.data<float>();
  const float cap = a.cap;
  cpu::parallel_for(a.x.numel(), 16384, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) x[i] = std::tanh(x[i] / cap) * cap;
  });
}

void scale_kernel(const ops::ScaleArgs& a) {
  float* x = a.x.data<float>();
  const float factor = a.factor;
  cpu::parallel_for(a.x.numel(), 16384, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) x[i] *= factor;
  });
}

// Below AVX2: GELU's tanh form one element at a time.
void geglu_portable(const float* gate, const float* up, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = gelu_tanh(gate[i]) * up[i];
}

void add_kernel(const ops::AddArgs& a) {
  const float* x = a.a.data<float>();
  const float* y = a.b.data<float>();
  float* out = a.out.data<float>();
  const int64_t n = a.a.numel();
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] + y[i];
}

}  // namespace

SwigluRows swiglu_rows() {
  if (isa() >= Isa::avx512) return &swiglu_avx512;
  if (isa() >= Isa::avx2) return &swiglu_avx2;
  return nullptr;
}

SwigluRows glu_rows(ops::GluActivation act) {
  if (act == ops::GluActivation::silu) return swiglu_rows();
  if (isa() >= Isa::avx512) return &geglu_avx512;
  if (isa() >= Isa::avx2) return &geglu_avx2;
  return &geglu_portable;
}

}  // namespace anvil::cpu

namespace anvil {

void register_cpu_elementwise() {
  for (DType w : cpu::kCpuWeightTypes) {
    cpu::with_weight_type(w, [&]<class W>() {
      register_kernel<ops::EmbeddingArgs>(ops::kEmbedding, DeviceType::cpu, DType::f32, w,
                                          &cpu::embedding_kernel<W>);
    });
  }
  for (DType w : cpu::kCpuQuantTypes) {
    register_kernel<ops::EmbeddingArgs>(ops::kEmbedding, DeviceType::cpu, DType::f32, w,
                                        &cpu::embedding_quant_kernel);
  }
  register_kernel<ops::SwigluArgs>(ops::kSwiglu, DeviceType::cpu, DType::f32, DType::f32,
                                   &cpu::swiglu_kernel);
  register_kernel<ops::SwigluArgs>(ops::kGluGeluTanh, DeviceType::cpu, DType::f32, DType::f32,
                                   &cpu::swiglu_kernel);
  register_kernel<ops::ScaleArgs>(ops::kScale, DeviceType::cpu, DType::f32, DType::f32,
                                  &cpu::scale_kernel);
  register_kernel<ops::SoftcapArgs>(ops::kSoftcap, DeviceType::cpu, DType::f32, DType::f32,
                                    &cpu::softcap_kernel);
  register_kernel<ops::AddArgs>(ops::kAdd, DeviceType::cpu, DType::f32, DType::f32,
                                &cpu::add_kernel);
}

}  // namespace anvil
