// The CLI contract other checks drive: `anvil logits` and `anvil generate` give transformers'
// numbers; errors are one line on stderr and a non-zero exit.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "anvil/tokenizer.h"
#include "cli_run.h"
#include "formats/mapped_file.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::TempDir;

using test::CliRun;

CliRun run(const std::string& args) {
  return test::run_cli(args);
}

std::string join_rows(const std::vector<std::vector<int64_t>>& rows, char col, char row) {
  std::string s;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (r) s += row;
    for (size_t i = 0; i < rows[r].size(); ++i) {
      if (i) s += col;
      s += std::to_string(rows[r][i]);
    }
  }
  return s;
}

void expect_one_line_error(const CliRun& r, const std::string& fragment) {
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("anvil: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
}

class Cli : public ::testing::TestWithParam<std::string> {};

TEST_P(Cli, LogitsMatchTransformers) {
  const auto golden = SafetensorsFile::open(test::golden_path(GetParam()));
  TempDir dir;
  const auto ids = test::id_rows(golden, "input_ids_b");
  const auto mask = test::id_rows(golden, "attention_mask_b");
  const CliRun r = run("logits " + test::model_dir(GetParam()) + " --input-ids \"" +
                       join_rows(ids, ',', ';') + "\" --attention-mask \"" +
                       join_rows(mask, ',', ';') + "\" --out " + dir.file("l.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto out = SafetensorsFile::open(dir.file("l.safetensors"));
  ASSERT_EQ(out.entries().size(), 1u);
  const Tensor got = out.load("logits");
  const Tensor want = golden.load("logits_b");
  ASSERT_EQ(got.dtype(), DType::f32);
  ASSERT_EQ(got.shape(), want.shape());
  const auto g = got.to_f32_vector(), w = want.to_f32_vector();
  const int64_t vocab = want.size(-1), seq = want.size(1);
  float max_diff = 0;
  for (size_t row = 0; row < mask.size(); ++row) {
    for (int64_t s = 0; s < seq; ++s) {
      if (!mask[row][s]) continue;
      for (int64_t v = 0; v < vocab; ++v) {
        const size_t i = (row * seq + s) * vocab + v;
        max_diff = std::max(max_diff, std::fabs(g[i] - w[i]));
      }
    }
  }
  EXPECT_LE(max_diff, 1e-4f);
}

TEST_P(Cli, GenerateMatchesTransformers) {
  const auto golden = SafetensorsFile::open(test::golden_path(GetParam()));
  for (const char* which : {"a", "b"}) {
    const auto ids = test::id_rows(golden, std::string("input_ids_") + which);
    std::string args = "generate " + test::model_dir(GetParam()) + " --input-ids \"" +
                       join_rows(ids, ',', ';') + "\" --max-new-tokens 16 --greedy --output-ids";
    if (std::string(which) == "b") {
      args += " --attention-mask \"" +
              join_rows(test::id_rows(golden, "attention_mask_b"), ',', ';') + "\"";
    }
    const CliRun r = run(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out,
              join_rows(test::id_rows(golden, std::string("gen_") + which), ',', '\n') + "\n");
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Cli, ::testing::Values("qwen3-tiny", "llama-tiny", "qwen2-tiny"),
                         test::ParamName());

TEST(CliErrors, OneLineAndNonZero) {
  const std::string model = test::model_dir("qwen3-tiny");
  expect_one_line_error(run("logits " + model + " --input-ids 1,2 --device gpu --out /tmp/x"),
                        "Expected one of cpu, cuda, xpu, hpu, opencl device type");
  expect_one_line_error(run("logits " + model + " --input-ids 1,2 --device cuda:01 --out /tmp/x"),
                        "Invalid device string: 'cuda:01'");
  expect_one_line_error(run("logits " + model + " --input-ids 1,x --out /tmp/x"),
                        "--input-ids: 'x' is not an integer");
  expect_one_line_error(run("generate " + model + " --input-ids 5,1000 --output-ids"),
                        "input id 1000 (row 0, position 1) is out of range for vocab_size 1000");
  expect_one_line_error(run("generate /nonexistent/model --input-ids 1 --output-ids"),
                        "/nonexistent/model: no such file or folder");
  expect_one_line_error(run("generate " + model + " --input-ids \"1,2;3\" --output-ids"),
                        "row 1 has 1 ids");
  expect_one_line_error(run("logits " + model + " --input-ids 1 --dtype int4 --out /tmp/x"),
                        "--dtype: 'int4'");
  expect_one_line_error(run("logits " + model + " --input-ids 1 --kv-dtype q4 --out /tmp/x"),
                        "--kv-dtype: 'q4' is not one of f32, bf16, f16");
  // Float weights on the CPU: the cache is float32 or half, not bf16 (no such attention kernel).
  expect_one_line_error(run("logits " + model + " --input-ids 1 --kv-dtype bf16 --out /tmp/x"),
                        "KV cache dtype bf16: the cpu backend has no attention over such a cache");
  expect_one_line_error(run("generate " + model + " --input-ids 1 --greedy --top-k 3 --output-ids"),
                        "--greedy: cannot be combined");
  expect_one_line_error(run("init-model --like gpt-9 --out /tmp/nowhere"), "unknown model 'gpt-9'");
  EXPECT_NE(run("logits").exit_code, 0);  // missing required arguments (CLI11's message)
  EXPECT_NE(run("frobnicate").exit_code, 0);
}

// The sampling flags beyond top-k/top-p: accepted, seeded (the same seed, the same tokens),
// and range-checked in one line.
TEST(Cli, TypicalEpsilonEtaFlags) {
  const std::string gen = "generate " + test::model_dir("qwen2-tiny") +
                          " --input-ids 5,9,14 --max-new-tokens 8 --min-new-tokens 8 "
                          "--output-ids --seed 11 ";
  for (const char* flags : {"--typical-p 0.6", "--epsilon-cutoff 0.01", "--eta-cutoff 0.05",
                            "--no-repeat-ngram-size 2 --temperature 0.9"}) {
    SCOPED_TRACE(flags);
    const CliRun a = run(gen + flags), b = run(gen + flags);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(std::count(a.out.begin(), a.out.end(), ','), 10);  // 3 + 8 ids
  }
  expect_one_line_error(run(gen + "--typical-p 1.5"), "typical_p must be in (0, 1]");
  expect_one_line_error(run(gen + "--greedy --eta-cutoff 0.1"), "--greedy: cannot be combined");
}

// --scores-out: transformers' output_scores and output_logits as [steps, rows, vocab]
// (scripts/goldens/make_scores_goldens.py), and beam search's outputs.
TEST(Cli, ScoresOut) {
  const auto golden = SafetensorsFile::open(test::golden_path("qwen3-tiny"));
  const auto want =
      SafetensorsFile::open(test::data_dir() + "/extra/scores-qwen3-tiny.safetensors");
  TempDir dir;
  const std::string gen = "generate " + test::model_dir("qwen3-tiny") + " --input-ids " +
                          join_rows(test::id_rows(golden, "input_ids_a"), ',', ';') +
                          " --max-new-tokens 6 --greedy --output-ids --scores-out " +
                          dir.file("s.safetensors");
  const CliRun r = run(gen + " --repetition-penalty 1.3 --no-repeat-ngram-size 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, join_rows(test::id_rows(want, "greedy_sequences"), ',', '\n') + "\n");
  const auto out = SafetensorsFile::open(dir.file("s.safetensors"));
  for (const char* name : {"scores", "logits"}) {
    const Tensor got = out.load(name);
    ASSERT_EQ(got.shape(), (Shape{6, 1, 1000})) << name;
    const auto g = got.to_f32_vector();
    const auto w = want.load(std::string("greedy_") + name).to_f32_vector();
    ASSERT_EQ(g.size(), w.size());
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isinf(w[i])) {
        ASSERT_EQ(g[i], w[i]) << name << " " << i;
      } else {
        ASSERT_NEAR(g[i], w[i], 1e-4f) << name << " " << i;
      }
    }
  }
  // Beam search: the file holds what the library gives for the same options (whose parity with
  // transformers tests/generate/output_scores_test.cc checks), the beams' rows each step.
  const CliRun beam = run(gen + " --num-beams 3 --num-return-sequences 2");
  ASSERT_EQ(beam.exit_code, 0) << beam.err;
  std::vector<Tensor> scores;
  std::vector<float> sequences_scores;
  std::vector<std::vector<int64_t>> beam_indices;
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.do_sample = false;
  o.num_beams = 3;
  o.num_return_sequences = 2;
  o.scores = &scores;
  o.sequences_scores = &sequences_scores;
  o.beam_indices = &beam_indices;
  Batch a;
  a.input_ids = test::id_rows(golden, "input_ids_a");
  const CausalLM lm = CausalLM::from_pretrained(test::model_dir("qwen3-tiny"));
  EXPECT_EQ(beam.out, join_rows(lm.generate(a, o), ',', '\n') + "\n");
  const auto beam_file = SafetensorsFile::open(dir.file("s.safetensors"));
  const Tensor got = beam_file.load("scores");
  ASSERT_EQ(got.shape(), (Shape{static_cast<int64_t>(scores.size()), 3, 1000}));
  const auto g = got.to_f32_vector();
  for (size_t step = 0; step < scores.size(); ++step) {
    const auto w = scores[step].to_f32_vector();
    ASSERT_TRUE(std::equal(w.begin(), w.end(), g.begin() + step * w.size())) << step;
  }
  EXPECT_EQ(beam_file.load("sequences_scores").to_f32_vector(), sequences_scores);
  EXPECT_EQ(test::id_rows(beam_file, "beam_indices"), beam_indices);
}

// generate --prompt-cache FILE: the second run of a prompt reuses all of it but its last token
// and prints what the first printed; --prompt-cache-ro leaves the file alone; another model's
// run refuses the file with one line naming it.
TEST(Cli, GeneratePromptCacheFile) {
  const auto golden = SafetensorsFile::open(test::golden_path("qwen3-tiny"));
  const std::vector<int64_t> a = test::id_rows(golden, "input_ids_a")[0];
  TempDir dir;
  const std::string file = dir.file("p.cache");
  const std::string ids = " --input-ids " + join_rows({a}, ',', ';') +
                          " --max-new-tokens 6 --greedy --output-ids --prompt-cache " + file;
  const std::string gen = "generate " + test::model_dir("qwen3-tiny") + ids;
  const CliRun first = run(gen);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(
      first.err.find(": 0 prompt tokens reused, " + std::to_string(a.size() + 5) + " tokens saved"),
      std::string::npos)
      << first.err;
  const auto written = std::filesystem::last_write_time(file);
  const CliRun second = run(gen + " --prompt-cache-ro");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, first.out);
  EXPECT_NE(second.err.find(": " + std::to_string(a.size() - 1) + " prompt tokens reused"),
            std::string::npos)
      << second.err;
  EXPECT_EQ(std::filesystem::last_write_time(file), written);
  const CliRun other = run("generate " + test::model_dir("qwen2-tiny") + ids);
  expect_one_line_error(other, file + ": the prompt cache was made by another model");
  expect_one_line_error(
      run("generate " + test::model_dir("qwen3-tiny") + " --input-ids 1,2 " + "--prompt-cache-ro"),
      "--prompt-cache-ro: needs --prompt-cache FILE");
}

// --prompt-lookup and --assistant-model: the tokens generate gives without them, and what they
// did on stderr.
TEST(Cli, GeneratePromptLookup) {
  const auto golden = SafetensorsFile::open(test::golden_path("extra/qwen2-window-layers-tiny"));
  const std::string gen = "generate " + test::model_dir("extra/qwen2-window-layers-tiny") +
                          " --input-ids " +
                          join_rows(test::id_rows(golden, "input_ids_a"), ',', ';') +
                          " --max-new-tokens 40 --min-new-tokens 40 --greedy --output-ids";
  const CliRun lookup = run(gen + " --prompt-lookup 5 --max-matching-ngram 1");
  ASSERT_EQ(lookup.exit_code, 0) << lookup.err;
  EXPECT_EQ(lookup.out, join_rows(test::id_rows(golden, "gen_long_a"), ',', '\n') + "\n");
  int kept = -1, drafted = -1, steps = -1;
  const size_t at = lookup.err.find("prompt lookup: ");
  ASSERT_NE(at, std::string::npos) << lookup.err;
  ASSERT_EQ(std::sscanf(lookup.err.c_str() + at,
                        "prompt lookup: %d of %d drafted tokens kept over %d steps", &kept,
                        &drafted, &steps),
            3)
      << lookup.err;
  EXPECT_GT(kept, 0);
  EXPECT_LE(kept, drafted);
  EXPECT_GT(steps, 0);
  expect_one_line_error(run(gen + " --prompt-lookup 0"),
                        "prompt_lookup_num_tokens must be at least 1");
  // An assistant model drafts instead: the same tokens.
  const CliRun assisted = run(gen + " --assistant-model " + test::model_dir("extra/olmo2-tiny") +
                              " --num-assistant-tokens 4 --assistant-confidence-threshold 0");
  ASSERT_EQ(assisted.exit_code, 0) << assisted.err;
  EXPECT_EQ(assisted.out, lookup.out);
  EXPECT_NE(assisted.err.find("assistant: "), std::string::npos) << assisted.err;
  // These folders hold no tokenizer, so the assistant's ids are the model's, and it says so.
  EXPECT_NE(assisted.err.find("anvil: model's tokenizer not loaded ("), std::string::npos)
      << assisted.err;
  EXPECT_NE(assisted.err.find("no tokenizer.json"), std::string::npos) << assisted.err;
  // The heuristic schedule: the same tokens again.
  const CliRun scheduled = run(gen + " --assistant-model " + test::model_dir("extra/olmo2-tiny") +
                               " --num-assistant-tokens-schedule heuristic");
  ASSERT_EQ(scheduled.exit_code, 0) << scheduled.err;
  EXPECT_EQ(scheduled.out, lookup.out);
  // The adaptive threshold: the same tokens, and where it ended.
  const CliRun adaptive = run(gen + " --assistant-model " + test::model_dir("extra/olmo2-tiny") +
                              " --assistant-adaptive-confidence");
  ASSERT_EQ(adaptive.exit_code, 0) << adaptive.err;
  EXPECT_EQ(adaptive.out, lookup.out);
  EXPECT_NE(adaptive.err.find(", confidence threshold ended at "), std::string::npos)
      << adaptive.err;
  // Refused by generate() (the threshold may come from the assistant's generation_config),
  // after the line saying the assistant's tokenizer is not loaded.
  const CliRun no_threshold =
      run(gen + " --assistant-model " + test::model_dir("extra/olmo2-tiny") +
          " --assistant-adaptive-confidence --assistant-confidence-threshold 0");
  EXPECT_NE(no_threshold.exit_code, 0);
  EXPECT_NE(no_threshold.err.find("anvil: error: assistant_adaptive_confidence: needs "
                                  "assistant_confidence_threshold above 0"),
            std::string::npos)
      << no_threshold.err;
  expect_one_line_error(run(gen + " --num-assistant-tokens 4"),
                        "--num-assistant-tokens / --num-assistant-tokens-schedule / "
                        "--assistant-confidence-threshold / --assistant-adaptive-confidence: "
                        "need --assistant-model or --assistant-early-exit");
  expect_one_line_error(run(gen + " --assistant-adaptive-confidence"),
                        "--assistant-adaptive-confidence: need --assistant-model or "
                        "--assistant-early-exit");
  // Ensemble verification: transformers' tokens for that setting (no longer plain greedy's).
  const CliRun ensemble = run(gen + " --assistant-model " + test::model_dir("extra/olmo2-tiny") +
                              " --num-assistant-tokens 5 --assistant-confidence-threshold 0"
                              " --assistant-ensemble-weight 0.3");
  ASSERT_EQ(ensemble.exit_code, 0) << ensemble.err;
  const nlohmann::json ensemble_golden = nlohmann::json::parse(
      read_text_file(test::data_dir() + "/extra/ensemble-steps.json"))["cases"][3];
  EXPECT_EQ(
      ensemble.out,
      join_rows({ensemble_golden.at("sequence").get<std::vector<int64_t>>()}, ',', '\n') + "\n");
  // The model's own first layers draft: the same tokens again.
  const CliRun early = run(gen + " --assistant-early-exit 2 --num-assistant-tokens 3");
  ASSERT_EQ(early.exit_code, 0) << early.err;
  EXPECT_EQ(early.out, lookup.out);
  EXPECT_NE(early.err.find("assistant: "), std::string::npos) << early.err;
  expect_one_line_error(run(gen + " --assistant-early-exit 9"),
                        "assistant_early_exit: 9 layers asked for, but the model has 3 (1 to 3)");
  expect_one_line_error(run(gen + " --assistant-model " + test::model_dir("extra/olmo2-tiny") +
                            " --num-assistant-tokens-schedule sometimes"),
                        "--num-assistant-tokens-schedule: expected constant, heuristic or "
                        "heuristic_transient, got 'sometimes'");
}

// Beam search from the command line: the rows the library returns for the same options
// (whose parity with transformers tests/generate/beam_search_test.cc checks), num_return_sequences
// of them, and the flags' values checked.
TEST(Cli, BeamSearchFlags) {
  const std::string model = test::model_dir("qwen2-tiny");
  const std::string gen = "generate " + model +
                          " --input-ids 5,9,14,3 --max-new-tokens 6 --output-ids --num-beams 4 "
                          "--length-penalty 0.5 --early-stopping never ";
  const CliRun a = run(gen + "--num-return-sequences 3");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ModelOptions mo;
  mo.dtype = DType::f32;
  const CausalLM lm = CausalLM::from_pretrained(model, mo);
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.num_beams = 4;
  o.num_return_sequences = 3;
  o.length_penalty = 0.5f;
  o.early_stopping = EarlyStopping::never;
  Batch b;
  b.input_ids = {{5, 9, 14, 3}};
  std::string want;
  for (const auto& row : lm.generate(b, o)) {
    for (size_t i = 0; i < row.size(); ++i) want += (i ? "," : "") + std::to_string(row[i]);
    want += "\n";
  }
  EXPECT_EQ(a.out, want);
  expect_one_line_error(run(gen + "--num-return-sequences 5"),
                        "num_return_sequences (5) must not exceed num_beams (4)");
  expect_one_line_error(run("generate " + model +
                            " --input-ids 5,9 --num-beams 2 "
                            "--early-stopping maybe"),
                        "--early-stopping: expected true, false or never, got 'maybe'");
}

// --stop: the model folder's tokenizer reads the stop strings; the rows the library returns
// with the same tokenizer (whose parity with transformers stop_strings_test.cc checks).
TEST(Cli, StopFlag) {
  test::TempDir dir;
  const std::string src = test::model_dir("qwen2-tiny");
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json"}) {
    std::filesystem::copy_file(src + "/" + f, dir.file(f));
  }
  std::filesystem::copy_file(test::data_dir() + "/tokenizers/qwen3/tokenizer.json",
                             dir.file("tokenizer.json"));
  const CliRun a = run("generate " + dir.path() +
                       " --input-ids 858,93,771,939,326 --max-new-tokens 16 --greedy --output-ids "
                       "--stop '**' --stop xyz");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ModelOptions mo;
  mo.dtype = DType::f32;
  const CausalLM lm = CausalLM::from_pretrained(dir.path(), mo);
  const Tokenizer tok = Tokenizer::from_file(dir.file("tokenizer.json"));
  GenerateOptions o;
  o.max_new_tokens = 16;
  o.do_sample = false;
  o.stop_strings = std::vector<std::string>{"**", "xyz"};
  o.tokenizer = &tok;
  const auto row = lm.generate({858, 93, 771, 939, 326}, o);
  std::string want;
  for (size_t i = 0; i < row.size(); ++i) want += (i ? "," : "") + std::to_string(row[i]);
  EXPECT_EQ(a.out, want + "\n");
  EXPECT_LT(row.size(), 5u + 16u);  // the stop string ended it early
}

TEST(CliErrors, TruncatedCheckpoint) {
  TempDir dir;
  const std::string src = test::model_dir("llama-tiny");
  std::filesystem::copy_file(src + "/config.json", dir.file("config.json"));
  std::ifstream in(src + "/model.safetensors", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(dir.file("model.safetensors"), std::ios::binary)
      << bytes.substr(0, bytes.size() / 2);
  expect_one_line_error(run("logits " + dir.path() + " --input-ids 1,2 --out " + dir.file("o")),
                        dir.file("model.safetensors") + ": ");
}

TEST(Cli, HelpForEverySubcommand) {
  for (const char* sub : {"", "devices", "logits", "generate", "init-model"}) {
    const CliRun r = run(std::string(sub) + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
}

TEST(Cli, DevicesListsEveryBackend) {
  const CliRun r = run("devices");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("cpu:0"), std::string::npos);
  for (const char* t : {"cuda", "xpu", "hpu", "opencl"}) {
    EXPECT_NE(r.out.find(std::string("\n") + t), std::string::npos) << r.out;
  }
}

TEST(Cli, InitModelWritesALoadableModelOfTheRealShape) {
  TempDir dir;
  const CliRun r = run("init-model --like smollm2-135m --out " + dir.path() + " --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto f = SafetensorsFile::open(dir.file("model.safetensors"));
  int64_t params = 0;
  for (const auto& e : f.entries()) {
    params += shape_numel(e.shape);
    EXPECT_EQ(e.dtype, DType::bf16);
  }
  EXPECT_EQ(params, 134515008);  // SmolLM2-135M
  const CliRun g =
      run("generate " + dir.path() + " --input-ids 1,2,3 --max-new-tokens 2 --greedy --output-ids");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(g.out.rfind("1,2,3,", 0), 0u);
}

}  // namespace
}  // namespace anvil
