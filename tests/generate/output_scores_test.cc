// GenerateOptions::scores / ::logits against transformers' output_scores / output_logits
// (scripts/goldens/make_scores_goldens.py): the raw logits of every step, the scores after the
// processors (repetition penalty, n-gram ban, renormalisation) and the sampling warpers, and
// beam search's sequences_scores and beam_indices.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "expect_error.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

// `got` (steps of [rows, vocab]) against `want` [steps * rows, vocab]: the same -inf entries,
// the finite ones within `tol`.
void expect_steps(const std::vector<Tensor>& got, const Tensor& want, int64_t rows, float tol) {
  const std::vector<float> w = want.to_f32_vector();
  const int64_t vocab = want.size(-1);
  ASSERT_EQ(static_cast<int64_t>(got.size()) * rows * vocab, static_cast<int64_t>(w.size()));
  for (size_t step = 0; step < got.size(); ++step) {
    ASSERT_EQ(got[step].shape(), (Shape{rows, vocab}));
    const std::vector<float> g = got[step].to_f32_vector();
    for (size_t i = 0; i < g.size(); ++i) {
      const float x = w[step * rows * vocab + i];
      if (std::isinf(x)) {
        ASSERT_EQ(g[i], x) << "step " << step << " entry " << i;
      } else {
        ASSERT_NEAR(g[i], x, tol) << "step " << step << " entry " << i;
      }
    }
  }
}

class OutputScores : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new CausalLM(CausalLM::from_pretrained(test::model_dir("qwen3-tiny")));
    golden_ = new SafetensorsFile(SafetensorsFile::open(test::golden_path("qwen3-tiny")));
    scores_ = new SafetensorsFile(
        SafetensorsFile::open(test::data_dir() + "/extra/scores-qwen3-tiny.safetensors"));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete golden_;
    delete scores_;
  }
  static GenerateOptions options(int64_t tokens, std::vector<Tensor>* scores,
                                 std::vector<Tensor>* logits) {
    GenerateOptions o;
    o.max_new_tokens = tokens;
    o.eos_token_ids = std::vector<int64_t>{};
    o.pad_token_id = 0;
    o.scores = scores;
    o.logits = logits;
    return o;
  }
  static inline CausalLM* model_ = nullptr;
  static inline SafetensorsFile* golden_ = nullptr;
  static inline SafetensorsFile* scores_ = nullptr;
};

TEST_F(OutputScores, GreedyWithProcessorsGivesTransformersScoresAndLogits) {
  std::vector<Tensor> scores, logits;
  GenerateOptions o = options(6, &scores, &logits);
  o.do_sample = false;
  o.repetition_penalty = 1.3f;
  o.no_repeat_ngram_size = 2;
  Batch a;
  a.input_ids = test::id_rows(*golden_, "input_ids_a");
  EXPECT_EQ(model_->generate(a, o), test::id_rows(*scores_, "greedy_sequences"));
  expect_steps(logits, scores_->load("greedy_logits"), 1, 1e-4f);
  expect_steps(scores, scores_->load("greedy_scores"), 1, 1e-4f);
}

// renormalize_logits is a generation_config field (as in transformers): a copy of the fixture
// whose generation_config.json sets it.
TEST_F(OutputScores, PaddedBatchWithRenormalisedScores) {
  test::TempDir dir;
  const std::string from = test::model_dir("qwen3-tiny");
  for (const char* f : {"config.json", "model.safetensors"}) {
    std::filesystem::copy_file(from + "/" + f, dir.file(f));
  }
  nlohmann::json gen = nlohmann::json::parse(std::ifstream(from + "/generation_config.json"));
  gen["renormalize_logits"] = true;
  std::ofstream(dir.file("generation_config.json")) << gen.dump();
  const CausalLM model = CausalLM::from_pretrained(dir.path());
  std::vector<Tensor> scores;
  GenerateOptions o = options(4, &scores, nullptr);
  o.do_sample = false;
  Batch b;
  b.input_ids = test::id_rows(*golden_, "input_ids_b");
  b.attention_mask = test::id_rows(*golden_, "attention_mask_b");
  EXPECT_EQ(model.generate(b, o), test::id_rows(*scores_, "batch_sequences"));
  expect_steps(scores, scores_->load("batch_scores"), 2, 1e-4f);
}

TEST_F(OutputScores, SampledStepScoresAreAfterTheWarpers) {
  std::vector<Tensor> scores;
  GenerateOptions o = options(1, &scores, nullptr);
  o.do_sample = true;
  o.temperature = 0.7f;
  o.top_k = 20;
  o.top_p = 0.9f;
  Batch a;
  a.input_ids = test::id_rows(*golden_, "input_ids_a");
  model_->generate(a, o);
  expect_steps(scores, scores_->load("sample_scores"), 1, 1e-4f);
}

// Beam search: the beams' rows each step (log-probabilities after the repetition penalty),
// the returned rows' length-penalised scores, and which beam each new token extended, where
// some hypotheses end early at eos (their indices then -1).
TEST_F(OutputScores, BeamSearchGivesTransformersScoresAndBeamIndices) {
  std::vector<Tensor> scores, logits;
  std::vector<float> sequences_scores;
  std::vector<std::vector<int64_t>> beam_indices;
  GenerateOptions o = options(6, &scores, &logits);
  o.do_sample = false;
  o.num_beams = 3;
  o.num_return_sequences = 2;
  o.length_penalty = 0.8f;
  o.repetition_penalty = 1.2f;
  o.eos_token_ids = test::id_rows(*scores_, "beam_eos")[0];
  o.sequences_scores = &sequences_scores;
  o.beam_indices = &beam_indices;
  Batch b;
  b.input_ids = test::id_rows(*golden_, "input_ids_b");
  b.attention_mask = test::id_rows(*golden_, "attention_mask_b");
  EXPECT_EQ(model_->generate(b, o), test::id_rows(*scores_, "beam_sequences"));
  expect_steps(logits, scores_->load("beam_logits"), 6, 1e-4f);
  expect_steps(scores, scores_->load("beam_scores"), 6, 1e-4f);
  EXPECT_EQ(beam_indices, test::id_rows(*scores_, "beam_indices"));
  const std::vector<float> want = scores_->load("beam_sequences_scores").to_f32_vector();
  ASSERT_EQ(sequences_scores.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(sequences_scores[i], want[i], 1e-4f) << i;
  // A hypothesis that ended early: its indices stop where its tokens do.
  EXPECT_EQ(beam_indices[0].back(), -1);
}

TEST_F(OutputScores, BeamOutputsRefusedWithoutBeams) {
  std::vector<float> sequences_scores;
  GenerateOptions o = options(3, nullptr, nullptr);
  o.do_sample = false;
  o.sequences_scores = &sequences_scores;
  test::expect_error([&] { model_->generate(test::id_rows(*golden_, "input_ids_a")[0], o); },
                     "beam search only");
}

}  // namespace
}  // namespace anvil
