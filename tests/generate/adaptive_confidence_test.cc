// The adaptive assistant confidence threshold: the threshold from the drafts' ROC curve is the
// one transformers takes from scikit-learn's roc_curve (roc-thresholds.json, from
// scripts/goldens/make_roc_threshold_goldens.py), and the drafts and kept tokens it is taken
// from are counted as transformers counts them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "expect_error.h"
#include "formats/mapped_file.h"
#include "generate/adaptive_confidence.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;

TEST(AdaptiveConfidence, ThresholdIsScikitLearns) {
  const nlohmann::json golden =
      nlohmann::json::parse(read_text_file(test::data_dir() + "/extra/roc-thresholds.json"));
  ASSERT_GT(golden.at("cases").size(), 30u);
  int i = 0;
  for (const nlohmann::json& c : golden.at("cases")) {
    const std::vector<float> probs = c.at("probs").get<std::vector<float>>();
    const std::vector<uint8_t> matches = c.at("matches").get<std::vector<uint8_t>>();
    const double want = c.at("threshold").is_null() ? std::numeric_limits<double>::infinity()
                                                    : c.at("threshold").get<double>();
    EXPECT_EQ(roc_cost_threshold(matches, probs), want) << "case " << i;
    ++i;
  }
}

TEST(AdaptiveConfidence, RefusesWhatRocCurveRefuses) {
  const std::vector<float> probs = {0.9f, 0.5f, 0.1f};
  expect_error(
      [&] {
        roc_cost_threshold(std::vector<uint8_t>{1, 0}, probs);
      },
      "2 outcomes for 3 probabilities");
  expect_error(
      [&] {
        roc_cost_threshold(std::vector<uint8_t>{1, 1, 1}, probs);
      },
      "needs at least one kept and one rejected draft");
  expect_error(
      [&] {
        roc_cost_threshold(std::vector<uint8_t>{0, 0, 0}, probs);
      },
      "needs at least one kept and one rejected draft");
  const std::vector<float> nan = {0.9f, std::nanf(""), 0.1f};
  expect_error(
      [&] {
        roc_cost_threshold(std::vector<uint8_t>{1, 0, 1}, nan);
      },
      "a drafted token's probability is nan");
}

// transformers' bookkeeping: each step's kept tokens count as matches, its first rejected one
// as a miss, the draft after that is dropped; the threshold moves only with more than five
// samples of which some were kept and some not.
TEST(AdaptiveConfidence, CountsStepsAsTransformers) {
  AdaptiveConfidence a(0.4f);
  std::vector<float> probs;
  std::vector<uint8_t> matches;
  const auto step = [&](std::vector<float> drafted, int64_t kept) {
    for (float p : drafted) a.drafted(p);
    for (int64_t j = 0; j < kept; ++j) probs.push_back(drafted[j]), matches.push_back(1);
    if (kept < static_cast<int64_t>(drafted.size())) {
      probs.push_back(drafted[kept]), matches.push_back(0);
    }
    a.checked(kept);
  };
  step({0.9f, 0.8f, 0.3f}, 3);     // all kept: no miss
  step({0.7f, 0.2f, 0.6f}, 1);     // 0.2 missed, 0.6 dropped
  EXPECT_EQ(a.threshold(), 0.4f);  // five samples
  step({0.95f}, 1);
  // Six: every kept token lies above the one miss, so the threshold is the lowest kept one.
  EXPECT_EQ(a.threshold(), 0.3f);
  step({0.5f, 0.45f}, 0);  // the first rejected: a miss, 0.45 dropped
  EXPECT_EQ(probs.size(), 7u);
  const double want = roc_cost_threshold(matches, probs);
  EXPECT_EQ(static_cast<double>(a.threshold()), want);
  // An empty draft (no tokens left to draft) changes nothing.
  a.checked(0);
  EXPECT_EQ(static_cast<double>(a.threshold()), want);
}

}  // namespace
}  // namespace anvil
