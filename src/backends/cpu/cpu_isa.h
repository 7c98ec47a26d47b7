// Which instruction-set level the CPU kernels use: detected once, lowered (never raised) by
// ANVIL_CPU_ISA=baseline|avx2 so every kernel path can be tested on a machine that has more.
#pragma once

namespace anvil::cpu {

enum class Isa { baseline, avx2 };

Isa isa();
const char* isa_name(Isa isa);

}  // namespace anvil::cpu
