// Reading one weight element as float, for every weight dtype the CPU kernels accept. Kernels
// are templates over the weight type so the conversion is inlined, never a per-element call.
#pragma once

#include <cstdint>

#include "anvil/dtype.h"

namespace anvil::cpu {

struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};

inline float widen(float v) {
  return v;
}
inline float widen(Bf16 v) {
  return bf16_to_f32(v.bits);
}
inline float widen(F16 v) {
  return f16_to_f32(v.bits);
}

/// Calls fn.template operator()<T>() with T the C++ type of a weight dtype.
template <class Fn>
void with_weight_type(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      fn.template operator()<float>();
      return;
    case DType::bf16:
      fn.template operator()<Bf16>();
      return;
    case DType::f16:
      fn.template operator()<F16>();
      return;
    default:
      return;
  }
}

/// The weight dtypes the CPU kernels are registered for.
inline constexpr DType kCpuWeightTypes[] = {DType::f32, DType::bf16, DType::f16};
/// GGUF block types the CPU reads directly (matrix products and embedding rows).
inline constexpr DType kCpuQuantTypes[] = {DType::q8_0, DType::q4_0, DType::q4_1,   DType::q5_0,
                                           DType::q5_1, DType::q2_k, DType::q3_k,   DType::q4_k,
                                           DType::q5_k, DType::q6_k, DType::iq4_nl, DType::iq4_xs};

}  // namespace anvil::cpu
