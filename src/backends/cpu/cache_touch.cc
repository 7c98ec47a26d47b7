#include "backends/cpu/cache_touch.h"

#include <algorithm>

namespace anvil::cpu {

void touch_key_value_lines(const void* k, const void* v, int64_t bytes) {
  // Volatile, so the loads stay: nothing reads their values.
  const volatile char* kp = static_cast<const char*>(k);
  const volatile char* vp = static_cast<const char*>(v);
  for (int64_t at = 0; at < bytes; at += 64) {
    (void)kp[at];
    (void)vp[at];
  }
}

int64_t touch_window_keys(int64_t row_bytes, int64_t block) {
  constexpr int64_t kWindowBytes = 128 * 1024;
  const int64_t keys = kWindowBytes / (2 * std::max<int64_t>(row_bytes, 1));
  return std::max<int64_t>(block, keys / block * block);
}

}  // namespace anvil::cpu
