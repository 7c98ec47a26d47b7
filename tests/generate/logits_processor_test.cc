// transformers' logits processors, one behaviour at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

#include <nlohmann/json.hpp>

#include "descending_order.h"
#include "formats/mapped_file.h"
#include "generate/logits_processor.h"
#include "test_data.h"

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

// The warpers and the draw written over the whole vocabulary, as transformers defines them: the
// library works on the live tokens only and must give exactly these scores and these draws.
std::vector<double> whole_softmax(const std::vector<float>& s) {
  const float m = *std::max_element(s.begin(), s.end());
  std::vector<double> p(s.size());
  double sum = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    p[i] = s[i] == kNegInf ? 0.0 : std::exp(static_cast<double>(s[i]) - m);
    sum += p[i];
  }
  for (double& v : p) v /= sum;
  return p;
}

void whole_warpers(std::vector<float>& scores, const SamplingParams& p) {
  const auto n = static_cast<int64_t>(scores.size());
  if (p.temperature != 1.0f) {
    for (float& s : scores) s /= p.temperature;
  }
  if (p.top_k > 0 && p.top_k < n) {
    std::vector<float> sorted(scores);
    std::nth_element(sorted.begin(), sorted.begin() + (p.top_k - 1), sorted.end(),
                     std::greater<float>());
    const float threshold = sorted[p.top_k - 1];
    for (float& s : scores) {
      if (s < threshold) s = kNegInf;
    }
  }
  if (p.top_p < 1.0f) {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
    const std::vector<double> probs = whole_softmax(scores);
    double cumulative = 0;
    for (int64_t i = 0; i < n - 1; ++i) {
      cumulative += probs[order[i]];
      if (cumulative > 1.0 - p.top_p) break;
      scores[order[i]] = kNegInf;
    }
  }
  if (p.min_p > 0.0f) {
    const std::vector<double> probs = whole_softmax(scores);
    const double top = *std::max_element(probs.begin(), probs.end());
    for (int64_t i = 0; i < n; ++i) {
      if (probs[i] < p.min_p * top) scores[i] = kNegInf;
    }
  }
}

int64_t whole_sample(const std::vector<float>& scores, std::mt19937_64& rng) {
  const std::vector<double> probs = whole_softmax(scores);
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  double cumulative = 0;
  int64_t last = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0.0) continue;
    cumulative += probs[i];
    last = static_cast<int64_t>(i);
    if (u < cumulative) return last;
  }
  return last;
}

TEST(LogitsProcessor, WarpersAndDrawMatchTheWholeVocabularyDefinitions) {
  std::mt19937_64 gen(11);
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t n = 1 + static_cast<int64_t>(gen() % 3000);
    std::vector<float> scores(static_cast<size_t>(n));
    std::normal_distribution<float> d(0.0f, 1.0f + static_cast<float>(trial % 7));
    for (float& v : scores) v = d(gen);
    // Ties (rounded scores), tokens already removed, and sometimes a huge spread.
    if (trial % 3 == 0) {
      for (float& v : scores) v = std::round(v * 2.0f) / 2.0f;
    }
    for (int64_t i = 0; i < n / 10; ++i) scores[gen() % n] = kNegInf;
    scores[gen() % n] = 5.0f;  // at least one live token
    if (trial % 11 == 0) scores[gen() % n] = 900.0f;
    SamplingParams p;
    p.do_sample = true;
    p.temperature = trial % 4 == 0 ? 1.0f : 0.3f + 0.2f * static_cast<float>(trial % 5);
    p.top_k = trial % 5 == 0 ? 0 : 1 + static_cast<int64_t>(gen() % 80);
    p.top_p = trial % 3 == 1 ? 1.0f : 0.05f + 0.9f * static_cast<float>(gen() % 100) / 100.0f;
    p.min_p = trial % 4 == 2 ? 0.05f : 0.0f;
    std::vector<float> fast(scores), whole(scores);
    apply_warpers(fast, p);
    whole_warpers(whole, p);
    ASSERT_EQ(fast, whole) << "trial " << trial;
    std::mt19937_64 r1(static_cast<uint64_t>(trial)), r2(static_cast<uint64_t>(trial));
    for (int draw = 0; draw < 20; ++draw) {
      ASSERT_EQ(sample(fast, r1), whole_sample(whole, r2)) << "trial " << trial;
    }
  }
}

// Top-p alone over a vocabulary-sized row: the selection by mass (many rounds before the last
// sort) keeps exactly the sorted definition's tokens, on peaked rows (a small nucleus), flat
// ones (most of the row) and rows of many ties.
TEST(LogitsProcessor, TopPOverAWholeVocabularyMatchesTheSortedDefinition) {
  std::mt19937_64 gen(23);
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t n = 20000 + static_cast<int64_t>(gen() % 30000);
    std::vector<float> scores(static_cast<size_t>(n));
    const float spread = trial % 3 == 0 ? 0.05f : (trial % 3 == 1 ? 2.0f : 5.0f);
    std::normal_distribution<float> d(0.0f, spread);
    for (float& v : scores) v = d(gen);
    if (trial % 4 == 3) {
      for (float& v : scores) v = std::round(v * 8.0f) / 8.0f;
    }
    for (int64_t i = 0; i < n / 50; ++i) scores[gen() % n] = kNegInf;
    SamplingParams p;
    p.do_sample = true;
    p.temperature = trial % 2 == 0 ? 1.0f : 0.7f;
    p.top_k = 0;
    p.top_p = 0.05f + 0.9f * static_cast<float>(gen() % 100) / 100.0f;
    std::vector<float> fast(scores), whole(scores);
    apply_warpers(fast, p);
    whole_warpers(whole, p);
    ASSERT_EQ(fast, whole) << "trial " << trial << " n " << n << " top_p " << p.top_p;
  }
}

// Whether the top_k-th and (top_k + 1)-th candidates are equal after the temperature (a tie at
// top-k's cut).
bool warm_tie(const std::vector<float>& values, const SamplingParams& p) {
  const auto warm = [&](float v) { return p.temperature != 1.0f ? v / p.temperature : v; };
  const auto k = static_cast<size_t>(p.top_k);
  return warm(values[k - 1]) == warm(values[k]);
}

// Sampling from a row's top_k + 1 candidates (what a device returns) gives the whole row's token
// with the same draws, or declines when the candidates cannot decide (a tie at the cut after the
// temperature, NaN); rows with many ties and low temperatures make both cases frequent.
TEST(LogitsProcessor, CandidatesGiveTheWholeRowsToken) {
  std::mt19937_64 gen(5);
  int decided = 0, declined_at_k1 = 0, decided_past_tie = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t n = 30 + static_cast<int64_t>(gen() % 2000);
    std::vector<float> scores(static_cast<size_t>(n));
    std::normal_distribution<float> d(0.0f, 2.0f);
    for (float& v : scores) v = d(gen);
    if (trial % 2 == 0) {
      for (float& v : scores) v = std::round(v * 4.0f) / 4.0f;  // many ties
    }
    for (int64_t i = 0; i < n / 20; ++i) scores[gen() % n] = kNegInf;
    if (trial % 37 == 0) scores[gen() % n] = std::numeric_limits<float>::quiet_NaN();
    SamplingParams p;
    p.do_sample = true;
    p.temperature = trial % 3 == 0 ? 1.0f : 0.2f + 0.3f * static_cast<float>(trial % 4);
    p.top_k = 1 + static_cast<int64_t>(gen() % 25);
    p.top_p = trial % 2 == 1 ? 1.0f : 0.1f + 0.85f * static_cast<float>(gen() % 100) / 100.0f;
    p.min_p = trial % 5 == 3 ? 0.05f : 0.0f;
    // The candidates as ops::top_k defines them: top_k + 1 of them, or more (what generate
    // reads), which decides ties at the cut that top_k + 1 cannot.
    const std::vector<int64_t> order = test::descending_order(scores.data(), n);
    const int64_t extra = trial % 4 < 2 ? 0 : 1 + static_cast<int64_t>(gen() % 40);
    const auto count = static_cast<size_t>(std::min(n, p.top_k + 1 + extra));
    std::vector<float> values(count);
    std::vector<int64_t> indices(order.begin(), order.begin() + static_cast<int64_t>(count));
    for (size_t j = 0; j < count; ++j) values[j] = scores[indices[j]];

    std::mt19937_64 r1(static_cast<uint64_t>(trial)), r2(static_cast<uint64_t>(trial));
    const std::optional<int64_t> got = sample_from_candidates(values, indices, p, r1);
    if (!got) {
      // Only for a NaN, or every candidate at or above the top_k-th after the temperature.
      const auto warm = [&](float v) { return p.temperature != 1.0f ? v / p.temperature : v; };
      const bool all_kept = warm(values.back()) >= warm(values[static_cast<size_t>(p.top_k - 1)]);
      const bool nan =
          std::any_of(values.begin(), values.end(), [](float v) { return std::isnan(v); });
      EXPECT_TRUE(nan || all_kept) << "declined without a reason, trial " << trial;
      if (!nan && extra == 0) ++declined_at_k1;
      continue;
    }
    if (extra > 0 && warm_tie(values, p)) ++decided_past_tie;
    ++decided;
    std::vector<float> whole(scores);
    apply_warpers(whole, p);
    EXPECT_EQ(*got, sample(whole, r2)) << "trial " << trial;
    EXPECT_EQ(r1(), r2()) << "the draws went out of step, trial " << trial;
  }
  EXPECT_GT(decided, 200);
  EXPECT_GT(declined_at_k1, 5);    // ties at the cut with top_k + 1 candidates
  EXPECT_GT(decided_past_tie, 5);  // the same kind of tie decided by more candidates
}

}  // namespace
}  // namespace anvil

namespace anvil {
namespace {

// Typical, epsilon and eta sampling keep what transformers' warpers keep
// (scripts/goldens/make_warper_goldens.py: random rows, after temperature and top-k where set),
// and every warper keeps min_tokens_to_keep (beam sampling's) where its cut would keep fewer.
TEST(LogitsProcessorWarpers, TypicalEpsilonEtaKeepWhatTransformersKeeps) {
  const auto cases =
      nlohmann::json::parse(read_text_file(test::data_dir() + "/extra/warpers.json"));
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    SCOPED_TRACE(c["params"].dump());
    SamplingParams p;
    p.do_sample = true;
    const auto& q = c["params"];
    p.temperature = q.value("temperature", 1.0f);
    p.top_k = q.value("top_k", int64_t{0});
    p.typical_p = q.value("typical_p", 1.0f);
    p.epsilon_cutoff = q.value("epsilon_cutoff", 0.0f);
    p.eta_cutoff = q.value("eta_cutoff", 0.0f);
    p.top_p = q.value("top_p", 1.0f);
    p.min_p = q.value("min_p", 0.0f);
    p.min_tokens_to_keep = q.value("min_tokens_to_keep", int64_t{1});
    std::vector<float> scores = c["scores"].get<std::vector<float>>();
    apply_warpers(scores, p);
    std::vector<int64_t> kept;
    for (size_t i = 0; i < scores.size(); ++i) {
      if (std::isfinite(scores[i])) kept.push_back(static_cast<int64_t>(i));
    }
    EXPECT_EQ(kept, c["kept"].get<std::vector<int64_t>>());
  }
}

}  // namespace
}  // namespace anvil
