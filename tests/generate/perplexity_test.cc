// Perplexity by transformers' sliding windows: the windows, their scored tokens and the
// negative log-likelihood sums of transformers' goldens (scripts/goldens/
// make_perplexity_goldens.py) on three fixtures and six (max_length, stride) pairs, through the
// API and the CLI; bad arguments refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "anvil/model.h"
#include "anvil/perplexity.h"
#include "cli/cli_run.h"
#include "expect_error.h"
#include "formats/mapped_file.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;

nlohmann::json goldens() {
  return nlohmann::json::parse(read_text_file(test::data_dir() + "/extra/perplexity.json"));
}

std::string model_path(const std::string& name) {
  return test::data_dir() + "/" + name + "/model";
}

CausalLM load(const std::string& name) {
  ModelOptions o;
  o.dtype = DType::f32;
  return CausalLM::from_pretrained(model_path(name), o);
}

// Per-token logits agree with transformers' within ~1e-5; a sum of ~150 tokens within 2e-3.
constexpr double kSumTolerance = 2e-3;

TEST(Perplexity, WindowsAndSumsAreTransformers) {
  const nlohmann::json g = goldens();
  std::string loaded_name;
  std::optional<CausalLM> model;
  for (const auto& c : g["cases"]) {
    const std::string name = c["model"];
    if (name != loaded_name) {
      model.emplace(load(name));
      loaded_name = name;
    }
    const auto ids = c["ids"].get<std::vector<int64_t>>();
    PerplexityOptions o;
    o.max_length = c["max_length"];
    o.stride = c["stride"];
    int calls = 0;
    const PerplexityResult r =
        perplexity(*model, ids, o, [&](const PerplexityWindow&) { ++calls; });
    SCOPED_TRACE(name + " max_length " + std::to_string(o.max_length) + " stride " +
                 std::to_string(o.stride));
    const auto& want = c["windows"];
    ASSERT_EQ(r.windows.size(), want.size());
    EXPECT_EQ(calls, static_cast<int>(want.size()));
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(r.windows[i].begin, want[i][0].get<int64_t>()) << "window " << i;
      EXPECT_EQ(r.windows[i].end, want[i][1].get<int64_t>()) << "window " << i;
      EXPECT_EQ(r.windows[i].scored, want[i][2].get<int64_t>()) << "window " << i;
      EXPECT_NEAR(r.windows[i].nll_sum, want[i][3].get<double>(), kSumTolerance) << "window " << i;
    }
    EXPECT_EQ(r.tokens, c["tokens"].get<int64_t>());
    // Overlapping windows score every token but the first; windows side by side leave each
    // window's first token unscored (it has no context in its window).
    const auto n = static_cast<int64_t>(ids.size());
    EXPECT_EQ(r.tokens, o.stride < o.max_length ? n - 1 : n - static_cast<int64_t>(want.size()));
    EXPECT_NEAR(r.nll_sum, c["nll_sum"].get<double>(), kSumTolerance);
    EXPECT_NEAR(r.perplexity(), std::exp(c["nll_sum"].get<double>() / c["tokens"].get<double>()),
                1e-4 * r.perplexity());
  }
}

TEST(Perplexity, TokenNllIsMinusLogSoftmax) {
  const std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  EXPECT_NEAR(token_nll(logits, 2), lse - 3.0, 1e-12);
  EXPECT_NEAR(token_nll(logits, 0), lse - 1.0, 1e-12);
  // Large logits do not overflow: the maximum is taken out first.
  const std::vector<float> big = {1000.0f, 1000.0f};
  EXPECT_NEAR(token_nll(big, 1), std::log(2.0), 1e-12);
  expect_error([&] { token_nll(logits, 3); }, "token id 3 is outside the model's 3-token");
  expect_error([&] { token_nll(logits, -1); }, "token id -1 is outside");
}

TEST(Perplexity, Refusals) {
  const CausalLM model = load("llama-tiny");
  const std::vector<int64_t> ids = {1, 2, 3, 4, 5};
  expect_error([&] { perplexity(model, std::vector<int64_t>{1}, {}); },
               "1 token(s); at least two are needed");
  expect_error([&] { perplexity(model, std::vector<int64_t>{}, {}); }, "0 token(s)");
  expect_error([&] { perplexity(model, ids, {.max_length = 1, .stride = 1}); },
               "max_length 1 must be at least 2");
  expect_error([&] { perplexity(model, ids, {.max_length = 4, .stride = 0}); },
               "stride 0 must be in 1..4");
  expect_error([&] { perplexity(model, ids, {.max_length = 4, .stride = 5}); },
               "stride 5 must be in 1..4");
  const int64_t vocab = model.config().vocab_size;
  expect_error([&] { perplexity(model, std::vector<int64_t>{1, vocab}, {}); }, "out of range");
}

TEST(PerplexityCli, PrintsTransformersPerplexity) {
  const nlohmann::json g = goldens();
  for (const auto& c : g["cases"]) {
    if (c["model"] != "qwen3-tiny" || c["max_length"] != 50) continue;
    std::string ids;
    for (int64_t id : c["ids"].get<std::vector<int64_t>>()) {
      ids += (ids.empty() ? "" : ",") + std::to_string(id);
    }
    const test::CliRun run =
        test::run_cli("perplexity " + model_path("qwen3-tiny") + " --dtype f32 --input-ids " + ids +
                      " --max-length 50 --stride 17 --json --quiet");
    ASSERT_EQ(run.exit_code, 0) << run.err;
    EXPECT_EQ(run.err, "");
    const nlohmann::json j = nlohmann::json::parse(run.out);
    const double want = std::exp(c["nll_sum"].get<double>() / c["tokens"].get<double>());
    EXPECT_NEAR(j["perplexity"].get<double>(), want, 1e-4 * want);
    EXPECT_EQ(j["tokens"], c["tokens"]);
    EXPECT_EQ(j["windows"], c["windows"].size());
    EXPECT_EQ(j["max_length"], 50);
    EXPECT_EQ(j["stride"], 17);
    // The plain form: a line per window on stderr, the result on stdout.
    const test::CliRun plain =
        test::run_cli("perplexity " + model_path("qwen3-tiny") + " --dtype f32 --input-ids " + ids +
                      " --max-length 50 --stride 17");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_NE(plain.out.find("perplexity "), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("over 149 tokens; 7 windows of up to 50 tokens, stride 17"),
              std::string::npos)
        << plain.out;
    EXPECT_NE(plain.err.find("window [17, 67): 17 tokens scored"), std::string::npos) << plain.err;
    return;
  }
  FAIL() << "no qwen3-tiny case of max_length 50 in perplexity.json";
}

TEST(PerplexityCli, Refusals) {
  const std::string m = model_path("qwen3-tiny");
  test::CliRun run = test::run_cli("perplexity " + m);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("give one of --file, --text or --input-ids"), std::string::npos)
      << run.err;
  run = test::run_cli("perplexity " + m + " --input-ids 1,2,3 --text hello");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("give one of"), std::string::npos) << run.err;
  run = test::run_cli("perplexity " + m + " --input-ids 1,2,3 --max-length 4 --stride 9");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("stride 9 must be in 1..4"), std::string::npos) << run.err;
  run = test::run_cli("perplexity " + m + " --input-ids 5");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("at least two are needed"), std::string::npos) << run.err;
  run = test::run_cli("perplexity " + m + " --file /nonexistent/text.txt");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("/nonexistent/text.txt"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace anvil
