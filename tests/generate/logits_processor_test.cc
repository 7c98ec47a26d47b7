// transformers' logits processors, one behaviour at a time.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "generate/logits_processor.h"

namespace anvil {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

TEST(LogitsProcessor, RepetitionPenaltyDividesPositivesMultipliesNegatives) {
  std::vector<float> s{2.0f, -2.0f, 1.0f, 4.0f};
  apply_repetition_penalty(s, {0, 1, 1, 9}, 2.0f);  // 1 repeated and 9 out of range: no effect
  EXPECT_EQ(s, (std::vector<float>{1.0f, -4.0f, 1.0f, 4.0f}));
}

TEST(LogitsProcessor, TopKKeepsTiesAtTheThreshold) {
  std::vector<float> s{1, 3, 2, 3, 0};
  SamplingParams p;
  p.top_k = 2;
  apply_warpers(s, p);
  EXPECT_EQ(s, (std::vector<float>{kNegInf, 3, kNegInf, 3, kNegInf}));
  std::vector<float> t{1, 3, 2, 3, 0};
  p.top_k = 3;
  apply_warpers(t, p);
  EXPECT_EQ(t, (std::vector<float>{kNegInf, 3, 2, 3, kNegInf}));
}

TEST(LogitsProcessor, TopPKeepsTheSmallestSetAboveTheMass) {
  // probabilities 0.5, 0.25, 0.125, 0.125
  std::vector<float> s{std::log(0.5f), std::log(0.25f), std::log(0.125f), std::log(0.125f)};
  SamplingParams p;
  p.top_p = 0.7f;
  apply_warpers(s, p);
  EXPECT_GT(s[0], kNegInf);
  EXPECT_GT(s[1], kNegInf);
  EXPECT_EQ(s[2], kNegInf);
  EXPECT_EQ(s[3], kNegInf);
  std::vector<float> one{0.0f, 10.0f};
  p.top_p = 0.01f;  // always keeps the most likely token
  apply_warpers(one, p);
  EXPECT_EQ(one[0], kNegInf);
  EXPECT_EQ(one[1], 10.0f);
}

TEST(LogitsProcessor, MinPScalesWithTheTopProbability) {
  std::vector<float> s{std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplingParams p;
  p.min_p = 0.2f;  // threshold 0.12: drops 0.1 only
  apply_warpers(s, p);
  EXPECT_GT(s[1], kNegInf);
  EXPECT_EQ(s[2], kNegInf);
}

TEST(LogitsProcessor, TemperatureDivides) {
  std::vector<float> s{1.0f, -2.0f};
  SamplingParams p;
  p.temperature = 0.5f;
  apply_warpers(s, p);
  EXPECT_EQ(s, (std::vector<float>{2.0f, -4.0f}));
}

TEST(LogitsProcessor, ArgmaxTakesTheFirstOfTies) {
  const std::vector<float> s{1, 5, 5, 2};
  EXPECT_EQ(argmax(s), 1);
}

TEST(LogitsProcessor, SampleFollowsTheDistribution) {
  std::mt19937_64 rng(7);
  std::vector<float> s{kNegInf, 0.0f, kNegInf};
  for (int i = 0; i < 100; ++i) EXPECT_EQ(sample(s, rng), 1);
  // Two tokens at 3:1 odds.
  std::vector<float> t{std::log(3.0f), 0.0f};
  int zeros = 0;
  for (int i = 0; i < 20000; ++i) zeros += sample(t, rng) == 0;
  EXPECT_NEAR(zeros / 20000.0, 0.75, 0.02);
}

}  // namespace
}  // namespace anvil
