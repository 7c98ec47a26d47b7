// The team kernel's split of a product's rows (stream_split.h): every item claimed exactly once
// under concurrent members, a member's own run taken front to back in one contiguous stream,
// the runs of members that never arrive taken by the others.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

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

}  // namespace
}  // namespace anvil::cpu
