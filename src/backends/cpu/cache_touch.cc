#include "backends/cpu/cache_touch.h"

#include <algorithm>

#include "backends/cpu/cpu_isa.h"

namespace anvil::cpu {
namespace {

// Keys and values together per window: stays in L2 on every CPU the kernels run on.
constexpr int64_t kWindowBytes = 128 * 1024;

// Loads one word of every 64-byte line of [k, k + bytes) and [v, v + bytes), the two in step.
void read_lines(const char* k, const char* v, int64_t bytes) {
  // Volatile, so the loads stay: nothing reads their values.
  const volatile char* kp = k;
  const volatile char* vp = v;
  for (int64_t at = 0; at < bytes; at += 64) {
    (void)kp[at];
    (void)vp[at];
  }
}

}  // namespace

KeyValueReadAhead::KeyValueReadAhead(const void* k, const void* v, int64_t row_bytes, int64_t begin,
                                     int64_t end, int64_t block)
    : k_(static_cast<const char*>(k)),
      v_(static_cast<const char*>(v)),
      row_bytes_(row_bytes),
      begin_(begin),
      end_(end),
      block_(block),
      window_(std::max<int64_t>(
          block, kWindowBytes / (2 * std::max<int64_t>(row_bytes, 1)) / block * block)),
      windows_(attention_window_reads()) {}

void KeyValueReadAhead::before_block(int64_t t0) const {
  if (windows_ && (t0 - begin_) % window_ == 0) {
    const int64_t at = t0 * row_bytes_;
    read_lines(k_ + at, v_ + at, std::min(window_, end_ - t0) * row_bytes_);
  }
}

// A head's walk is a few blocks long, too short for the hardware prefetcher to ramp up, and the
// score loop stalled on its key loads (Qwen3-0.6B decode: attention 10% of a step). Requests of
// a few keys' lines at a time leave the core's line fill buffers to the loads in between.
void KeyValueReadAhead::prefetch_keys(int64_t from, int64_t to) const {
  to = std::min(to, end_);
  for (int64_t at = from * row_bytes_; at < to * row_bytes_; at += 64) {
    __builtin_prefetch(k_ + at, 0, 3);
    __builtin_prefetch(v_ + at, 0, 3);
  }
}

void KeyValueReadAhead::before_keys(int64_t t, int64_t n) const {
  if (windows_) return;
  // The walk's first keys are loaded as they are used; the rest of its first block is
  // requested at once.
  if (t == begin_) prefetch_keys(t + n, t + block_);
  prefetch_keys(t + block_, t + block_ + n);
}

}  // namespace anvil::cpu
