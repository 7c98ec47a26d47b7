// Perplexity by transformers' sliding windows: the windows, their scored tokens and the
// negative log-likelihood sums of transformers' goldens (scripts/goldens/
// make_perplexity_goldens.py) on three fixtures and six (max_length, stride) pairs, through the
// API and the CLI; bad arguments refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
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
#include "models/decoder.h"
#include "models/init_model.h"
#include "temp_dir.h"
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

CausalLM load(const std::string& name, const std::string& device = "cpu") {
  ModelOptions o;
  o.dtype = DType::f32;
  o.device_map = device;
  return CausalLM::from_pretrained(model_path(name), o);
}

// fn(model, golden case, its ids, its options) for every golden case, each fixture loaded once
// (float32, on `device`).
template <class Fn>
void for_each_case(const std::string& device, Fn fn) {
  const nlohmann::json g = goldens();
  std::string loaded_name;
  std::optional<CausalLM> model;
  for (const auto& c : g["cases"]) {
    const std::string name = c["model"];
    if (name != loaded_name) {
      model.emplace(load(name, device));
      loaded_name = name;
    }
    PerplexityOptions o;
    o.max_length = c["max_length"];
    o.stride = c["stride"];
    SCOPED_TRACE(device + " " + name + " max_length " + std::to_string(o.max_length) + " stride " +
                 std::to_string(o.stride));
    fn(*model, c, c["ids"].get<std::vector<int64_t>>(), o);
  }
}

// Per-token logits agree with transformers' within ~1e-5; a sum of ~150 tokens within 2e-3.
constexpr double kSumTolerance = 2e-3;

TEST(Perplexity, WindowsAndSumsAreTransformers) {
  for_each_case("cpu", [](const CausalLM& model, const nlohmann::json& c,
                          const std::vector<int64_t>& ids, const PerplexityOptions& o) {
    int calls = 0;
    const PerplexityResult r = perplexity(model, ids, o, [&](const PerplexityWindow&) { ++calls; });
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
  });
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

// Windows of one shape run as the rows of one step (batch_size) give the same windows and, up to
// rounding, the same sums as one window a step; the automatic size on the CPU is one.
TEST(Perplexity, BatchedWindowsGiveTheSameSums) {
  int cases = 0;
  for_each_case("cpu", [&](const CausalLM& model, const nlohmann::json& c,
                           const std::vector<int64_t>& ids, PerplexityOptions o) {
    o.batch_size = 1;
    const PerplexityResult one = perplexity(model, ids, o);
    for (int64_t batch : {2, 3, 64}) {
      o.batch_size = batch;
      std::vector<int64_t> order;
      const PerplexityResult r =
          perplexity(model, ids, o, [&](const PerplexityWindow& w) { order.push_back(w.begin); });
      SCOPED_TRACE("batch " + std::to_string(batch));
      ASSERT_EQ(r.windows.size(), one.windows.size());
      for (size_t i = 0; i < r.windows.size(); ++i) {
        EXPECT_EQ(r.windows[i].begin, one.windows[i].begin);
        EXPECT_EQ(order[i], one.windows[i].begin) << "windows reported in order";
        EXPECT_EQ(r.windows[i].end, one.windows[i].end);
        EXPECT_EQ(r.windows[i].scored, one.windows[i].scored);
        EXPECT_NEAR(r.windows[i].nll_sum, one.windows[i].nll_sum, 1e-4) << "window " << i;
      }
      EXPECT_EQ(r.tokens, one.tokens);
      EXPECT_NEAR(r.nll_sum, c["nll_sum"].get<double>(), kSumTolerance);
    }
    ++cases;
  });
  EXPECT_GT(cases, 0);
}

// Each window's squared losses, and the perplexity's standard error from them (llama.cpp's
// "+/-"), against the tokens' losses taken one by one from the whole windows' logits
// (CausalLM::logits and the double-precision token_nll).
TEST(Perplexity, ErrorIsTheScoredTokensSpread) {
  int cases = 0;
  for_each_case("cpu", [&](const CausalLM& model, const nlohmann::json&,
                           const std::vector<int64_t>& ids, const PerplexityOptions& o) {
    const PerplexityResult r = perplexity(model, ids, o);
    std::vector<double> losses;
    double sq_sum = 0.0;
    for (const PerplexityWindow& w : r.windows) {
      Batch b;
      b.input_ids.emplace_back(ids.begin() + w.begin, ids.begin() + w.end);
      const Tensor logits = model.logits(b);
      const int64_t vocab = logits.size(2);
      double window_sq = 0.0;
      for (int64_t t = w.end - w.scored; t < w.end; ++t) {
        const float* row = logits.data<float>() + (t - 1 - w.begin) * vocab;
        const double nll =
            token_nll({row, static_cast<size_t>(vocab)}, ids[static_cast<size_t>(t)]);
        losses.push_back(nll);
        window_sq += nll * nll;
      }
      EXPECT_NEAR(w.nll_sq_sum, window_sq, 1e-4 * std::max(1.0, window_sq)) << w.begin;
      sq_sum += window_sq;
    }
    ASSERT_EQ(static_cast<int64_t>(losses.size()), r.tokens);
    const double n = static_cast<double>(losses.size());
    double mean = 0.0;
    for (double v : losses) mean += v / n;
    double spread = 0.0;
    for (double v : losses) spread += (v - mean) * (v - mean);
    const double want = std::sqrt(spread / n / (n - 1.0)) * std::exp(mean);
    EXPECT_NEAR(r.nll_sq_sum, sq_sum, 1e-4 * sq_sum);
    EXPECT_GT(want, 0.0);
    EXPECT_NEAR(r.perplexity_error(), want, 1e-3 * want);
    ++cases;
  });
  EXPECT_GT(cases, 0);
  EXPECT_EQ(PerplexityResult{}.perplexity_error(), 0.0);
}

// A reference model: its perplexity is its own run's, and each scored token's KL divergence
// and top agreement are those of the two models' whole-window logits (CausalLM::logits),
// computed here in double.
TEST(Perplexity, ReferenceComparesTheTwoDistributions) {
  const CausalLM model = load("qwen3-tiny"), reference = load("llama-tiny");
  const nlohmann::json g = goldens();
  const auto ids = g["cases"][0]["ids"].get<std::vector<int64_t>>();
  for (int64_t batch : {1, 3}) {
    PerplexityOptions o{.max_length = 64, .stride = 32, .batch_size = batch};
    o.reference = &reference;
    const PerplexityResult r = perplexity(model, ids, o);
    ASSERT_TRUE(r.reference.has_value());
    const PerplexityReference& ref = *r.reference;
    ASSERT_EQ(static_cast<int64_t>(ref.kl.size()), r.tokens);
    PerplexityOptions alone = o;
    alone.reference = nullptr;
    EXPECT_NEAR(ref.nll_sum, perplexity(reference, ids, alone).nll_sum, 1e-3);
    EXPECT_NEAR(r.nll_sum, perplexity(model, ids, alone).nll_sum, 1e-3);
    EXPECT_FALSE(perplexity(model, ids, alone).reference.has_value());
    size_t at = 0;
    int64_t agree = 0, near_ties = 0;
    for (const PerplexityWindow& w : r.windows) {
      Batch b;
      b.input_ids.emplace_back(ids.begin() + w.begin, ids.begin() + w.end);
      const Tensor lp = reference.logits(b), lq = model.logits(b);
      const int64_t vocab = lq.size(2);
      for (int64_t t = w.end - w.scored; t < w.end; ++t, ++at) {
        const float* p = lp.data<float>() + (t - 1 - w.begin) * vocab;
        const float* q = lq.data<float>() + (t - 1 - w.begin) * vocab;
        double mp = -INFINITY, mq = -INFINITY;
        for (int64_t v = 0; v < vocab; ++v) {
          mp = std::max(mp, static_cast<double>(p[v]));
          mq = std::max(mq, static_cast<double>(q[v]));
        }
        double sp = 0.0, sq = 0.0;
        for (int64_t v = 0; v < vocab; ++v) {
          sp += std::exp(p[v] - mp);
          sq += std::exp(q[v] - mq);
        }
        const double lse_p = mp + std::log(sp), lse_q = mq + std::log(sq);
        double kl = 0.0;
        for (int64_t v = 0; v < vocab; ++v) {
          kl += std::exp(p[v] - lse_p) * ((p[v] - lse_p) - (q[v] - lse_q));
        }
        ASSERT_NEAR(ref.kl[at], kl, 1e-5 + 1e-4 * kl) << "token " << t;
        const auto top = [vocab](const float* x) { return std::max_element(x, x + vocab) - x; };
        agree += top(p) == top(q);
        // A top pick within rounding of the runner-up may go either way between the two runs.
        std::vector<float> sorted(q, q + vocab);
        std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<>());
        near_ties += sorted[0] - sorted[1] < 1e-5f;
      }
    }
    EXPECT_LE(std::abs(ref.same_top - agree), near_ties);
    EXPECT_GT(ref.kl_mean(), 0.0);
    EXPECT_GT(ref.kl_error(), 0.0);
    EXPECT_LT(ref.same_top_fraction(), 1.0);
  }
  // The model as its own reference: nothing apart.
  PerplexityOptions o{.max_length = 50, .stride = 17};
  o.reference = &model;
  const PerplexityResult self = perplexity(model, ids, o);
  EXPECT_EQ(self.reference->kl_quantile(1.0), 0.0);
  EXPECT_EQ(self.reference->same_top_fraction(), 1.0);
  EXPECT_NEAR(self.reference->perplexity(), self.perplexity(), 1e-9 * self.perplexity());
}

TEST(Perplexity, ReferenceStatistics) {
  PerplexityReference ref;
  ref.kl = {3.0f, 1.0f, 2.0f, 4.0f};
  ref.same_top = 3;
  EXPECT_DOUBLE_EQ(ref.kl_mean(), 2.5);
  EXPECT_NEAR(ref.kl_error(), std::sqrt(1.25 / 3.0), 1e-12);
  EXPECT_DOUBLE_EQ(ref.kl_quantile(0.0), 1.0);
  EXPECT_DOUBLE_EQ(ref.kl_quantile(0.25), 1.75);  // numpy.quantile's linear interpolation
  EXPECT_DOUBLE_EQ(ref.kl_quantile(0.5), 2.5);
  EXPECT_DOUBLE_EQ(ref.kl_quantile(1.0), 4.0);
  EXPECT_DOUBLE_EQ(ref.same_top_fraction(), 0.75);
}

// A reference of another vocabulary size is refused by name.
TEST(Perplexity, ReferenceOfAnotherVocabularyIsRefused) {
  const test::TempDir dir;
  nlohmann::json config =
      nlohmann::json::parse(read_text_file(model_path("llama-tiny") + "/config.json"));
  config["vocab_size"] = 1200;
  std::ofstream(dir.file("config.json")) << config.dump();
  init_model(dir.file("config.json"), dir.file("model"), 1, "f32");
  const CausalLM model = load("llama-tiny");
  ModelOptions f32;
  f32.dtype = DType::f32;
  const CausalLM other = CausalLM::from_pretrained(dir.file("model"), f32);
  PerplexityOptions o;
  o.reference = &other;
  expect_error(
      [&] {
        perplexity(model, std::vector<int64_t>{1, 2, 3}, o);
      },
      "the reference model's vocabulary (1200 ids) differs from the model's (1000)");
}

// llama.cpp's method: whole chunks side by side (the rest left out), each scoring the tokens
// after its first half, from its own logits, its first id replaced by the BOS where given;
// against each chunk's whole logits and the double-precision token_nll.
TEST(Perplexity, LlamaCppChunksScoreEachChunksSecondHalf) {
  const CausalLM model = load("qwen3-tiny");
  const auto ids = goldens()["cases"][0]["ids"].get<std::vector<int64_t>>();  // 150 ids
  for (int64_t bos : {int64_t{-1}, int64_t{7}}) {
    for (int64_t batch : {1, 3}) {
      PerplexityOptions o{.max_length = 32, .batch_size = batch};
      o.llama_cpp_chunks = true;
      o.chunk_bos = bos;
      const PerplexityResult r = perplexity(model, ids, o);
      SCOPED_TRACE("bos " + std::to_string(bos) + " batch " + std::to_string(batch));
      ASSERT_EQ(r.windows.size(), 4u);  // 150 / 32
      double want = 0.0;
      for (size_t c = 0; c < 4; ++c) {
        const auto begin = static_cast<int64_t>(32 * c);
        EXPECT_EQ(r.windows[c].begin, begin);
        EXPECT_EQ(r.windows[c].end, begin + 32);
        EXPECT_EQ(r.windows[c].scored, 15);  // tokens 17..31 of the chunk
        Batch b;
        b.input_ids.emplace_back(ids.begin() + begin, ids.begin() + begin + 32);
        if (bos >= 0) b.input_ids[0][0] = bos;
        const Tensor logits = model.logits(b);
        double chunk = 0.0;
        for (int64_t t = 17; t < 32; ++t) {
          const float* row = logits.data<float>() + (t - 1) * 1000;
          chunk += token_nll({row, 1000}, ids[static_cast<size_t>(begin + t)]);
        }
        EXPECT_NEAR(r.windows[c].nll_sum, chunk, 1e-4) << "chunk " << c;
        want += chunk;
      }
      EXPECT_EQ(r.tokens, 60);
      EXPECT_NEAR(r.nll_sum, want, 4e-4);
    }
  }
  PerplexityOptions o{.max_length = 76};
  o.llama_cpp_chunks = true;
  expect_error([&] { perplexity(model, ids, o); },
               "150 tokens; llama.cpp's chunks of 76 need at least 152");
  o.max_length = 3;
  expect_error([&] { perplexity(model, ids, o); }, "a max_length of at least 4, got 3");
  o.max_length = 32;
  o.chunk_bos = 1000;
  expect_error([&] { perplexity(model, ids, o); }, "chunk_bos 1000 is out of range");
}

// The decoder's logits from a position on (what perplexity asks for) are the same rows of the
// whole step's logits; a start outside the step, or without all_logits, is refused.
TEST(Perplexity, LogitsFromAPositionAreTheWholeStepsRows) {
  const CausalLM model = load("qwen3-tiny");
  const Decoder& decoder = model.decoder();
  const std::vector<int64_t> ids = {5, 9, 2, 7, 11, 3, 8};
  const auto s = static_cast<int64_t>(ids.size());
  const auto step_of = [&](int64_t rows, int64_t from) {
    StepInput step;
    step.batch = rows;
    step.seq = s;
    step.all_logits = true;
    step.logits_from = from;
    for (int64_t r = 0; r < rows; ++r) {
      step.ids.insert(step.ids.end(), ids.begin(), ids.end());
      for (int32_t p = 0; p < s; ++p) step.positions.push_back(p);
    }
    step.key_mask.assign(static_cast<size_t>(rows * s), 1);
    return step;
  };
  KvCache whole_cache = decoder.new_cache(1, s);
  const std::vector<float> whole = decoder.forward(step_of(1, 0), whole_cache).to_f32_vector();
  const int64_t vocab = model.config().vocab_size;
  for (int64_t from : {1, 4, 6}) {
    KvCache cache = decoder.new_cache(2, s);
    const Tensor got = decoder.forward(step_of(2, from), cache);
    ASSERT_EQ(got.shape(), (Shape{2, s - from, vocab}));
    const std::vector<float> g = got.to_f32_vector();
    for (int64_t r = 0; r < 2; ++r) {
      for (int64_t i = 0; i < (s - from) * vocab; ++i) {
        ASSERT_NEAR(g[static_cast<size_t>(r * (s - from) * vocab + i)],
                    whole[static_cast<size_t>(from * vocab + i)], 1e-5)
            << "from " << from << " row " << r << " at " << i;
      }
    }
  }
  for (int64_t bad : {int64_t{-1}, s}) {
    KvCache cache = decoder.new_cache(1, s);
    expect_error([&] { decoder.forward(step_of(1, bad), cache); },
                 "logits_from " + std::to_string(bad) + " must lie in [0, 7)");
  }
  StepInput last_only = step_of(1, 2);
  last_only.all_logits = false;
  KvCache cache = decoder.new_cache(1, s);
  expect_error([&] { decoder.forward(last_only, cache); }, "comes with all_logits");
}

// The GPUs' windows (their losses taken there, OpenCL's on the host after a copy), float32:
// transformers' sums, and the same with several windows a step (the automatic size there).
class PerplexityOnDevice : public ::testing::TestWithParam<DeviceType> {};

TEST_P(PerplexityOnDevice, SumsAreTransformers) {
  if (const std::string why = test::unavailable_reason(GetParam()); !why.empty()) {
    GTEST_SKIP() << device_type_name(GetParam()) << " tests skipped: " << why;
  }
  const std::string device = test::device_name(std::string(device_type_name(GetParam())));
  for_each_case(device, [](const CausalLM& model, const nlohmann::json& c,
                           const std::vector<int64_t>& ids, PerplexityOptions o) {
    for (int64_t batch : {1, 0}) {
      o.batch_size = batch;
      const PerplexityResult r = perplexity(model, ids, o);
      SCOPED_TRACE("batch " + std::to_string(batch));
      const auto& want = c["windows"];
      ASSERT_EQ(r.windows.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_NEAR(r.windows[i].nll_sum, want[i][3].get<double>(), kSumTolerance)
            << "window " << i;
      }
      EXPECT_EQ(r.tokens, c["tokens"].get<int64_t>());
      EXPECT_NEAR(r.nll_sum, c["nll_sum"].get<double>(), kSumTolerance);
    }
  });
}

// A reference on the device (its KL divergences taken there): the CPU's figures.
TEST_P(PerplexityOnDevice, ReferenceIsTheCpus) {
  if (const std::string why = test::unavailable_reason(GetParam()); !why.empty()) {
    GTEST_SKIP() << device_type_name(GetParam()) << " tests skipped: " << why;
  }
  const std::string device = test::device_name(std::string(device_type_name(GetParam())));
  const auto ids = goldens()["cases"][0]["ids"].get<std::vector<int64_t>>();
  const auto compare = [&](const std::string& where) {
    const CausalLM model = load("qwen3-tiny", where), reference = load("llama-tiny", where);
    PerplexityOptions o{.max_length = 64, .stride = 32};
    o.reference = &reference;
    return *perplexity(model, ids, o).reference;
  };
  const PerplexityReference got = compare(device), want = compare("cpu");
  ASSERT_EQ(got.kl.size(), want.kl.size());
  for (size_t i = 0; i < got.kl.size(); ++i) {
    EXPECT_NEAR(got.kl[i], want.kl[i], 1e-4 + 1e-3 * want.kl[i]) << "token " << i;
  }
  EXPECT_NEAR(got.nll_sum, want.nll_sum, kSumTolerance);
  EXPECT_LE(std::abs(got.same_top - want.same_top), 2);  // near ties may go either way
}

INSTANTIATE_TEST_SUITE_P(Devices, PerplexityOnDevice,
                         ::testing::Values(DeviceType::cuda, DeviceType::opencl),
                         [](const auto& param_info) {
                           return std::string(device_type_name(param_info.param));
                         });

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
  // The last id is only ever a target (never an input the decoder would check).
  expect_error(
      [&] {
        perplexity(model, std::vector<int64_t>{1, 2, vocab + 3}, {});
      },
      "token id " + std::to_string(vocab + 3) + " at position 2 is out of range");
  expect_error(
      [&] {
        perplexity(model, std::vector<int64_t>{1, 2, -4}, {});
      },
      "token id -4 at position 2 is out of range");
  expect_error([&] { perplexity(model, ids, {.max_length = 4, .stride = 2, .batch_size = -1}); },
               "batch_size -1 must be 0 (automatic) or more");
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
    EXPECT_GT(j["perplexity_error"].get<double>(), 0.0);
    EXPECT_LT(j["perplexity_error"].get<double>(), j["perplexity"].get<double>());
    EXPECT_GT(j["seconds"].get<double>(), 0.0);
    // Windows three to a step: the same result.
    const test::CliRun batched =
        test::run_cli("perplexity " + model_path("qwen3-tiny") + " --dtype f32 --input-ids " + ids +
                      " --max-length 50 --stride 17 --batch-size 3 --json --quiet");
    ASSERT_EQ(batched.exit_code, 0) << batched.err;
    EXPECT_NEAR(nlohmann::json::parse(batched.out)["perplexity"].get<double>(), want, 1e-4 * want);
    // The plain form: a line per window on stderr, the result on stdout.
    const test::CliRun plain =
        test::run_cli("perplexity " + model_path("qwen3-tiny") + " --dtype f32 --input-ids " + ids +
                      " --max-length 50 --stride 17");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_NE(plain.out.find("perplexity "), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find(" +/- "), std::string::npos) << plain.out;
    EXPECT_NE(plain.out.find("over 149 tokens; 7 windows of up to 50 tokens, stride 17"),
              std::string::npos)
        << plain.out;
    EXPECT_NE(plain.err.find("window [17, 67): 17 tokens scored"), std::string::npos) << plain.err;
    return;
  }
  FAIL() << "no qwen3-tiny case of max_length 50 in perplexity.json";
}

TEST(PerplexityCli, ComparesWithAReference) {
  const std::string ids = " --dtype f32 --input-ids 5,17,300,2,9,41,7,7,120,3,66 --max-length 6";
  const test::CliRun json =
      test::run_cli("perplexity " + model_path("qwen3-tiny") + ids + " --reference " +
                    model_path("llama-tiny") + " --reference-dtype f32 --json --quiet");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  const nlohmann::json& ref = j["reference"];
  EXPECT_GT(ref["perplexity"].get<double>(), 1.0);
  EXPECT_GT(ref["kl_divergence"]["mean"].get<double>(), 0.0);
  EXPECT_LE(ref["kl_divergence"]["median"].get<double>(),
            ref["kl_divergence"]["max"].get<double>());
  EXPECT_GE(ref["same_top"].get<double>(), 0.0);
  EXPECT_LE(ref["same_top"].get<double>(), 1.0);
  // The reference's perplexity is its own run's.
  const test::CliRun alone =
      test::run_cli("perplexity " + model_path("llama-tiny") + ids + " --json --quiet");
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const double want = nlohmann::json::parse(alone.out)["perplexity"].get<double>();
  EXPECT_NEAR(ref["perplexity"].get<double>(), want, 1e-6 * want);
  const test::CliRun plain = test::run_cli("perplexity " + model_path("qwen3-tiny") + ids +
                                           " --reference " + model_path("llama-tiny") + " --quiet");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("reference perplexity "), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("KL divergence from the reference: mean "), std::string::npos)
      << plain.out;
  EXPECT_NE(plain.out.find("same top token as the reference: "), std::string::npos) << plain.out;
}

TEST(PerplexityCli, LlamaCppChunks) {
  std::string ids;
  for (int i = 0; i < 40; ++i) ids += (ids.empty() ? "" : ",") + std::to_string(3 + 7 * i % 900);
  const test::CliRun run =
      test::run_cli("perplexity " + model_path("qwen3-tiny") + " --dtype f32 --input-ids " + ids +
                    " --max-length 16 --llama-cpp-chunks --quiet");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("over 14 tokens; 2 llama.cpp chunks of 16 tokens, each scoring its "
                         "second half)"),
            std::string::npos)
      << run.out;
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
  run = test::run_cli("perplexity " + m + " --input-ids 1,2,3 --llama-cpp-chunks --stride 2");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--stride does not apply to --llama-cpp-chunks"), std::string::npos)
      << run.err;
  run = test::run_cli("perplexity " + m + " --input-ids 1,2,3 --reference-dtype f32");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--reference-dtype needs --reference"), std::string::npos) << run.err;
  run = test::run_cli("perplexity " + m + " --input-ids 1,2,3 --reference " + m +
                      " --reference-dtype q4");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("--reference-dtype: 'q4' is not one of f32, bf16, f16"), std::string::npos)
      << run.err;
  run = test::run_cli("perplexity " + m + " --file /nonexistent/text.txt");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.err.find("/nonexistent/text.txt"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace anvil
