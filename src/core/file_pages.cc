// The registry of read-only file mappings behind drop_mapped_pages (see file_pages.h).
#include "core/file_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace anvil {
namespace {

std::mutex g_mu;
std::map<uintptr_t, size_t>& mappings() {  // begin -> size
  static std::map<uintptr_t, size_t> m;
  return m;
}

}  // namespace

void register_readonly_mapping(const void* begin, size_t size) {
  std::lock_guard<std::mutex> lock(g_mu);
  mappings()[reinterpret_cast<uintptr_t>(begin)] = size;
}

void unregister_readonly_mapping(const void* begin) {
  std::lock_guard<std::mutex> lock(g_mu);
  mappings().erase(reinterpret_cast<uintptr_t>(begin));
}

size_t drop_mapped_pages(const void* p, size_t n) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(g_mu);  // held through madvise: no munmap meanwhile
  auto it = mappings().upper_bound(at);
  if (it == mappings().begin()) return 0;
  --it;
  if (at + n > it->first + it->second) return 0;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (at + page - 1) / page * page, last = (at + n) / page * page;
  if (last <= first) return 0;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

}  // namespace anvil
