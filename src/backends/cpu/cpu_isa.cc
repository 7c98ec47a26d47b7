// ISA detection through the compiler's cpuid helpers.
#include "backends/cpu/cpu_isa.h"

#include <cstdlib>
#include <cstring>

namespace anvil::cpu {

Isa isa() {
  static const Isa level = [] {
    Isa detected = Isa::baseline;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")) {
      detected = Isa::avx2;
      if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vnni")) {
        detected = Isa::avx512;
        if (__builtin_cpu_supports("avx512bf16")) detected = Isa::avx512bf16;
      }
    }
#endif
    if (const char* env = std::getenv("ANVIL_CPU_ISA")) {
      Isa cap = detected;
      if (std::strcmp(env, "baseline") == 0) cap = Isa::baseline;
      if (std::strcmp(env, "avx2") == 0) cap = Isa::avx2;
      if (std::strcmp(env, "avx512") == 0) cap = Isa::avx512;
      if (std::strcmp(env, "avx512bf16") == 0) cap = Isa::avx512bf16;
      if (cap < detected) detected = cap;
    }
    return detected;
  }();
  return level;
}

const char* isa_name(Isa level) {
  switch (level) {
    case Isa::avx512bf16:
      return "avx512bf16";
    case Isa::avx512:
      return "avx512";
    case Isa::avx2:
      return "avx2";
    default:
      return "baseline";
  }
}

}  // namespace anvil::cpu
