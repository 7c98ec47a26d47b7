// ISA detection through the compiler's cpuid helpers.
#include "backends/cpu/cpu_isa.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/kernels_amx.h"
#include "backends/cpu/kernels_bf16dot.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace anvil::cpu {
namespace {

const char* g_amx_refusal = "";

// AMX's tile data is a dynamically enabled state on Linux (5.16+): a process must ask for it
// before its first tile instruction, which would otherwise fault.
bool amx_granted() {
#if defined(__linux__) && defined(__x86_64__)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureTileData = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) == 0) return true;
  g_amx_refusal = "the kernel refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)";
#endif
  return false;
}

// AMD family 19h: Zen 3 and Zen 4 (of them only Zen 4 has AVX-512). Zen 4 splits each 512-bit
// instruction into two 256-bit halves; Intel's cores and Zen 5 (family 1Ah) run them whole.
bool amd_family_19h() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return false;
  const bool amd = ebx == 0x68747541 && edx == 0x69746e65 && ecx == 0x444d4163;  // AuthenticAMD
  if (!amd || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  const unsigned base = (eax >> 8) & 0xf;
  const unsigned family = base == 0xf ? base + ((eax >> 20) & 0xff) : base;
  return family == 0x19;
#else
  return false;
#endif
}

// An environment switch between two ways of running: `on` or `off` chooses, anything else
// (or nothing) leaves the CPU's default.
bool switch_from_env(const char* name, const char* on, const char* off, bool fallback) {
  if (const char* env = std::getenv(name)) {
    if (std::strcmp(env, on) == 0) return true;
    if (std::strcmp(env, off) == 0) return false;
  }
  return fallback;
}

}  // namespace

bool wide_decode_rows() {
  static const bool wide =
      switch_from_env("ANVIL_CPU_DECODE_ROWS", "512", "256", !amd_family_19h());
  return wide;
}

namespace {

// ANVIL_CPU_DECODE_READ_AHEAD=BYTES, or -1 when unset (or not a byte count).
long read_ahead_from_env() {
  static const long bytes = [] {
    const char* env = std::getenv("ANVIL_CPU_DECODE_READ_AHEAD");
    if (!env) return -1L;
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 0 && v <= (1L << 20)) return v;
    std::fprintf(stderr,
                 "anvil: ANVIL_CPU_DECODE_READ_AHEAD=%s is not a byte count from 0 to 1048576; "
                 "using the CPU's default\n",
                 env);
    return -1L;
  }();
  return bytes;
}

}  // namespace

long decode_read_ahead() {
  static const bool amd = amd_family_19h();
  const long env = read_ahead_from_env();
  return env >= 0 ? env : amd ? 0L : 4096L;
}

bool attention_window_reads() {
  static const bool windows =
      switch_from_env("ANVIL_CPU_ATTENTION_READS", "window", "prefetch", amd_family_19h());
  return windows;
}

bool bf16_pair_products() {
  static const bool pairs = [] {
    if (isa() < Isa::avx512bf16) return false;
    const char* env = std::getenv("ANVIL_CPU_BF16_PRODUCTS");
    if (env && *env) {
      if (std::strcmp(env, "pairs") == 0) return true;
      if (std::strcmp(env, "widened") == 0) return false;
      std::fprintf(stderr,
                   "anvil: ANVIL_CPU_BF16_PRODUCTS=%s is neither pairs nor widened; timing this "
                   "CPU to choose\n",
                   env);
    }
    return bf16_pair_speedup() >= 0.8;
  }();
  return pairs;
}

bool bf16_rows_rounded(int64_t rows) {
  if (isa() == Isa::amx && rows >= kAmxMinRows) return true;
  return isa() >= Isa::avx512bf16 && (rows == 1 || bf16_pair_products());
}

Isa isa() {
  static const Isa level = [] {
    Isa detected = Isa::baseline;
    bool avx_vnni = false;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")) {
      detected = Isa::avx2;
      avx_vnni = __builtin_cpu_supports("avxvnni");
      if (avx_vnni) detected = Isa::avxvnni;
      if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vnni")) {
        detected = Isa::avx512;
        if (__builtin_cpu_supports("avx512bf16")) {
          detected = Isa::avx512bf16;
          if (__builtin_cpu_supports("amx-tile") && __builtin_cpu_supports("amx-int8") &&
              __builtin_cpu_supports("amx-bf16") && amx_granted()) {
            detected = Isa::amx;
          }
        }
      }
    }
#endif
    if (const char* env = std::getenv("ANVIL_CPU_ISA")) {
      Isa cap = detected;
      if (std::strcmp(env, "baseline") == 0) cap = Isa::baseline;
      if (std::strcmp(env, "avx2") == 0) cap = Isa::avx2;
      if (std::strcmp(env, "avxvnni") == 0) cap = avx_vnni ? Isa::avxvnni : Isa::avx2;
      if (std::strcmp(env, "avx512") == 0) cap = Isa::avx512;
      if (std::strcmp(env, "avx512bf16") == 0) cap = Isa::avx512bf16;
      if (std::strcmp(env, "amx") == 0) cap = Isa::amx;
      if (cap < detected) detected = cap;
    }
    return detected;
  }();
  return level;
}

const char* amx_refusal() {
  isa();
  return g_amx_refusal;
}

const char* isa_name(Isa level) {
  switch (level) {
    case Isa::amx:
      return "amx";
    case Isa::avx512bf16:
      return "avx512bf16";
    case Isa::avx512:
      return "avx512";
    case Isa::avxvnni:
      return "avxvnni";
    case Isa::avx2:
      return "avx2";
    default:
      return "baseline";
  }
}

}  // namespace anvil::cpu
