// The ISA-level test runs (tests/CMakeLists.txt) hold the CPU kernels at a level through
// ANVIL_CPU_ISA. On a CPU below that level the cap changes nothing, and the run would repeat a
// lower level's run (three extra passes of the op tests on an AVX2-only CPU, ~4 minutes under
// ASan): such a run exits with CTest's skip code and says why, instead of passing silently.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cpu/cpu_isa.h"

namespace {

// CTest's SKIP_RETURN_CODE for these runs.
constexpr int kSkipExitCode = 77;

const bool g_isa_run_checked = [] {
  const char* exact = std::getenv("ANVIL_TEST_ISA_EXACT");
  const char* wanted = std::getenv("ANVIL_CPU_ISA");
  if (exact == nullptr || std::strcmp(exact, "1") != 0 || wanted == nullptr) return true;
  const char* reached = anvil::cpu::isa_name(anvil::cpu::isa());
  if (std::strcmp(reached, wanted) != 0) {
    std::printf("skipped: this CPU's kernels reach %s, not %s; the %s run covers them\n", reached,
                wanted, reached);
    std::fflush(stdout);
    std::exit(kSkipExitCode);
  }
  return true;
}();

}  // namespace
