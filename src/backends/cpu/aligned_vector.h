// aligned_vector.h: std::vector storage that starts on a 64-byte cache line. The kernels' packed
// tiles and panels are read in whole 64-byte rows; from a plain vector (malloc's 16-byte
// alignment) every such row straddles two lines, which held AMX's tile loads to about half their
// rate on a Xeon (docs/perf.md, twenty-seventh session).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace anvil::cpu {

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  static constexpr std::align_val_t kAlign{64};

  CacheLineAllocator() = default;
  template <class U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) {}

  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t) { ::operator delete(p, kAlign); }

  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace anvil::cpu
