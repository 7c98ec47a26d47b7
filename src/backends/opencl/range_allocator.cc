#include "backends/opencl/range_allocator.h"

#include <iterator>

namespace anvil::opencl {

RangeAllocator::RangeAllocator(size_t capacity) : capacity_(capacity / kAlign * kAlign) {
  if (capacity_ > 0) free_[0] = capacity_;
}

std::optional<size_t> RangeAllocator::allocate(size_t nbytes) {
  const size_t want = ((nbytes == 0 ? 1 : nbytes) + kAlign - 1) / kAlign * kAlign;
  if (want < nbytes) return std::nullopt;  // overflowed
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < want) continue;
    const size_t offset = it->first, left = it->second - want;
    free_.erase(it);
    if (left > 0) free_[offset + want] = left;
    used_[offset] = want;
    return offset;
  }
  return std::nullopt;
}

void RangeAllocator::release(size_t offset) {
  const auto used = used_.find(offset);
  if (used == used_.end()) return;
  size_t start = offset, size = used->second;
  used_.erase(used);
  auto next = free_.lower_bound(start);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && start + size == next->first) {
    size += next->second;
    free_.erase(next);
  }
  free_[start] = size;
}

}  // namespace anvil::opencl
