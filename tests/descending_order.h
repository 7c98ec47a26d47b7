// The order ops::top_k defines, for the tests that check it: largest first, equal values in
// index order, NaN above every number (torch.topk).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

namespace anvil::test {

inline std::vector<int64_t> descending_order(const float* x, int64_t n) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(), [x](int64_t a, int64_t b) {
    const bool na = std::isnan(x[a]), nb = std::isnan(x[b]);
    if (na || nb) return na && !nb;
    return x[a] > x[b];
  });
  return order;
}

}  // namespace anvil::test
