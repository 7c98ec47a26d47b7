// huge_pages.h: host blocks of 2 MiB and more laid on whole transparent huge pages. On the
// Xeon guests this project is measured on a 4 KiB page's TLB miss is a two-level (guest and
// host) walk; streams over huge pages read faster: decode attention's KV cache 8-15%
// (docs/perf.md, twenty-ninth session), decode's repacked weight rows (thirtieth session).
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdlib>

namespace anvil::cpu {

inline constexpr size_t kHugePage = size_t{2} << 20;

/// The size a block of `nbytes` is allocated at: whole huge pages from 2 MiB, else whole
/// 64-byte lines.
inline size_t huge_page_rounded(size_t nbytes) {
  const size_t unit = nbytes >= kHugePage ? kHugePage : 64;
  return (nbytes + unit - 1) / unit * unit;
}

/// std::free-able memory of `rounded` bytes (a huge_page_rounded size), 64-byte aligned; from
/// 2 MiB aligned to a huge page and advised to be backed by them (a hint: the kernel may give
/// 4 KiB pages where THP is off). nullptr when out of memory.
inline void* allocate_huge_page_rounded(size_t rounded) {
  if (rounded < kHugePage) return std::aligned_alloc(64, rounded);
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
  return p;
}

}  // namespace anvil::cpu
