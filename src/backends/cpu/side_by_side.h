// Decode's weight rows read as several streams per thread: items [first, first + n) (a
// thread's 8-row groups or rows) cut into kDecodeStreams runs visited side by side (item j of
// every run, then j + 1), the rest one at a time. One core kept more of its reads in flight with
// four streams than with one: in a Q4_0 loop on a Xeon with AMX a thread streamed 16.2-16.7
// GB/s against 12.7-14.8 with one run, two threads 30.6-32.7 against 27.6-28.1 (docs/perf.md,
// twenty-eighth session).
#pragma once

#include <cstdint>

namespace anvil::cpu {

inline constexpr int kDecodeStreams = 4;

/// visit(at) with `at` an array of kDecodeStreams item indices (one per run) or of one.
template <class Visit>
void visit_side_by_side(int64_t first, int64_t n, Visit&& visit) {
  const int64_t run = n / kDecodeStreams;
  for (int64_t j = 0; j < run; ++j) {
    int64_t at[kDecodeStreams];
    for (int h = 0; h < kDecodeStreams; ++h) at[h] = first + h * run + j;
    visit(at);
  }
  for (int64_t i = first + kDecodeStreams * run; i < first + n; ++i) {
    const int64_t at[1] = {i};
    visit(at);
  }
}

}  // namespace anvil::cpu
