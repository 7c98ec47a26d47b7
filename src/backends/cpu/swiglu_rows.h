// The vectorised gated activations (SwiGLU, GeGLU) of the CPU's ISA level, for the ops that
// apply them inside their own regions (the composed op, the gate/up prefill products, the team
// decode kernel), so all of them round the same way. Defined in elementwise_cpu.cc (a file
// compiled without ISA flags).
#pragma once

#include <cstdint>

#include "ops/ops.h"

namespace anvil::cpu {

using SwigluRows = void (*)(const float* gate, const float* up, float* out, int64_t n);

/// swiglu_avx512 or swiglu_avx2 by isa(); null below avx2 (the portable loop).
SwigluRows swiglu_rows();

/// The rows of `act` at the CPU's ISA level (swiglu_rows() for silu); never null for
/// gelu_tanh, whose portable loop is a function too.
SwigluRows glu_rows(ops::GluActivation act);

}  // namespace anvil::cpu
