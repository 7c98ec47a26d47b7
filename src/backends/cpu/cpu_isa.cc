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
    }
#endif
    if (const char* env = std::getenv("ANVIL_CPU_ISA")) {
      if (std::strcmp(env, "baseline") == 0) detected = Isa::baseline;
    }
    return detected;
  }();
  return level;
}

const char* isa_name(Isa level) {
  return level == Isa::avx2 ? "avx2" : "baseline";
}

}  // namespace anvil::cpu
