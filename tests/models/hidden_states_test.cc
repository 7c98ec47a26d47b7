// The last hidden states (transformers' last_hidden_state: after the final norm) through
// CausalLM::hidden_states and `anvil embed`, against transformers' goldens
// (scripts/goldens/make_hidden_state_goldens.py) on five fixtures, alone and left-padded; base
// models' checkpoints (Qwen3Model, Qwen2Model: no "model." prefix, no lm_head) loaded, the tied
// one giving the full checkpoint's logits and the untied one refusing logits by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "cli/cli_run.h"
#include "expect_error.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;

constexpr float kTolerance = 1e-4f;

CausalLM load(const std::string& dir) {
  ModelOptions o;
  o.dtype = DType::f32;
  return CausalLM::from_pretrained(dir, o);
}

std::vector<float> floats(const Tensor& t) {
  return t.to_f32_vector();
}

class HiddenStates : public ::testing::TestWithParam<std::string> {};

TEST_P(HiddenStates, AreTransformersLastHiddenState) {
  const std::string name = GetParam();
  const auto golden = SafetensorsFile::open(test::golden_path(name));
  const auto want = SafetensorsFile::open(test::data_dir() + "/extra/hidden-states.safetensors");
  const CausalLM model = load(test::model_dir(name));
  Batch a;
  a.input_ids = test::id_rows(golden, "input_ids_a");
  const Tensor got_a = model.hidden_states(a);
  const Tensor want_a = want.load(name + "/a");
  ASSERT_EQ(got_a.shape(), want_a.shape());
  const auto ga = floats(got_a), wa = floats(want_a);
  for (size_t i = 0; i < ga.size(); ++i) ASSERT_NEAR(ga[i], wa[i], kTolerance) << "a " << i;

  // The padded batch: rows' real positions only (padded ones are meaningless, as for logits).
  Batch b;
  b.input_ids = test::id_rows(golden, "input_ids_b");
  b.attention_mask = test::id_rows(golden, "attention_mask_b");
  const Tensor got_b = model.hidden_states(b);
  const Tensor want_b = want.load(name + "/b");
  ASSERT_EQ(got_b.shape(), want_b.shape());
  const auto gb = floats(got_b), wb = floats(want_b);
  const int64_t seq = got_b.size(1), hidden = got_b.size(2);
  int compared = 0;
  for (size_t r = 0; r < b.input_ids.size(); ++r) {
    for (int64_t t = 0; t < seq; ++t) {
      if (!b.attention_mask[r][static_cast<size_t>(t)]) continue;
      for (int64_t i = 0; i < hidden; ++i) {
        const size_t at = (r * static_cast<size_t>(seq) + static_cast<size_t>(t)) * hidden + i;
        ASSERT_NEAR(gb[at], wb[at], kTolerance) << "b row " << r << " position " << t;
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, static_cast<int>(b.input_ids.size()));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, HiddenStates,
                         ::testing::Values("qwen3-tiny", "qwen2-tiny", "llama-tiny",
                                           "extra/gemma3-text-tiny", "extra/olmo2-tiny"),
                         test::ParamName());

std::string base_dir(const std::string& name) {
  return test::data_dir() + "/extra/base-" + name;
}

TEST(BaseModelCheckpoint, GivesTransformersHiddenStates) {
  for (const std::string name : {"qwen3-tiny", "qwen2-tiny"}) {
    const auto golden = SafetensorsFile::open(base_dir(name) + "/golden.safetensors");
    const CausalLM model = load(base_dir(name) + "/model");
    Batch a;
    a.input_ids = test::id_rows(golden, "input_ids_a");
    const auto got = floats(model.hidden_states(a));
    const auto want = floats(golden.load("hidden_a"));
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], kTolerance) << name;
  }
}

TEST(BaseModelCheckpoint, TiedHeadGivesTheFullCheckpointsLogits) {
  const CausalLM base = load(base_dir("qwen3-tiny") + "/model");
  const CausalLM full = load(test::model_dir("qwen3-tiny"));
  Batch a;
  a.input_ids = {{1, 5, 9, 200, 7}};
  EXPECT_EQ(floats(base.logits(a)), floats(full.logits(a)));
  GenerateOptions o = test::greedy_exactly(5);
  EXPECT_EQ(base.generate(a.input_ids[0], o), full.generate(a.input_ids[0], o));
}

TEST(BaseModelCheckpoint, UntiedWithoutHeadRefusesLogits) {
  const CausalLM base = load(base_dir("qwen2-tiny") + "/model");
  Batch a;
  a.input_ids = {{1, 5, 9}};
  expect_error([&] { base.logits(a); }, "a base model's (no lm_head.weight");
  expect_error([&] { base.generate(a.input_ids[0], test::greedy_exactly(2)); },
               "gives hidden states");
}

std::vector<std::vector<float>> json_lines(const std::string& out) {
  std::vector<std::vector<float>> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    rows.push_back(nlohmann::json::parse(line).get<std::vector<float>>());
  }
  return rows;
}

TEST(EmbedCli, PoolsTheLastHiddenStates) {
  const auto golden = SafetensorsFile::open(base_dir("qwen2-tiny") + "/golden.safetensors");
  const auto ids = test::id_rows(golden, "input_ids_a")[0];
  const auto want = floats(golden.load("hidden_a"));
  const auto seq = static_cast<int64_t>(ids.size());
  const int64_t hidden = static_cast<int64_t>(want.size()) / seq;
  std::string list;
  for (int64_t id : ids) list += (list.empty() ? "" : ",") + std::to_string(id);
  const std::string base = "embed " + base_dir("qwen2-tiny") + "/model --dtype f32 --input-ids ";
  // Two rows: the prompt, and its first two tokens.
  test::CliRun run = test::run_cli(base + "'" + list + ";" + std::to_string(ids[0]) + "," +
                                   std::to_string(ids[1]) + "'");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto rows = json_lines(run.out);
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(static_cast<int64_t>(rows[0].size()), hidden);
  for (int64_t i = 0; i < hidden; ++i) {
    EXPECT_NEAR(rows[0][i], want[(seq - 1) * hidden + i], kTolerance) << "last " << i;
  }
  // Mean pooling, normalised.
  run = test::run_cli(base + list + " --pooling mean --normalize");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  rows = json_lines(run.out);
  ASSERT_EQ(rows.size(), 1u);
  std::vector<double> mean(static_cast<size_t>(hidden), 0.0);
  for (int64_t t = 0; t < seq; ++t) {
    for (int64_t i = 0; i < hidden; ++i) mean[i] += want[t * hidden + i] / static_cast<double>(seq);
  }
  double norm = 0.0, got_norm = 0.0;
  for (double x : mean) norm += x * x;
  norm = std::sqrt(norm);
  for (int64_t i = 0; i < hidden; ++i) {
    EXPECT_NEAR(rows[0][i], mean[i] / norm, kTolerance) << "mean " << i;
    got_norm += static_cast<double>(rows[0][i]) * rows[0][i];
  }
  EXPECT_NEAR(got_norm, 1.0, 1e-5);
}

// A folder with sentence-transformers' modules.json (mean pooling, then Normalize) embeds as
// --pooling mean --normalize does; the flags still override it.
TEST(EmbedCli, TakesTheFoldersSentenceTransformersPooling) {
  test::TempDir dir;
  for (const auto& e : std::filesystem::directory_iterator(base_dir("qwen2-tiny") + "/model")) {
    std::filesystem::copy(e.path(), dir.file(e.path().filename().string()));
  }
  std::ofstream(dir.file("modules.json"))
      << R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
             {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
             {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";
  std::filesystem::create_directories(dir.file("1_Pooling"));
  std::ofstream(dir.file("1_Pooling/config.json")) << R"({"pooling_mode_mean_tokens": true})";
  const std::string ids = " --dtype f32 --input-ids 5,17,300,2";
  const test::CliRun from_folder = test::run_cli("embed " + dir.path() + ids);
  const test::CliRun asked = test::run_cli("embed " + base_dir("qwen2-tiny") + "/model" + ids +
                                           " --pooling mean --normalize");
  ASSERT_EQ(from_folder.exit_code, 0) << from_folder.err;
  ASSERT_EQ(asked.exit_code, 0) << asked.err;
  EXPECT_EQ(from_folder.out, asked.out);
  const test::CliRun overridden =
      test::run_cli("embed " + dir.path() + ids + " --pooling last --no-normalize");
  const test::CliRun plain = test::run_cli("embed " + base_dir("qwen2-tiny") + "/model" + ids);
  ASSERT_EQ(overridden.exit_code, 0) << overridden.err;
  EXPECT_EQ(overridden.out, plain.out);
  EXPECT_NE(overridden.out, from_folder.out);
}

// Left-padded batches give each text the embedding it has alone (float32: within rounding).
TEST(EmbedCli, BatchesAsTextsAlone) {
  const std::string base = "embed " + base_dir("qwen2-tiny") + "/model --dtype f32 --input-ids '" +
                           "5,17,300,2,9,41;7,8;12,13,14,15' --pooling ";
  for (const char* pooling : {"last", "mean"}) {
    const test::CliRun alone = test::run_cli(base + pooling);
    const test::CliRun batched = test::run_cli(base + pooling + " --batch-size 2");
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    ASSERT_EQ(batched.exit_code, 0) << batched.err;
    const auto a = json_lines(alone.out), b = json_lines(batched.out);
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    for (size_t r = 0; r < a.size(); ++r) {
      ASSERT_EQ(a[r].size(), b[r].size());
      for (size_t i = 0; i < a[r].size(); ++i) {
        EXPECT_NEAR(a[r][i], b[r][i], kTolerance) << pooling << " row " << r << " value " << i;
      }
    }
  }
}

TEST(EmbedCli, Refusals) {
  const std::string m = base_dir("qwen2-tiny") + "/model";
  test::CliRun run = test::run_cli("embed " + m);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("give --text (one or more), --file or --input-ids"), std::string::npos)
      << run.err;
  run = test::run_cli("embed " + m + " --input-ids 1,2 --pooling median");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("pooling 'median'"), std::string::npos) << run.err;
  run = test::run_cli("embed " + m + " --input-ids 1,2 --normalize --no-normalize");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("not both"), std::string::npos) << run.err;
  run = test::run_cli("embed " + m + " --input-ids 1,2 --file /nonexistent/embed.txt");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("give --text"), std::string::npos) << run.err;
  run = test::run_cli("embed " + m + " --input-ids 1,2 --lines");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--lines: needs --file"), std::string::npos) << run.err;
  run = test::run_cli("embed " + m + " --input-ids 1,2 --batch-size 0");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--batch-size must be at least 1"), std::string::npos) << run.err;
  // A folder without a tokenizer cannot embed a text; it says so.
  run = test::run_cli("embed " + m + " --text hello");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("tokenizer"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace anvil
