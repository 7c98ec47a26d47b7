// Random weights for the CPU micro-benchmarks: GGUF blocks with sane f16 scales (the op tests'
// random_blocks) for the quantized types, small normal values rounded to the type otherwise.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "anvil/dtype.h"
#include "anvil/tensor.h"
#include "ops/quant_blocks.h"

namespace anvil::bench {

inline Tensor random_weights(DType dt, int64_t o, int64_t k, std::mt19937& rng) {
  if (is_quantized(dt)) return test::random_blocks(dt, o, k, rng);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  std::vector<float> v(static_cast<size_t>(o * k));
  for (float& f : v) f = dist(rng);
  return Tensor::from_f32(v, {o, k}).to(dt);
}

}  // namespace anvil::bench
