// Work over [0, n) shared by a team so that each member reads one contiguous run of it front to
// back (a weight product streams memory: every jump to another place restarts the hardware
// prefetcher, and products cut into chunks claimed in turn measured 10-30% slower than one run
// per member), yet no member waits for a slower one, or for one that has not arrived, longer than
// a small piece: a member whose own run is done takes pieces from the back of the others' runs.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/side_by_side.h"

namespace anvil::cpu {

class StreamSplit {
 public:
  /// Splits [0, n) into `members` runs, each into `lanes` equal lanes (side_by_side.h) that
  /// its pieces cut across: with kDecodeStreams lanes a member's pieces continue the same
  /// streams one after another, with 1 each piece is a contiguous range. Allocates only when
  /// `members` grows. `min_piece`: the fewest items a piece holds (0: a thirty-second of a
  /// run); callers that know an item's bytes give a few tens of KB, so the last pieces are
  /// short whatever the items' size.
  void reset(int64_t n, int members, int64_t min_piece = 0, int lanes = 1) {
    if (members > capacity_) {
      runs_ = std::make_unique<Run[]>(static_cast<size_t>(members));
      capacity_ = members;
    }
    members_ = members;
    lanes_ = std::clamp(lanes, 1, kDecodeStreams);
    n_ = n;
    for (int m = 0; m < members; ++m) {
      Run& r = runs_[m];
      r.first = n * m / members;
      r.last = n * (m + 1) / members;
      r.width = (r.last - r.first + lanes_ - 1) / lanes_;
      r.bounds.store(static_cast<uint64_t>(r.width), std::memory_order_relaxed);
    }
    // Piece sizes in lane positions (a piece holds up to `lanes` items per position).
    const int64_t run = std::max<int64_t>(1, n / members);
    const int64_t items = min_piece > 0 ? min_piece : run / 32;
    steal_piece_ = std::max<int64_t>(1, items / lanes_);
    own_piece_ = std::max<int64_t>(steal_piece_, run / lanes_ / 8);
    done_.store(0, std::memory_order_relaxed);
  }

  /// The next piece for `member`: from the front of its own run (an eighth of the run, a
  /// quarter of what is left of it once that is less, at least the minimum: a member that
  /// finishes first can only take what the others have not claimed, so short last pieces keep
  /// its wait short), else from the back of another's (half of what is left there, at least
  /// the minimum: a run whose owner has not arrived is taken in a few long streams, not dozens
  /// of short ones, which measured 25% slower with another process on one of the cores);
  /// false when nothing is left. The piece is the same positions of each of the run's lanes.
  bool claim(int member, Lanes* piece) {
    for (int r = 0; r < members_; ++r) {
      const bool own = r == 0;
      Run& run = runs_[(member + r) % members_];
      uint64_t cur = run.bounds.load(std::memory_order_relaxed);
      for (;;) {
        const int64_t f = static_cast<int64_t>(cur >> 32), b = static_cast<int64_t>(cur & kLow);
        if (f >= b) break;
        const int64_t pb = own ? f : std::max(f, b - std::max(steal_piece_, (b - f) / 2));
        const int64_t pe =
            own ? std::min(b, f + std::clamp((b - f) / 4, steal_piece_, own_piece_)) : b;
        const uint64_t next = own ? static_cast<uint64_t>(pe) << 32 | static_cast<uint64_t>(b)
                                  : static_cast<uint64_t>(f) << 32 | static_cast<uint64_t>(pb);
        if (run.bounds.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
          *piece = Lanes{};
          for (int h = 0; h < lanes_; ++h) {
            const int64_t lane = run.first + h * run.width;
            add_lane(*piece, std::min(lane + pb, run.last), std::min(lane + pe, run.last));
          }
          return true;
        }
      }
    }
    return false;
  }

  /// claim() for a split of one lane: the piece as one range [begin, end).
  bool claim(int member, int64_t* begin, int64_t* end) {
    Lanes piece;
    if (!claim(member, &piece)) return false;
    *begin = piece.begin[0];
    *end = piece.end[piece.count - 1];
    return true;
  }

  /// Marks `count` items finished (release: their writes become visible to wait()).
  void finished(int64_t count) { done_.fetch_add(count, std::memory_order_release); }

  /// Returns once every item is finished; their writes are then visible.
  void wait() const {
    spin_until([&] { return done_.load(std::memory_order_acquire) >= n_; });
  }

 private:
  static constexpr uint64_t kLow = 0xffffffffu;
  struct alignas(64) Run {
    std::atomic<uint64_t> bounds{0};  // front << 32 | back, in lane positions
    int64_t first = 0, last = 0;      // the run's items [first, last)
    int64_t width = 0;                // lane positions: the lanes' length, the last's at most
  };
  std::unique_ptr<Run[]> runs_;
  int capacity_ = 0, members_ = 0, lanes_ = 1;
  int64_t n_ = 0, own_piece_ = 1, steal_piece_ = 1;
  alignas(64) std::atomic<int64_t> done_{0};
};

/// fn(begin, end) over [0, n) in pieces, each thread streaming its own contiguous run first and
/// then taking pieces of the others' (for one-row products, whose time is the weights' stream).
/// Serial with one thread or from inside a task.
template <class F>
void stream_for(int64_t n, F&& fn) {
  const int members = team_size();
  if (n <= 0) return;
  if (members <= 1 || n == 1) {
    fn(int64_t{0}, n);
    return;
  }
  thread_local StreamSplit caller_split;  // nested calls run serially above
  // Through a pointer: inside the lambda the name would denote each worker's own instance.
  StreamSplit* split = &caller_split;
  split->reset(n, members);
  auto member = [&](int64_t m) {
    int64_t b = 0, e = 0;
    while (split->claim(static_cast<int>(m), &b, &e)) fn(b, e);
  };
  // As tasks, not a team: a task whose thread has not started is run by the caller, so the
  // product never waits for a descheduled worker.
  run_tasks(members, TaskRef(member));
}

/// stream_for for consumers that read kDecodeStreams lanes side by side: fn(const Lanes&) with
/// each piece, a thread's pieces continuing the same lanes of its run.
template <class F>
void stream_for_lanes(int64_t n, F&& fn) {
  const int members = team_size();
  if (n <= 0) return;
  if (members <= 1 || n == 1) {
    fn(split_lanes(0, n));
    return;
  }
  thread_local StreamSplit caller_split;
  StreamSplit* split = &caller_split;
  split->reset(n, members, 0, kDecodeStreams);
  auto member = [&](int64_t m) {
    Lanes piece;
    while (split->claim(static_cast<int>(m), &piece)) fn(piece);
  };
  run_tasks(members, TaskRef(member));
}

}  // namespace anvil::cpu
