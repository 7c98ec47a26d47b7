// A count known only at run time as a template argument, for kernels unrolled per row or vector
// count (the AVX-512 and AVX2 attention kernels).
#pragma once

#include <type_traits>
#include <utility>

namespace anvil::cpu {

/// f(std::integral_constant<int, N>) for N = n (1 <= n; Max for n >= Max).
template <int Max, int N = 1, class F>
inline void with_count(int n, F&& f) {
  if constexpr (N == Max) {
    f(std::integral_constant<int, N>{});
  } else if (n <= N) {
    f(std::integral_constant<int, N>{});
  } else {
    with_count<Max, N + 1>(n, std::forward<F>(f));
  }
}

}  // namespace anvil::cpu
