// Ensemble verification (transformers' assistant_ensemble_weight; DIVERSE's static ensemble):
// greedy drafts checked against argmax(w p + (1 - w) q) give transformers' own tokens and steps
// (ensemble-steps.json, from scripts/goldens/make_ensemble_goldens.py, with the adaptive
// threshold where one above 0 was set, as scikit-learn was there), which are no longer plain
// greedy's; speculative sampling against the ensemble gives tokens distributed as
// w p + (1 - w) q; what it cannot take is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
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

const char* const kMain = "extra/qwen2-window-layers-tiny";

TEST(Ensemble, GreedyIsTransformers) {
  const Ids prompt =
      test::id_rows(SafetensorsFile::open(test::golden_path(kMain)), "input_ids_a")[0];
  const Ids plain = test::id_rows(SafetensorsFile::open(test::golden_path(kMain)), "gen_long_a")[0];
  const nlohmann::json cases = nlohmann::json::parse(
      read_text_file(test::data_dir() + "/extra/ensemble-steps.json"))["cases"];
  ASSERT_EQ(cases.size(), 5u);
  for (const nlohmann::json& c : cases) {
    const std::string name = c.at("assistant");
    const double weight = c.at("weight");
    SCOPED_TRACE(name + " " + std::to_string(weight));
    const nlohmann::json settings = {{"num_assistant_tokens", 5},
                                     {"assistant_confidence_threshold", c.at("threshold")},
                                     {"eos_token_id", 2}};
    const bool early_exit = name == "early_exit_2";
    test::TempDir main_dir, assistant_dir;
    const CausalLM model = early_exit
                               ? test::fixture_with_generation_config(main_dir, kMain, settings)
                               : CausalLM::from_pretrained(test::model_dir(kMain));
    std::optional<CausalLM> assistant;
    if (!early_exit)
      assistant.emplace(test::fixture_with_generation_config(assistant_dir, name, settings));
    SpeculationStats stats;
    GenerateOptions o = test::greedy_exactly(40);
    o.assistant_model = assistant ? &*assistant : nullptr;
    if (early_exit) o.assistant_early_exit = 2;
    o.assistant_ensemble_weight = weight;
    // The goldens' transformers had scikit-learn, so a separate assistant's threshold adapted.
    o.assistant_adaptive_confidence = !early_exit && c.at("threshold").get<double>() > 0;
    o.speculation_stats = &stats;
    const Ids got = model.generate(prompt, o);
    EXPECT_EQ(got, c.at("sequence").get<Ids>());
    EXPECT_NE(got, plain);  // the ensemble's tokens, not the model's alone
    const SpeculationStats want = test::speculation_totals(c);
    EXPECT_EQ(stats.steps, want.steps);
    EXPECT_EQ(stats.drafted, want.drafted);
    EXPECT_EQ(stats.accepted, want.accepted);
  }
}

// argmax of w p + (1 - w) q: the model's pick where it leads by enough, the assistant's where
// the mixture favours it.
TEST(Ensemble, PicksTheMixturesArgmax) {
  const std::vector<float> scores = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  const std::vector<float> q = {0.0f, 0.9f, 0.1f};
  EXPECT_EQ(ensemble_pick(scores, q, 0.9), 0);  // 0.45 against 0.36
  EXPECT_EQ(ensemble_pick(scores, q, 0.5), 1);  // 0.25 against 0.6
}

// Drafts from q, checked against the ensemble, come out distributed as w p + (1 - w) q, and a
// draft is kept with probability sum(min(v, q)).
TEST(Ensemble, SamplingFollowsTheMixture) {
  const std::vector<std::pair<std::vector<float>, std::vector<float>>> cases = {
      {{0.5f, 0.3f, 0.2f, 0.0f}, {0.1f, 0.2f, 0.3f, 0.4f}},
      {{0.9f, 0.05f, 0.05f}, {0.05f, 0.05f, 0.9f}},
  };
  std::mt19937_64 rng(11);
  for (const double w : {0.3, 0.8}) {
    for (const auto& [p, q] : cases) {
      SCOPED_TRACE(w);
      test::expect_drafts_follow_target(p, q, w, rng);
    }
  }
}

TEST(Ensemble, Refusals) {
  const CausalLM model = CausalLM::from_pretrained(test::model_dir(kMain));
  const Ids prompt = {5, 6, 7};
  GenerateOptions o = test::greedy_exactly(4);
  o.assistant_model = &model;
  for (double w : {0.0, 1.0, -0.5, 2.0}) {
    o.assistant_ensemble_weight = w;
    expect_error([&] { model.generate(prompt, o); }, "assistant_ensemble_weight must be in (0, 1)");
  }
  o.assistant_ensemble_weight = 0.5;
  o.assistant_model = nullptr;
  expect_error([&] { model.generate(prompt, o); },
               "assistant_ensemble_weight: needs assistant_model or assistant_early_exit");
  o.prompt_lookup_num_tokens = 3;
  expect_error([&] { model.generate(prompt, o); },
               "assistant_ensemble_weight: not with prompt lookup");
  o.prompt_lookup_num_tokens.reset();
  const CausalLM larger = CausalLM::from_pretrained(test::model_dir("extra/qwen2-yarn-tiny"));
  o.assistant_model = &larger;
  expect_error([&] { model.generate(prompt, o); },
               "assistant_ensemble_weight and an assistant of another vocabulary size (320 "
               "against 300)");
}

// generation_config.json's assistant_ensemble_weight is read (the main model's, as transformers
// reads it from the generate call's config), and checked there.
TEST(Ensemble, FromTheGenerationConfig) {
  const Ids prompt =
      test::id_rows(SafetensorsFile::open(test::golden_path(kMain)), "input_ids_a")[0];
  test::TempDir dir;
  const CausalLM model =
      test::fixture_with_generation_config(dir, kMain, {{"assistant_ensemble_weight", 0.3}});
  const CausalLM assistant = CausalLM::from_pretrained(test::model_dir("extra/olmo2-tiny"));
  GenerateOptions o = test::greedy_exactly(40);
  o.assistant_model = &assistant;
  o.num_assistant_tokens = 5;
  o.assistant_confidence_threshold = 0.0f;
  const nlohmann::json cases = nlohmann::json::parse(
      read_text_file(test::data_dir() + "/extra/ensemble-steps.json"))["cases"];
  EXPECT_EQ(model.generate(prompt, o), cases[3].at("sequence").get<Ids>());  // olmo2, 0.3
  test::TempDir bad;
  const CausalLM wrong =
      test::fixture_with_generation_config(bad, kMain, {{"assistant_ensemble_weight", 1.5}});
  expect_error([&] { wrong.generate(prompt, o); }, "assistant_ensemble_weight must be in (0, 1)");
}

}  // namespace
}  // namespace anvil
