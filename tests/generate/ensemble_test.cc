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

// A fixture with a generation_config.json of these assistant settings.
CausalLM with_settings(const test::TempDir& dir, const std::string& name,
                       const nlohmann::json& settings) {
  for (const char* file : {"config.json", "model.safetensors"}) {
    std::filesystem::create_symlink(test::model_dir(name) + "/" + file, dir.file(file));
  }
  std::ofstream(dir.file("generation_config.json")) << settings.dump();
  return CausalLM::from_pretrained(dir.path());
}

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
    const CausalLM model = early_exit ? with_settings(main_dir, kMain, settings)
                                      : CausalLM::from_pretrained(test::model_dir(kMain));
    std::optional<CausalLM> assistant;
    if (!early_exit) assistant.emplace(with_settings(assistant_dir, name, settings));
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
      std::vector<float> scores;
      for (float x : p) scores.push_back(x > 0 ? std::log(x) : -INFINITY);
      constexpr int kDraws = 200000;
      std::vector<int> seen(p.size());
      int kept = 0;
      std::discrete_distribution<int64_t> from_q(q.begin(), q.end());
      for (int i = 0; i < kDraws; ++i) {
        const int64_t drafted = from_q(rng);
        const int64_t out = speculative_pick(scores, drafted, q, rng, w);
        ++seen[static_cast<size_t>(out)];
        kept += out == drafted;
      }
      double overlap = 0;
      for (size_t v = 0; v < p.size(); ++v) {
        const double mixture = w * p[v] + (1 - w) * q[v];
        EXPECT_NEAR(static_cast<double>(seen[v]) / kDraws, mixture, 0.005) << w << " " << v;
        overlap += std::min(mixture, static_cast<double>(q[v]));
      }
      EXPECT_NEAR(static_cast<double>(kept) / kDraws, overlap, 0.005) << w;
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
  const CausalLM model = with_settings(dir, kMain, {{"assistant_ensemble_weight", 0.3}});
  const CausalLM assistant = CausalLM::from_pretrained(test::model_dir("extra/olmo2-tiny"));
  GenerateOptions o = test::greedy_exactly(40);
  o.assistant_model = &assistant;
  o.num_assistant_tokens = 5;
  o.assistant_confidence_threshold = 0.0f;
  const nlohmann::json cases = nlohmann::json::parse(
      read_text_file(test::data_dir() + "/extra/ensemble-steps.json"))["cases"];
  EXPECT_EQ(model.generate(prompt, o), cases[3].at("sequence").get<Ids>());  // olmo2, 0.3
  test::TempDir bad;
  const CausalLM wrong = with_settings(bad, kMain, {{"assistant_ensemble_weight", 1.5}});
  expect_error([&] { wrong.generate(prompt, o); }, "assistant_ensemble_weight must be in (0, 1)");
}

}  // namespace
}  // namespace anvil
