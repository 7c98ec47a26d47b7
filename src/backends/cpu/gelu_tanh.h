// GELU's tanh approximation written as a sigmoid, the form the CPU's GeGLU kernels compute:
// 0.5 g (1 + tanh(a)) = g / (1 + e^(-2a)) with a = sqrt(2 / pi) (g + 0.044715 g^3), so GeGLU
// is SwiGLU's loop with another exponent. Free of other headers (the ISA files include it).
#pragma once

#include <cmath>

namespace anvil::cpu {

/// 2 sqrt(2 / pi) and 2 sqrt(2 / pi) * 0.044715: the exponent is -(linear g + cubic g^3).
inline constexpr float kGeluTanhLinear = 1.5957691216057308f;
inline constexpr float kGeluTanhCubic = 1.5957691216057308f * 0.044715f;

inline float gelu_tanh(float g) {
  return g / (1.0f + std::exp(-g * (kGeluTanhLinear + kGeluTanhCubic * g * g)));
}

}  // namespace anvil::cpu
