// Which keys a query row sees: causal up to its own cache index `last`, and under a sliding
// window (window > 0) none before last - window + 1 (ops::first_visible_key). Shared by the
// attention kernels of every ISA, which take a row's keys as bit masks over runs of keys.
#pragma once

#include <algorithm>
#include <cstdint>

#include "ops/ops.h"

namespace anvil::cpu {

/// Bits t (t < n <= 64) set for the keys t0 + t with first <= t0 + t <= last.
inline uint64_t visible_bits(int64_t first, int64_t last, int64_t t0, int n) {
  const int64_t lo = std::max<int64_t>(0, first - t0);
  const int64_t hi = std::min<int64_t>(n, last - t0 + 1);  // one past the last bit
  if (hi <= lo) return 0;
  const uint64_t below_hi = hi >= 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
  const uint64_t below_lo = lo >= 64 ? ~uint64_t{0} : (uint64_t{1} << lo) - 1;
  return below_hi & ~below_lo;
}

/// The first key any of `rows` rows (last[r], one window) sees.
inline int64_t first_key_of_rows(const int64_t* last, int rows, int64_t window) {
  int64_t first = INT64_MAX;
  for (int r = 0; r < rows; ++r) first = std::min(first, ops::first_visible_key(last[r], window));
  return rows > 0 ? first : 0;
}

}  // namespace anvil::cpu
