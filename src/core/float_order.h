// Floats as unsigned integers that compare as the floats do, so that a (value, index) pair packs
// into one 64-bit key for selection and sorting (the CPU's top-k, the host's top-p).
#pragma once

#include <cstdint>
#include <cstring>

namespace anvil {

/// Bits of v that order as v does among numbers (-inf lowest, -0 and +0 one key). NaN gets no
/// meaningful key here: callers place it where their ordering wants it.
inline uint32_t ordered_bits(float v) {
  const float w = v + 0.0f;  // -0 + 0 is +0
  uint32_t bits;
  std::memcpy(&bits, &w, sizeof bits);
  return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

}  // namespace anvil
