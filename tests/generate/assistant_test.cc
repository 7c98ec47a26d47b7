// Speculative decoding with an assistant model (transformers' assistant_model): greedy tokens
// are transformers' goldens whatever the assistant (itself, another model of the vocabulary, a
// larger vocabulary), its drafts are kept where it agrees; sampling is speculative sampling,
// whose pairs of tokens follow the model's own distribution; what it cannot take is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "expect_error.h"
#include "formats/mapped_file.h"
#include "generate/speculative.h"
#include "speculation_goldens.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;
using Ids = std::vector<int64_t>;

class Assistant : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const auto golden = SafetensorsFile::open(test::golden_path("extra/qwen2-window-layers-tiny"));
    a_ = new Ids(test::id_rows(golden, "input_ids_a")[0]);
    whole_ = new Ids(test::id_rows(golden, "gen_long_a")[0]);
    model_ =
        new CausalLM(CausalLM::from_pretrained(test::model_dir("extra/qwen2-window-layers-tiny")));
  }
  static void TearDownTestSuite() {
    delete a_;
    delete whole_;
    delete model_;
  }
  static GenerateOptions greedy(const CausalLM& assistant, SpeculationStats* stats) {
    GenerateOptions o = test::greedy_exactly(40);
    o.assistant_model = &assistant;
    o.num_assistant_tokens = 6;
    o.assistant_confidence_threshold = 0.0f;  // random weights are never confident
    o.speculation_stats = stats;
    return o;
  }
  static inline Ids *a_ = nullptr, *whole_ = nullptr;
  static inline CausalLM* model_ = nullptr;
};

// The model as its own assistant agrees with itself: every draft is kept (up to rounding
// between one-token and several-token steps), each step gives seven tokens.
TEST_F(Assistant, ItselfKeepsItsDrafts) {
  SpeculationStats stats;
  EXPECT_EQ(model_->generate(*a_, greedy(*model_, &stats)), *whole_);
  EXPECT_GT(stats.steps, 0);
  EXPECT_GE(stats.accepted * 10, stats.drafted * 9);
  EXPECT_LE(stats.steps, 8);  // 39 tokens after the first, 7 a step
}

// Other assistants change how many drafts are kept, never the tokens: one of the same
// vocabulary, and one whose larger vocabulary's extra ids stop its drafts.
TEST_F(Assistant, OtherAssistantsGiveTheSameTokens) {
  for (const char* name :
       {"extra/olmo2-tiny", "extra/llama-yarn-params-tiny", "extra/qwen2-yarn-tiny"}) {
    const CausalLM other = CausalLM::from_pretrained(test::model_dir(name));
    SpeculationStats stats;
    EXPECT_EQ(model_->generate(*a_, greedy(other, &stats)), *whole_) << name;
    EXPECT_LE(stats.accepted, stats.drafted) << name;
    EXPECT_GT(stats.steps, 0) << name;
  }
}

// transformers' steps (scripts/goldens/make_assistant_schedule_goldens.py): assistants whose
// generation_config sets num_assistant_tokens 3, a threshold of 0 and each schedule, two calls
// in a row, draft and keep what transformers' do. The settings come from the assistant's
// config alone (the main model's has none), and the heuristic schedule carries its length
// into the second call.
TEST_F(Assistant, StepsAndSchedulesAreTransformers) {
  const nlohmann::json golden =
      nlohmann::json::parse(read_text_file(test::data_dir() + "/extra/speculative-steps.json"));
  for (const nlohmann::json& c : golden.at("assistant")) {
    const std::string name = c.at("assistant"), schedule = c.at("schedule");
    SCOPED_TRACE(name + " " + schedule);
    test::TempDir dir;
    const CausalLM assistant =
        test::fixture_with_generation_config(dir, name,
                                             {{"num_assistant_tokens", 3},
                                              {"num_assistant_tokens_schedule", schedule},
                                              {"assistant_confidence_threshold", 0.0}});
    for (const nlohmann::json& call : c.at("calls")) {
      const SpeculationStats want = test::speculation_totals(call);
      SpeculationStats stats;
      GenerateOptions o = test::greedy_exactly(40);
      o.assistant_model = &assistant;
      o.speculation_stats = &stats;
      EXPECT_EQ(model_->generate(*a_, o), *whole_);
      EXPECT_EQ(stats.steps, want.steps);
      EXPECT_EQ(stats.drafted, want.drafted);
      EXPECT_EQ(stats.accepted, want.accepted);
    }
  }
}

// The adaptive threshold (scripts/goldens/make_adaptive_confidence_goldens.py): transformers
// with scikit-learn, assistants whose generation_config sets 5 tokens, a starting threshold and a
// schedule. An assistant that agrees with the model now and then (its weights with a little
// noise) moves the threshold every step; one never kept and the model itself leave it alone.
// Drafts, kept tokens and the threshold the call ends with are transformers'. The threshold is
// a drafted token's probability, whose last bits differ between the two runtimes' arithmetic.
TEST_F(Assistant, AdaptiveConfidenceIsTransformers) {
  const nlohmann::json golden = nlohmann::json::parse(
      read_text_file(test::data_dir() + "/extra/adaptive-confidence-steps.json"));
  bool moved = false;
  for (const nlohmann::json& c : golden.at("cases")) {
    const std::string name = c.at("assistant"), schedule = c.at("schedule");
    const double start = c.at("threshold");
    SCOPED_TRACE(name + " " + schedule + " " + std::to_string(start));
    test::TempDir dir;
    const CausalLM assistant =
        test::fixture_with_generation_config(dir, name,
                                             {{"num_assistant_tokens", 5},
                                              {"num_assistant_tokens_schedule", schedule},
                                              {"assistant_confidence_threshold", start}});
    const SpeculationStats want = test::speculation_totals(c);
    const nlohmann::json& last = c.at("thresholds").back();
    const double end = last.is_null() ? INFINITY : last.get<double>();
    moved |= end != static_cast<double>(static_cast<float>(start));
    SpeculationStats stats;
    GenerateOptions o = test::greedy_exactly(40);
    o.assistant_model = &assistant;
    o.assistant_adaptive_confidence = true;
    o.speculation_stats = &stats;
    EXPECT_EQ(model_->generate(*a_, o), *whole_);
    EXPECT_EQ(stats.steps, want.steps);
    EXPECT_EQ(stats.drafted, want.drafted);
    EXPECT_EQ(stats.accepted, want.accepted);
    EXPECT_NEAR(stats.assistant_confidence_threshold, end, end * 1e-5);
    // Without adaptation the threshold stays where it started.
    o.assistant_adaptive_confidence = false;
    EXPECT_EQ(model_->generate(*a_, o), *whole_);
    EXPECT_EQ(stats.assistant_confidence_threshold, static_cast<float>(start));
  }
  EXPECT_TRUE(moved);
}

// The confidence threshold cuts drafts short: with 1, every draft is one token.
TEST_F(Assistant, ConfidenceThresholdShortensDrafts) {
  SpeculationStats stats;
  GenerateOptions o = greedy(*model_, &stats);
  o.assistant_confidence_threshold = 1.0f;
  EXPECT_EQ(model_->generate(*a_, o), *whole_);
  EXPECT_EQ(stats.drafted, stats.steps);
}

// Speculative sampling: the first two new tokens (the first drawn by the check of a one-token
// draft that follows the prompt, the second by that check's next row where the draft is kept,
// else by a step without a draft) follow the model's own distribution: temperature 0.7 and
// top-k 3 give nine pairs, whose
// exact probabilities come from the model's logits. Two assistants: the same weights in bf16
// (nearly the model's probabilities: drafts mostly kept) and another model (whose picks are
// mostly outside the model's top 3: drafts mostly replaced by the residual draw).
TEST_F(Assistant, SpeculativeSamplingKeepsTheModelsDistribution) {
  const float temperature = 0.7f;
  const auto top3 = [&](const Tensor& logits, int64_t row) {  // (token, probability) x 3
    const std::vector<float> all = logits.to_f32_vector();
    const int64_t vocab = logits.size(-1);
    std::vector<std::pair<float, int64_t>> v;
    for (int64_t i = 0; i < vocab; ++i) v.push_back({all[row * vocab + i] / temperature, i});
    std::partial_sort(v.begin(), v.begin() + 3, v.end(), std::greater<>());
    double total = 0;
    for (int i = 0; i < 3; ++i) total += std::exp(v[i].first - v[0].first);
    std::vector<std::pair<int64_t, double>> out;
    for (int i = 0; i < 3; ++i) {
      out.push_back({v[i].second, std::exp(v[i].first - v[0].first) / total});
    }
    return out;
  };
  Batch prompt;
  prompt.input_ids = {*a_};
  const int64_t last = static_cast<int64_t>(a_->size()) - 1;
  std::map<std::pair<int64_t, int64_t>, double> exact;
  for (const auto& [t1, p1] : top3(model_->logits(prompt), last)) {
    Batch longer;
    longer.input_ids = {*a_};
    longer.input_ids[0].push_back(t1);
    for (const auto& [t2, p2] : top3(model_->logits(longer), last + 1)) exact[{t1, t2}] = p1 * p2;
  }
  ModelOptions bf16;
  bf16.dtype = DType::bf16;
  const CausalLM near =
      CausalLM::from_pretrained(test::model_dir("extra/qwen2-window-layers-tiny"), bf16);
  const CausalLM other = CausalLM::from_pretrained(test::model_dir("extra/olmo2-tiny"));
  for (const CausalLM* assistant : {&near, &other}) {
    SCOPED_TRACE(assistant == &near ? "bf16 self" : "olmo2");
    constexpr int kRuns = 3000;
    std::map<std::pair<int64_t, int64_t>, int> seen;
    SpeculationStats stats, total;
    for (int seed = 0; seed < kRuns; ++seed) {
      GenerateOptions o;
      o.max_new_tokens = 2;
      o.min_new_tokens = 2;
      o.do_sample = true;
      o.temperature = temperature;
      o.top_k = 3;
      o.seed = static_cast<uint64_t>(seed);
      o.assistant_model = assistant;
      o.assistant_confidence_threshold = 0.0f;
      o.speculation_stats = &stats;
      const Ids out = model_->generate(*a_, o);
      ++seen[{out[a_->size()], out[a_->size() + 1]}];
      total.drafted += stats.drafted;
      total.accepted += stats.accepted;
    }
    EXPECT_EQ(total.drafted, kRuns);  // one token drafted a run
    if (assistant == &near) {
      EXPECT_GT(total.accepted, kRuns / 2);
    } else {
      EXPECT_LT(total.accepted, kRuns / 2);
    }
    for (const auto& [pair, p] : exact) {
      const double got = static_cast<double>(seen[pair]) / kRuns;
      // Four standard errors of a frequency over kRuns draws.
      EXPECT_NEAR(got, p, 4 * std::sqrt(p * (1 - p) / kRuns) + 1e-3)
          << pair.first << "," << pair.second;
    }
    int outside = 0;
    for (const auto& [pair, n] : seen) outside += exact.count(pair) ? 0 : n;
    EXPECT_EQ(outside, 0);
  }
}

// The check at one position: tokens drafted from q come out distributed as p, for a q that
// overlaps p, one that puts mass where p has none, and q = p (every draft kept).
TEST(SpeculativePick, DraftsFromQComeOutAsP) {
  const std::vector<std::pair<std::vector<float>, std::vector<float>>> cases = {
      {{0.5f, 0.3f, 0.2f, 0.0f}, {0.2f, 0.2f, 0.4f, 0.2f}},
      {{0.1f, 0.6f, 0.3f, 0.0f}, {0.7f, 0.1f, 0.1f, 0.1f}},
      {{0.25f, 0.25f, 0.25f, 0.25f}, {0.25f, 0.25f, 0.25f, 0.25f}},
  };
  std::mt19937_64 rng(7);
  for (const auto& [p, q] : cases) test::expect_drafts_follow_target(p, q, std::nullopt, rng);
}

TEST_F(Assistant, Refusals) {
  GenerateOptions o = greedy(*model_, nullptr);
  o.prompt_lookup_num_tokens = 3;
  expect_error([&] { model_->generate(*a_, o); }, "assistant_model: not with prompt lookup");
  o = greedy(*model_, nullptr);
  o.num_beams = 2;
  expect_error([&] { model_->generate(*a_, o); }, "assistant_model: not with beam search");
  const CausalLM larger = CausalLM::from_pretrained(test::model_dir("extra/qwen2-yarn-tiny"));
  o = greedy(larger, nullptr);
  o.do_sample = true;
  expect_error([&] { model_->generate(*a_, o); }, "another vocabulary size (320 against 300)");
  // A smaller vocabulary cannot take the model's ids.
  const CausalLM smaller = CausalLM::from_pretrained(test::model_dir("extra/llama-dynamic-tiny"));
  o = greedy(smaller, nullptr);
  expect_error([&] { model_->generate(*a_, o); }, "outside the assistant's vocabulary of 256");
  o = greedy(*model_, nullptr);
  o.num_assistant_tokens = 0;
  expect_error([&] { model_->generate(*a_, o); }, "num_assistant_tokens must be at least 1");
  o = greedy(*model_, nullptr);
  o.assistant_confidence_threshold = 1.5f;
  expect_error([&] { model_->generate(*a_, o); }, "assistant_confidence_threshold must be in");
  o = greedy(*model_, nullptr);  // its threshold is 0: off
  o.assistant_adaptive_confidence = true;
  expect_error([&] { model_->generate(*a_, o); },
               "assistant_adaptive_confidence: needs assistant_confidence_threshold above 0");
  o = test::greedy_exactly(4);
  o.assistant_adaptive_confidence = true;
  expect_error([&] { model_->generate(*a_, o); },
               "assistant_adaptive_confidence: needs assistant_model");
}

}  // namespace
}  // namespace anvil
