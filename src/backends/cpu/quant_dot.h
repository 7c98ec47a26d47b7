// Dot products of float32 activations with rows of GGUF blocks, decoded in registers: the
// matrix-vector path of quantized models. One function per (block type, ISA); nullptr where a
// type has no fused kernel at that level (the caller then dequantizes rows first).
#pragma once

#include <cstddef>
#include <cstdint>

#include "anvil/dtype.h"
#include "backends/cpu/quant_dot_kernels.h"

namespace anvil::cpu {

/// The fused kernel for `weights` at the detected ISA level, or nullptr.
QuantDotRows quant_dot_rows(DType weights);

}  // namespace anvil::cpu
