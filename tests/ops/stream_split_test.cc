// The team kernel's split of a product's rows (stream_split.h): every item claimed exactly once
// under concurrent members, a member's own run taken front to back in one contiguous stream (or
// in lanes that continue from piece to piece), the runs of members that never arrive taken by
// the others; and the side-by-side visit of lanes (side_by_side.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "backends/cpu/side_by_side.h"
#include "backends/cpu/stream_split.h"
#include "core/thread_pool.h"

namespace anvil::cpu {
namespace {

// Runs members 0 .. arriving - 1 on their own threads; returns how often each item was claimed.
std::vector<int> claim_all(StreamSplit& split, int64_t n, int arriving) {
  std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
  for (auto& c : counts) c.store(0);
  std::vector<std::thread> threads;
  for (int m = 0; m < arriving; ++m) {
    threads.emplace_back([&, m] {
      int64_t b = 0, e = 0;
      while (split.claim(m, &b, &e)) {
        EXPECT_LT(b, e);
        for (int64_t i = b; i < e; ++i) counts[static_cast<size_t>(i)].fetch_add(1);
        split.finished(e - b);
      }
      split.wait();  // returns only once every item is finished, whoever held it
    });
  }
  for (auto& t : threads) t.join();
  std::vector<int> out;
  for (auto& c : counts) out.push_back(c.load());
  return out;
}

TEST(StreamSplit, EveryItemOnceUnderConcurrentMembers) {
  StreamSplit split;
  for (int members : {1, 2, 3, 5}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{100}, int64_t{4999}}) {
      for (int round = 0; round < 20; ++round) {  // reused, as the team kernel reuses its splits
        split.reset(n, members);
        const std::vector<int> counts = claim_all(split, n, members);
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(counts[static_cast<size_t>(i)], 1)
              << "item " << i << " of " << n << ", " << members << " members";
        }
      }
    }
  }
}

TEST(StreamSplit, MembersThatNeverArriveAreCoveredByTheOthers) {
  StreamSplit split;
  split.reset(1000, 4);
  const std::vector<int> counts = claim_all(split, 1000, 2);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(counts[static_cast<size_t>(i)], 1) << i;
}

TEST(StreamSplit, OwnRunFrontToBackThenOthersFromTheBack) {
  StreamSplit split;
  split.reset(64, 2);  // runs [0, 32) and [32, 64)
  int64_t b = 0, e = 0, expect = 0;
  while (expect < 32) {  // member 0's own run: contiguous pieces in order
    ASSERT_TRUE(split.claim(0, &b, &e));
    EXPECT_EQ(b, expect);
    expect = e;
  }
  expect = 64;
  while (expect > 32) {  // then member 1's run, taken from its end
    ASSERT_TRUE(split.claim(0, &b, &e));
    EXPECT_EQ(e, expect);
    expect = b;
  }
  EXPECT_FALSE(split.claim(0, &b, &e));
  EXPECT_FALSE(split.claim(1, &b, &e));
}

// stream_for on the CPU pool (as the one-row products call it), and nested inside a pool task,
// where it runs serially on the task's thread.
TEST(StreamSplit, OwnPiecesShrinkTowardTheRunsEndDownToTheMinimum) {
  StreamSplit split;
  split.reset(1024, 2, 4);  // runs of 512: pieces of 64, then a quarter of what is left, >= 4
  int64_t b = 0, e = 0, at = 0, last = 64;
  std::vector<int64_t> sizes;
  while (at < 512) {
    ASSERT_TRUE(split.claim(0, &b, &e));
    ASSERT_EQ(b, at);
    sizes.push_back(e - b);
    EXPECT_LE(e - b, last) << "piece " << sizes.size();
    EXPECT_GE(e - b, std::min<int64_t>(4, 512 - b)) << "piece " << sizes.size();
    last = e - b;
    at = e;
  }
  EXPECT_EQ(sizes.front(), 64);
  EXPECT_EQ(sizes.back(), 4);
  // The other run is taken from its back in halves, at least the minimum.
  ASSERT_TRUE(split.claim(0, &b, &e));
  EXPECT_EQ(e, 1024);
  EXPECT_EQ(b, 768);
}

TEST(StreamSplit, StreamForCoversEveryItemOnce) {
  const int saved = anvil::num_threads();
  for (int threads : {1, 2, 3, 4}) {
    anvil::set_num_threads(threads);
    for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{333}, int64_t{10000}}) {
      std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
      for (auto& c : counts) c.store(0);
      stream_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) counts[static_cast<size_t>(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(counts[static_cast<size_t>(i)].load(), 1) << i << " of " << n << ", " << threads;
      }
      std::atomic<int64_t> nested{0};
      parallel_for(4, 1, [&](int64_t t0, int64_t t1) {
        for (int64_t t = t0; t < t1; ++t) {
          stream_for(n, [&](int64_t b, int64_t e) { nested.fetch_add(e - b); });
        }
      });
      EXPECT_EQ(nested.load(), 4 * n);
    }
  }
  anvil::set_num_threads(saved);
}

// As claim_all, for a split with lanes: every item of every piece's lanes counted.
std::vector<int> claim_all_lanes(StreamSplit& split, int64_t n, int arriving) {
  std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
  for (auto& c : counts) c.store(0);
  std::vector<std::thread> threads;
  for (int m = 0; m < arriving; ++m) {
    threads.emplace_back([&, m] {
      Lanes piece;
      while (split.claim(m, &piece)) {
        EXPECT_GE(piece.count, 1);
        EXPECT_LE(piece.count, kDecodeStreams);
        for (int i = 0; i < piece.count; ++i) {
          EXPECT_LT(piece.begin[i], piece.end[i]);
          for (int64_t j = piece.begin[i]; j < piece.end[i]; ++j) {
            counts[static_cast<size_t>(j)].fetch_add(1);
          }
        }
        split.finished(lane_items(piece));
      }
      split.wait();
    });
  }
  for (auto& t : threads) t.join();
  std::vector<int> out;
  for (auto& c : counts) out.push_back(c.load());
  return out;
}

TEST(StreamSplit, LanesCoverEveryItemOnceUnderConcurrentMembers) {
  StreamSplit split;
  for (int members : {1, 2, 3, 5}) {
    for (int64_t n :
         {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{7}, int64_t{100}, int64_t{4999}}) {
      for (int64_t min_piece : {int64_t{0}, int64_t{1}, int64_t{9}}) {
        for (int round = 0; round < 5; ++round) {
          split.reset(n, members, min_piece, kDecodeStreams);
          const std::vector<int> counts = claim_all_lanes(split, n, members);
          for (int64_t i = 0; i < n; ++i) {
            ASSERT_EQ(counts[static_cast<size_t>(i)], 1)
                << "item " << i << " of " << n << ", " << members << " members";
          }
        }
      }
    }
  }
  split.reset(1000, 4, 0, kDecodeStreams);  // two members never arrive
  const std::vector<int> counts = claim_all_lanes(split, 1000, 2);
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(counts[static_cast<size_t>(i)], 1) << i;
}

TEST(StreamSplit, OwnPiecesContinueTheSameLanes) {
  StreamSplit split;
  split.reset(2 * 103, 2, 1, kDecodeStreams);  // member 0's run [0, 103): lanes of 26 (the last 25)
  Lanes piece;
  int64_t at[kDecodeStreams] = {0, 26, 52, 78};
  const int64_t lane_end[kDecodeStreams] = {26, 52, 78, 103};
  int pieces = 0;
  while (at[0] < lane_end[0]) {
    ASSERT_TRUE(split.claim(0, &piece));
    ++pieces;
    for (int i = 0; i < piece.count; ++i) {
      EXPECT_EQ(piece.begin[i], at[i]) << "piece " << pieces << ", lane " << i;
      EXPECT_LE(piece.end[i], lane_end[i]);
      EXPECT_EQ(piece.end[i] - piece.begin[i], piece.end[0] - piece.begin[0])
          << "a piece is the same positions of every lane that has them";
      at[i] = piece.end[i];
    }
  }
  EXPECT_GT(pieces, 1);
  for (int i = 0; i < kDecodeStreams; ++i) EXPECT_EQ(at[i], lane_end[i]) << "lane " << i;
  ASSERT_TRUE(split.claim(0, &piece));  // then member 1's run, from the back of its lanes
  EXPECT_EQ(piece.count, kDecodeStreams);
  EXPECT_EQ(piece.end[0], 103 + 26);
  EXPECT_EQ(piece.end[3], 2 * 103);
}

TEST(SideBySide, SplitAndClipLanes) {
  const Lanes l = split_lanes(10, 11);  // runs of 2, the last 5
  ASSERT_EQ(l.count, 4);
  EXPECT_EQ(l.begin[0], 10);
  EXPECT_EQ(l.end[0], 12);
  EXPECT_EQ(l.begin[3], 16);
  EXPECT_EQ(l.end[3], 21);
  EXPECT_EQ(lane_items(l), 11);
  EXPECT_EQ(split_lanes(0, 3).count, 1);  // fewer items than lanes: one lane of them
  EXPECT_EQ(split_lanes(0, 0).count, 0);
  const Lanes c = clip_lanes(l, 13, 18);  // [13, 14), [14, 16), [16, 18), counted from 13
  ASSERT_EQ(c.count, 3);
  EXPECT_EQ(c.begin[0], 0);
  EXPECT_EQ(c.end[0], 1);
  EXPECT_EQ(c.begin[1], 1);
  EXPECT_EQ(c.end[1], 3);
  EXPECT_EQ(c.begin[2], 3);
  EXPECT_EQ(c.end[2], 5);
  EXPECT_EQ(clip_lanes(l, 30, 40).count, 0);
}

TEST(SideBySide, VisitsEveryItemOnceFourWhileEveryLaneHasOne) {
  const int64_t lengths[][kDecodeStreams] = {{5, 5, 5, 5}, {5, 5, 5, 2}, {0, 3, 1, 7},
                                             {4, 0, 0, 0}, {0, 0, 0, 0}, {1, 2, 3, 4}};
  for (const auto& len : lengths) {
    Lanes lanes;
    int64_t start = 100;
    for (int i = 0; i < kDecodeStreams; ++i) {
      add_lane(lanes, start, start + len[i]);
      start += len[i] + 3;  // gaps between lanes: items there must not be visited
    }
    std::vector<int> seen(static_cast<size_t>(start + 1), 0);
    int64_t common = lanes.count == kDecodeStreams ? INT64_MAX : 0;
    for (int i = 0; i < lanes.count && lanes.count == kDecodeStreams; ++i) {
      common = std::min(common, lanes.end[i] - lanes.begin[i]);
    }
    int64_t fours = 0;
    visit_side_by_side(lanes, [&](const auto& at) {
      constexpr int kCount = static_cast<int>(sizeof(at) / sizeof(at[0]));
      static_assert(kCount == 4 || kCount == 2 || kCount == 1);
      if (kCount == 4) ++fours;
      for (int h = 0; h < kCount; ++h) ++seen[static_cast<size_t>(at[h])];
    });
    EXPECT_EQ(fours, common);
    for (int64_t i = 0; i < start; ++i) {
      bool inside = false;
      for (int l = 0; l < lanes.count; ++l) inside |= i >= lanes.begin[l] && i < lanes.end[l];
      ASSERT_EQ(seen[static_cast<size_t>(i)], inside ? 1 : 0) << "item " << i;
    }
  }
}

TEST(StreamSplit, StreamForLanesCoversEveryItemOnce) {
  const int saved = anvil::num_threads();
  for (int threads : {1, 2, 3}) {
    anvil::set_num_threads(threads);
    for (int64_t n : {int64_t{1}, int64_t{5}, int64_t{333}, int64_t{10000}}) {
      std::vector<std::atomic<int>> counts(static_cast<size_t>(n));
      for (auto& c : counts) c.store(0);
      stream_for_lanes(n, [&](const Lanes& piece) {
        for (int i = 0; i < piece.count; ++i) {
          for (int64_t j = piece.begin[i]; j < piece.end[i]; ++j) {
            counts[static_cast<size_t>(j)].fetch_add(1);
          }
        }
      });
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(counts[static_cast<size_t>(i)].load(), 1) << i << " of " << n << ", " << threads;
      }
    }
  }
  anvil::set_num_threads(saved);
}

}  // namespace
}  // namespace anvil::cpu
