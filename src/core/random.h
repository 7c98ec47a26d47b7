// A small, fast, seedable generator (xoshiro256**) for random weights. Streams are derived
// from (seed, stream id) so chunks can be filled in parallel and still be reproducible.
#pragma once

#include <cstdint>

namespace anvil {

class Xoshiro256 {
 public:
  Xoshiro256(uint64_t seed, uint64_t stream);
  uint64_t next();
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Standard normal (Box-Muller; one of the pair is kept for the next call).
  double normal();

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0;
};

}  // namespace anvil
