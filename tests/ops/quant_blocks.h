// Quantized test inputs shared by the op tests: random GGUF blocks, and the inputs of a product
// as the CPU's kernels round them (int8 activations; bf16 activations and weights on AMX).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "anvil/dtype.h"
#include "anvil/tensor.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels_amx.h"
#include "backends/cpu/repack.h"

namespace anvil::test {

// Random GGUF blocks with sane f16 scales (random bytes elsewhere), `rows` x `k` values.
inline Tensor random_blocks(DType type, int64_t rows, int64_t k, std::mt19937& rng) {
  Tensor t = Tensor::empty({rows, k}, type);
  auto* bytes = static_cast<uint8_t*>(t.raw());
  std::uniform_int_distribution<int> byte(0, 255);
  for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(byte(rng));
  const size_t block = dtype_nbytes(type, dtype_block_elems(type));
  // The f16 fields: d (and m / dmin for Q4_1 / Q5_1 / Q4_K / Q5_K) lead each block; Q2_K's d
  // and dmin and Q3_K's and Q6_K's d end it.
  std::vector<size_t> f16_at = {0};
  if (type == DType::q4_1 || type == DType::q5_1 || type == DType::q4_k || type == DType::q5_k) {
    f16_at = {0, 2};
  }
  if (type == DType::q6_k) f16_at = {208};
  if (type == DType::q2_k) f16_at = {80, 82};
  if (type == DType::q3_k) f16_at = {108};
  std::uniform_real_distribution<float> scale(-0.05f, 0.05f);
  for (size_t b = 0; b < t.nbytes(); b += block) {
    for (size_t at : f16_at) {
      const uint16_t h = f32_to_f16(scale(rng));
      std::memcpy(bytes + b + at, &h, 2);
    }
  }
  return t;
}

// x with each 32-value block rounded to int8 as llama.cpp's Q8 activation format does it
// (d = max|x| / 127, q = round-half-even(x * 127 / max|x|)), back in float32: what the CPU's
// AVX-512 VNNI kernels multiply quantized weights with.
inline Tensor q8_round_trip(const Tensor& x) {
  std::vector<float> v = x.to_f32_vector();
  for (size_t b = 0; b + 32 <= v.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[b + i]));
    const float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
    for (size_t i = 0; i < 32; ++i) v[b + i] = std::nearbyint(v[b + i] * id) * d;
  }
  return Tensor::from_f32(v, x.shape());
}

// True when the CPU's products with `weight` blocks use int8 activations: the int8 kernels, for
// every block type from the avx2 level up.
inline bool cpu_int8_activations(DType weight) {
  if (!is_quantized(weight)) return false;
  return cpu::isa() >= cpu::Isa::avx2;
}

// The inputs a CPU product of x [n, k] and quantized `weight` rows multiplies: from the amx
// level, a prompt's rows (kAmxMinRows and more) with a type the AMX kernel takes are rounded to
// bf16, and so are the weights, dequantized (kernels_amx.cc); below it, the int8 kernels'
// activations and the weights as they are.
struct ProductInputs {
  Tensor x, weight;
};
inline ProductInputs cpu_product_inputs(const Tensor& x, const Tensor& weight) {
  cpu::QuantKind kind;
  const bool repacked = std::getenv("ANVIL_NO_REPACK") == nullptr;
  if (repacked && cpu::isa() >= cpu::Isa::amx && x.size(0) >= cpu::kAmxMinRows &&
      cpu::repacked_kind(weight.dtype(), x.size(1), &kind) && cpu::amx_takes(kind)) {
    return {x.to(DType::bf16).to(DType::f32), weight.to(DType::f32).to(DType::bf16)};
  }
  if (cpu_int8_activations(weight.dtype())) return {q8_round_trip(x), weight};
  return {x, weight};
}

// The largest sum of |w x| over the outputs of w [o, k] x^T (x [n, k]): float32 sums in another
// order differ from the reference relative to it.
inline float product_magnitude(const Tensor& w, const Tensor& x) {
  const auto wf = w.to_f32_vector(), xf = x.to_f32_vector();
  const int64_t n = x.size(0), k = x.size(1), o = w.size(0);
  float m = 0;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t r = 0; r < o; ++r) {
      float s = 0;
      for (int64_t i = 0; i < k; ++i) s += std::fabs(wf[r * k + i] * xf[j * k + i]);
      m = std::max(m, s);
    }
  }
  return m;
}

}  // namespace anvil::test
