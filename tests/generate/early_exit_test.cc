// transformers' assistant_early_exit: the model's first N layers, its final norm and head
// draft for it. Their logits are transformers' with num_hidden_layers set to N
// (early-exit.safetensors), and assisted generation drafts and keeps what transformers' does,
// its settings read from the model's own generation config and the heuristic schedule's count
// carried to the model's next call (early-exit-steps.json; both from
// scripts/goldens/make_early_exit_goldens.py).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "expect_error.h"
#include "formats/mapped_file.h"
#include "models/decoder.h"
#include "speculation_goldens.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;
using Ids = std::vector<int64_t>;

const char* const kMain = "extra/qwen2-window-layers-tiny";

TEST(EarlyExit, FirstLayersLogitsAreTransformers) {
  const auto want = SafetensorsFile::open(test::data_dir() + "/extra/early-exit.safetensors");
  int checked = 0;
  for (const char* name : {kMain, "extra/smollm3-nope-tiny", "extra/gemma3-text-tiny"}) {
    ModelOptions f32;
    f32.dtype = DType::f32;
    const CausalLM model = CausalLM::from_pretrained(test::model_dir(name), f32);
    const Ids prompt =
        test::id_rows(SafetensorsFile::open(test::golden_path(name)), "input_ids_a")[0];
    const int64_t layers = model.decoder().config().num_hidden_layers;
    for (int64_t n = 1; n < layers; ++n) {
      SCOPED_TRACE(std::string(name) + " first " + std::to_string(n));
      const Decoder& first = model.decoder().first_layers(n);
      EXPECT_EQ(&first, &model.decoder().first_layers(n));  // made once
      StepInput step;
      step.batch = 1;
      step.seq = static_cast<int64_t>(prompt.size());
      step.ids = prompt;
      for (int32_t p = 0; p < static_cast<int32_t>(prompt.size()); ++p) step.positions.push_back(p);
      step.key_mask.assign(prompt.size(), 1);
      step.all_logits = true;
      KvCache cache = first.new_cache(1, step.seq);
      const std::vector<float> got = first.forward(step, cache).to_f32_vector();
      const std::vector<float> expected =
          want.load(std::string(name) + "/" + std::to_string(n)).to_f32_vector();
      ASSERT_EQ(got.size(), expected.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], expected[i], 1e-4f) << i;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 + 3 + 2);
}

// The fixture with a generation_config.json holding the assistant settings (transformers
// reads them from the assistant's config, which is this model's own).
CausalLM with_assistant_settings(const test::TempDir& dir, const nlohmann::json& settings) {
  nlohmann::json g =
      nlohmann::json::parse(read_text_file(test::model_dir(kMain) + "/generation_config.json"));
  g.update(settings);
  return test::fixture_with_generation_config(dir, kMain, g);
}

TEST(EarlyExit, StepsAreTransformers) {
  const auto golden = SafetensorsFile::open(test::golden_path(kMain));
  const Ids prompt = test::id_rows(golden, "input_ids_a")[0];
  const Ids whole = test::id_rows(golden, "gen_long_a")[0];
  const nlohmann::json cases = nlohmann::json::parse(
      read_text_file(test::data_dir() + "/extra/early-exit-steps.json"))["cases"];
  ASSERT_EQ(cases.size(), 5u);
  for (const nlohmann::json& c : cases) {
    const int64_t layers = c.at("layers");
    const std::string schedule = c.at("schedule");
    SCOPED_TRACE(std::to_string(layers) + " " + schedule);
    test::TempDir dir;
    const CausalLM model =
        with_assistant_settings(dir, {{"num_assistant_tokens", 5},
                                      {"num_assistant_tokens_schedule", schedule},
                                      {"assistant_confidence_threshold", c.at("threshold")}});
    for (const nlohmann::json& call : c.at("calls")) {
      const SpeculationStats want = test::speculation_totals(call);
      SpeculationStats stats;
      GenerateOptions o = test::greedy_exactly(40);
      o.assistant_early_exit = layers;
      o.speculation_stats = &stats;
      EXPECT_EQ(model.generate(prompt, o), whole);
      EXPECT_EQ(stats.steps, want.steps);
      EXPECT_EQ(stats.drafted, want.drafted);
      EXPECT_EQ(stats.accepted, want.accepted);
    }
  }
}

// generation_config.json's assistant_early_exit turns it on; the call's value wins.
TEST(EarlyExit, FromTheGenerationConfig) {
  const auto golden = SafetensorsFile::open(test::golden_path(kMain));
  const Ids prompt = test::id_rows(golden, "input_ids_a")[0];
  test::TempDir dir;
  const CausalLM model = with_assistant_settings(
      dir, {{"assistant_early_exit", 2}, {"assistant_confidence_threshold", 0.0}});
  SpeculationStats stats;
  GenerateOptions o = test::greedy_exactly(12);
  o.speculation_stats = &stats;
  const Ids whole = test::id_rows(golden, "gen_long_a")[0];
  EXPECT_EQ(model.generate(prompt, o),
            Ids(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(prompt.size() + 12)));
  EXPECT_GT(stats.steps, 0);
  EXPECT_GE(stats.drafted, stats.steps);
  o.assistant_early_exit = 9;
  expect_error([&] { model.generate(prompt, o); },
               "assistant_early_exit: 9 layers asked for, but the model has 3 (1 to 3)");
}

TEST(EarlyExit, Refusals) {
  const CausalLM model = CausalLM::from_pretrained(test::model_dir(kMain));
  const Ids prompt = {5, 6, 7};
  GenerateOptions o = test::greedy_exactly(4);
  o.assistant_early_exit = 0;
  expect_error([&] { model.generate(prompt, o); }, "assistant_early_exit must be at least 1");
  o.assistant_early_exit = 4;
  expect_error([&] { model.generate(prompt, o); }, "4 layers asked for, but the model has 3");
  o.assistant_early_exit = 1;
  o.assistant_model = &model;
  expect_error([&] { model.generate(prompt, o); },
               "assistant_early_exit: not with assistant_model");
  o.assistant_model = nullptr;
  o.prompt_lookup_num_tokens = 3;
  expect_error([&] { model.generate(prompt, o); }, "assistant_early_exit: not with prompt lookup");
  o.prompt_lookup_num_tokens.reset();
  o.num_beams = 2;
  expect_error([&] { model.generate(prompt, o); }, "assistant_early_exit: not with beam search");
}

}  // namespace
}  // namespace anvil
