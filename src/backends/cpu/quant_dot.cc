// Choosing the fused quantized dot product for a block type at the detected ISA level.
#include "backends/cpu/quant_dot.h"

#include "backends/cpu/cpu_isa.h"

namespace anvil::cpu {

QuantDotRows quant_dot_rows(DType weights) {
  if (isa() < Isa::avx2) return nullptr;
  switch (weights) {
    case DType::q8_0:
      return &dot_rows_q8_0_avx2;
    case DType::q4_0:
      return &dot_rows_q4_0_avx2;
    case DType::q4_1:
      return &dot_rows_q4_1_avx2;
    default:
      return nullptr;
  }
}

}  // namespace anvil::cpu
