// Decode's weight rows read as several streams per thread: a thread's items (8-row groups or
// rows) come as up to kDecodeStreams lanes, ranges visited side by side (item j of every lane,
// then j + 1). One core kept more of its reads in flight with four streams than with one: in a
// Q4_0 loop on a Xeon with AMX a thread streamed 16.2-16.7 GB/s against 12.7-14.8 with one run,
// two threads 30.6-32.7 against 27.6-28.1 (docs/perf.md, twenty-eighth session).
//
// A lane is a range of its own, not a quarter of the call's range, so that a thread whose run of
// a matrix is cut into several calls (stream_split.h, to share the work out) can continue the
// same four streams from one call to the next: cutting each call's range into fresh quarters
// restarted four streams from cold lines at every call, which cost Qwen2.5-0.5B's Q4_0 decode
// ~15% of its layers' time (docs/perf.md, thirtieth session).
#pragma once

#include <algorithm>
#include <cstdint>

namespace anvil::cpu {

inline constexpr int kDecodeStreams = 4;

/// The most activation rows (a batched decode's) that the 512-bit decode rows take side by side:
/// their accumulators, one per row and stream, fill half the registers at four.
inline constexpr int kMaxLaneRows = 4;

/// Up to kDecodeStreams ranges of items [begin[i], end[i]). Data only, its helpers `static`:
/// the AVX-512 kernels' translation unit includes this header too, and an inline function with
/// external linkage compiled there could be the copy the linker keeps for every caller.
struct Lanes {
  int count = 0;
  int64_t begin[kDecodeStreams] = {}, end[kDecodeStreams] = {};
};

/// Appends [b, e) unless it is empty (at most kDecodeStreams lanes).
static inline void add_lane(Lanes& l, int64_t b, int64_t e) {
  if (b >= e) return;
  l.begin[l.count] = b;
  l.end[l.count] = e;
  ++l.count;
}

static inline int64_t lane_items(const Lanes& l) {
  int64_t n = 0;
  for (int i = 0; i < l.count; ++i) n += l.end[i] - l.begin[i];
  return n;
}

/// [first, first + n) as kDecodeStreams equal lanes, the last taking the remainder.
static inline Lanes split_lanes(int64_t first, int64_t n) {
  Lanes l;
  const int64_t run = n / kDecodeStreams;
  for (int i = 0; i + 1 < kDecodeStreams; ++i) add_lane(l, first + i * run, first + (i + 1) * run);
  add_lane(l, first + (kDecodeStreams - 1) * run, first + n);
  return l;
}

/// The parts of the lanes inside [lo, hi), counted from lo.
static inline Lanes clip_lanes(const Lanes& in, int64_t lo, int64_t hi) {
  Lanes l;
  for (int i = 0; i < in.count; ++i) {
    add_lane(l, std::max(in.begin[i], lo) - lo, std::min(in.end[i], hi) - lo);
  }
  return l;
}

/// visit(at) with `at` an array of item indices, one per lane that still has an item at that
/// offset: four while every lane has one, then pairs and single items (the kernels take 4, 2
/// or 1 streams at a time).
template <class Visit>
void visit_side_by_side(const Lanes& lanes, Visit&& visit) {
  int64_t done = 0;
  for (;;) {
    int live[kDecodeStreams];
    int n = 0;
    int64_t step = INT64_MAX;
    for (int i = 0; i < lanes.count; ++i) {
      const int64_t left = lanes.end[i] - lanes.begin[i] - done;
      if (left <= 0) continue;
      live[n++] = i;
      step = std::min(step, left);
    }
    if (n == 0) return;
    for (int64_t j = done; j < done + step; ++j) {
      int i = 0;
      if (n == kDecodeStreams) {
        int64_t at[kDecodeStreams];
        for (int h = 0; h < kDecodeStreams; ++h) at[h] = lanes.begin[live[h]] + j;
        visit(at);
        continue;
      }
      for (; i + 2 <= n; i += 2) {
        const int64_t at[2] = {lanes.begin[live[i]] + j, lanes.begin[live[i + 1]] + j};
        visit(at);
      }
      if (i < n) {
        const int64_t at[1] = {lanes.begin[live[i]] + j};
        visit(at);
      }
    }
    done += step;
  }
}

/// Items [first, first + n) as split_lanes cuts them.
template <class Visit>
void visit_side_by_side(int64_t first, int64_t n, Visit&& visit) {
  visit_side_by_side(split_lanes(first, n), visit);
}

}  // namespace anvil::cpu
