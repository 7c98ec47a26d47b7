// Sub-allocation of one large device buffer: byte ranges handed out first-fit and coalesced when
// freed. OpenCL drivers charge each buffer argument of a launch (on NVIDIA's ~0.35 us of host
// time and as much on the device, per argument), so anvil's OpenCL memory lives in a few large
// pools and a kernel takes one or two of them plus offsets.
#pragma once

#include <cstddef>
#include <map>
#include <optional>

namespace anvil::opencl {

class RangeAllocator {
 public:
  /// Ranges start at multiples of kAlign (every vector load of the kernels is aligned within it).
  static constexpr size_t kAlign = 256;

  explicit RangeAllocator(size_t capacity);

  /// The offset of a free range of at least `nbytes` (0 is taken as 1), or nullopt when none fits.
  std::optional<size_t> allocate(size_t nbytes);
  /// Returns the range that starts at `offset` (from allocate); unknown offsets are ignored.
  void release(size_t offset);
  /// Whether no range is handed out.
  bool empty() const { return used_.empty(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::map<size_t, size_t> free_;  // offset -> bytes, never two adjacent
  std::map<size_t, size_t> used_;  // offset -> bytes
};

}  // namespace anvil::opencl
