// generate() semantics beyond greedy parity: eos (one or several ids), padding of finished rows,
// min_new_tokens, the streaming callback, seeded sampling, ragged prompts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "anvil/error.h"
#include "anvil/model.h"
#include "generate/shared_prefill.h"
#include "test_data.h"

namespace anvil {
namespace {

class Generate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new CausalLM(CausalLM::from_pretrained(test::model_dir("qwen3-tiny")));
    golden_ = new SafetensorsFile(SafetensorsFile::open(test::golden_path("qwen3-tiny")));
  }
  static void TearDownTestSuite() {
    delete model_;
    delete golden_;
  }
  static GenerateOptions greedy(int64_t n) {
    GenerateOptions o;
    o.max_new_tokens = n;
    o.do_sample = false;
    return o;
  }
  static std::vector<int64_t> prompt() { return test::id_rows(*golden_, "input_ids_a")[0]; }
  static std::vector<int64_t> full_greedy() { return test::id_rows(*golden_, "gen_a")[0]; }

  static inline CausalLM* model_ = nullptr;
  static inline SafetensorsFile* golden_ = nullptr;
};

TEST_F(Generate, StopsAtEos) {
  const auto p = prompt();
  const auto full = full_greedy();
  const int64_t eos = full[p.size() + 3];  // the 4th new token
  GenerateOptions o = greedy(16);
  o.eos_token_ids = std::vector<int64_t>{eos};
  const auto out = model_->generate(p, o);
  // Ends at the first occurrence of eos among the new tokens.
  size_t first = p.size();
  while (full[first] != eos) ++first;
  EXPECT_EQ(out, std::vector<int64_t>(full.begin(), full.begin() + first + 1));
}

TEST_F(Generate, StopsOnAnyOfSeveralEos) {
  const auto p = prompt();
  const auto full = full_greedy();
  GenerateOptions o = greedy(16);
  o.eos_token_ids = std::vector<int64_t>{999999, full[p.size() + 5], full[p.size() + 2]};
  const auto out = model_->generate(p, o);
  EXPECT_LE(out.size(), p.size() + 3);
  EXPECT_EQ(out, std::vector<int64_t>(full.begin(), full.begin() + out.size()));
}

// Repeated rows (num_return_sequences' copies, or a caller's duplicates) share one prompt step
// (shared_prefill.h): each row still continues as transformers continues its prompt, whether
// its distinct row came first or repeats one before it; the same rows with a mask differing
// only in padding are other rows.
TEST_F(Generate, RepeatedRowsShareOnePromptStep) {
  const auto ids = test::id_rows(*golden_, "input_ids_b");
  const auto mask = test::id_rows(*golden_, "attention_mask_b");
  const auto full = test::id_rows(*golden_, "gen_b");
  Batch b;
  const std::vector<size_t> order{1, 0, 1, 1, 0};
  for (size_t r : order) {
    b.input_ids.push_back(ids[r]);
    b.attention_mask.push_back(mask[r]);
  }
  const auto out = model_->generate(b, greedy(16));
  ASSERT_EQ(out.size(), order.size());
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(out[i], full[order[i]]) << "row " << i;
  EXPECT_EQ(distinct_rows(b.input_ids, b.attention_mask).rows, (std::vector<int64_t>{0, 1}));
  auto unmasked = b.attention_mask;
  std::fill(unmasked[1].begin(), unmasked[1].end(), 1);
  EXPECT_EQ(distinct_rows(b.input_ids, unmasked).of, (std::vector<int64_t>{0, 1, 0, 0, 2}));
}

TEST_F(Generate, FinishedRowsArePaddedWhileOthersContinue) {
  Batch b;
  b.input_ids = test::id_rows(*golden_, "input_ids_b");
  b.attention_mask = test::id_rows(*golden_, "attention_mask_b");
  const auto full = test::id_rows(*golden_, "gen_b");
  const size_t plen = b.input_ids[0].size();
  const int64_t eos = full[0][plen + 1];  // row 0 stops after 2 new tokens
  GenerateOptions o = greedy(16);
  o.eos_token_ids = std::vector<int64_t>{eos};
  o.pad_token_id = 0;
  const auto out = model_->generate(b, o);
  ASSERT_EQ(out.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    bool done = false;
    for (size_t i = plen; i < out[r].size(); ++i) {
      if (done) {
        EXPECT_EQ(out[r][i], 0) << "row " << r << " not padded after eos";
      } else {
        EXPECT_EQ(out[r][i], full[r][i]) << "row " << r << " diverged at " << i;
        done = out[r][i] == eos;
      }
    }
  }
  EXPECT_EQ(out[0].size(), out[1].size());
}

TEST_F(Generate, MinNewTokensSuppressesEos) {
  const auto p = prompt();
  const auto full = full_greedy();
  const int64_t eos = full[p.size()];  // greedy would stop at once
  GenerateOptions o = greedy(8);
  o.eos_token_ids = std::vector<int64_t>{eos};
  EXPECT_EQ(model_->generate(p, o).size(), p.size() + 1);
  o.min_new_tokens = 4;
  const auto out = model_->generate(p, o);
  ASSERT_GE(out.size(), p.size() + 5);
  for (size_t i = p.size(); i < p.size() + 4; ++i) EXPECT_NE(out[i], eos);
}

TEST_F(Generate, StreamsEveryTokenAndCanStop) {
  const auto p = prompt();
  std::vector<int64_t> streamed;
  GenerateOptions o = greedy(16);
  o.streamer = [&](const std::vector<int64_t>& step) {
    streamed.push_back(step.at(0));
    return true;
  };
  const auto out = model_->generate(p, o);
  EXPECT_EQ(streamed, std::vector<int64_t>(out.begin() + p.size(), out.end()));
  int calls = 0;
  o.streamer = [&](const std::vector<int64_t>&) { return ++calls < 5; };
  EXPECT_EQ(model_->generate(p, o).size(), p.size() + 5);
}

TEST_F(Generate, SeededSamplingIsReproducibleAndTopK1IsGreedy) {
  const auto p = prompt();
  GenerateOptions o;
  o.max_new_tokens = 16;
  o.do_sample = true;
  o.temperature = 1.5f;
  o.top_k = 0;
  o.seed = 42;
  const auto a = model_->generate(p, o), b = model_->generate(p, o);
  EXPECT_EQ(a, b);
  o.seed = 43;
  EXPECT_NE(model_->generate(p, o), a);
  o.top_k = 1;
  EXPECT_EQ(model_->generate(p, o), full_greedy());
  o.top_k = 0;
  o.top_p = 1e-6f;  // nucleus of one token: greedy again
  EXPECT_EQ(model_->generate(p, o), full_greedy());
}

// Sampling with top-k reads each step's candidates (ops::top_k) and a repetition penalty edits
// the logits in place (ops::repetition_penalty) on the CPU as on a device: the same tokens,
// draw for draw, as the warpers over the whole rows (ANVIL_SAMPLE_ON_HOST=1), greedy and
// sampled, a penalty above and below 1, one prompt and a left-padded batch.
TEST_F(Generate, CandidatesAndPenaltyMatchWholeRows) {
  Batch one, padded;
  one.input_ids = test::id_rows(*golden_, "input_ids_a");
  padded.input_ids = test::id_rows(*golden_, "input_ids_b");
  padded.attention_mask = test::id_rows(*golden_, "attention_mask_b");
  for (const Batch* b : {&one, &padded}) {
    for (float penalty : {1.0f, 1.3f, 0.7f}) {
      for (bool sample : {false, true}) {
        if (!sample && penalty == 1.0f) continue;  // plain greedy: the argmax either way
        GenerateOptions o;
        o.max_new_tokens = 24;
        o.repetition_penalty = penalty;
        o.do_sample = sample;
        if (sample) {
          o.temperature = 0.9f;
          o.top_k = 12;
          o.top_p = 0.9f;
          o.seed = 5;
        }
        const auto fast = model_->generate(*b, o);
        setenv("ANVIL_SAMPLE_ON_HOST", "1", 1);
        const auto whole = model_->generate(*b, o);
        unsetenv("ANVIL_SAMPLE_ON_HOST");
        EXPECT_EQ(fast, whole) << (sample ? "sampling" : "greedy") << " penalty " << penalty
                               << " rows " << b->input_ids.size();
      }
    }
  }
}

TEST_F(Generate, RepetitionPenaltyChangesGreedyOutput) {
  const auto p = prompt();
  GenerateOptions o = greedy(16);
  o.repetition_penalty = 10.0f;
  const auto out = model_->generate(p, o);
  EXPECT_NE(out, full_greedy());
  // A strong penalty keeps new tokens out of what is already in the sequence most of the time.
  EXPECT_EQ(out.size(), full_greedy().size());
}

TEST_F(Generate, RaggedPromptsAreLeftPadded) {
  const auto p = prompt();
  const std::vector<int64_t> shorter(p.begin() + 2, p.end());
  const Batch b = Batch::left_padded({p, shorter}, 0);
  EXPECT_EQ(b.attention_mask[1][0], 0);
  EXPECT_EQ(b.attention_mask[1][2], 1);
  const auto out = model_->generate(b, greedy(8));
  // Row 0 is unaffected by row 1's padding.
  const auto full = full_greedy();
  EXPECT_EQ(out[0], std::vector<int64_t>(full.begin(), full.begin() + p.size() + 8));
  // Row 1 equals generating the shorter prompt alone.
  const auto alone = model_->generate(shorter, greedy(8));
  EXPECT_EQ(std::vector<int64_t>(out[1].begin() + 2, out[1].end()), alone);
}

TEST_F(Generate, RejectsBadInputWithClearErrors) {
  auto error_of = [&](const Batch& b) -> std::string {
    try {
      model_->generate(b, greedy(2));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  Batch out_of_vocab;
  out_of_vocab.input_ids = {{1, 2, 1000}};
  EXPECT_EQ(error_of(out_of_vocab),
            "input id 1000 (row 0, position 2) is out of range for vocab_size 1000");
  Batch negative;
  negative.input_ids = {{-1}};
  EXPECT_NE(error_of(negative).find("out of range"), std::string::npos);
  Batch ragged;
  ragged.input_ids = {{1, 2}, {3}};
  EXPECT_NE(error_of(ragged).find("row 1 has 1 ids"), std::string::npos);
  Batch bad_mask;
  bad_mask.input_ids = {{1, 2}};
  bad_mask.attention_mask = {{1, 2}};
  EXPECT_NE(error_of(bad_mask).find("0 or 1"), std::string::npos);
  Batch empty;
  EXPECT_NE(error_of(empty).find("empty"), std::string::npos);
}

}  // namespace
}  // namespace anvil
