// Which instruction-set level the CPU kernels use: detected once, lowered (never raised) by
// ANVIL_CPU_ISA=baseline|avx2|avxvnni|avx512|avx512bf16|amx so every kernel path can be tested on a
// machine that has more.
#pragma once

namespace anvil::cpu {

// Ordered: each level includes the ones before it.
//   avx2:   AVX2 + FMA + F16C (Haswell, Zen 1 and later)
//   avxvnni: avx2 + AVX-VNNI (256-bit int8 dot products, VEX-encoded: Alder Lake and later
//           client cores, Zen 5); it matters only where avx512 is not reached, and a CPU
//           without it that is held to this level runs at avx2
//   avx512: AVX-512 F/BW/VL/DQ + VNNI (int8 dot products) on top of avx2 (Ice Lake, Zen 4 and
//           later; Skylake-X has no VNNI and stays at avx2)
//   avx512bf16: avx512 + AVX512_BF16 (bf16 pair dot products: Cooper Lake, Sapphire Rapids,
//           Zen 4). bf16 weights then multiply bf16-rounded activations, as llama.cpp's and
//           transformers' bf16 paths do; below it their products are exact in float32.
//   amx:    avx512bf16 + AMX tiles with int8 and bf16 multiplies (Sapphire Rapids and later
//           Xeons), once Linux grants the process the tile state (arch_prctl): prefill
//           products of the repacked 32-value block types and of bf16 weights run on tiles.
enum class Isa { baseline, avx2, avxvnni, avx512, avx512bf16, amx };

Isa isa();
const char* isa_name(Isa isa);

/// Why the CPU runs below amx although it has AMX (the OS refused the tile state), else empty.
const char* amx_refusal();

}  // namespace anvil::cpu
