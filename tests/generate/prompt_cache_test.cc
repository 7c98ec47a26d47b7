// PromptCache: generate() calls that share a prefix run only what follows it, and continue
// exactly as transformers' one uninterrupted generate does (the goldens' gen_long_a); prompts
// that part from the cached tokens reuse their common prefix; what the cache cannot take is
// refused by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "expect_error.h"
#include "generate/prompt_cache.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;

std::vector<int64_t> first(const std::vector<int64_t>& ids, size_t n) {
  return std::vector<int64_t>(ids.begin(), ids.begin() + static_cast<int64_t>(n));
}

// A fixture's model and its goldens' prompt a and 40-token greedy continuation (eos ignored).
struct Loaded {
  CausalLM model;
  SafetensorsFile golden;
  std::vector<int64_t> a, whole;
};
Loaded load(const std::string& name) {
  Loaded l{CausalLM::from_pretrained(test::model_dir(name)),
           SafetensorsFile::open(test::golden_path(name)),
           {},
           {}};
  l.a = test::id_rows(l.golden, "input_ids_a")[0];
  l.whole = test::id_rows(l.golden, "gen_long_a")[0];
  return l;
}

// Fixtures with a 40-token greedy golden (gen_long_a, eos ignored): a window shorter than the
// conversation (Mistral), windows on some layers (Qwen2), Gemma 3's local and global layers.
class PromptCacheTurns : public ::testing::TestWithParam<std::string> {};

// A conversation in three calls through one cache, each prompt the last call's output (or the
// cached tokens exactly), continues token for token as one 40-token generate does.
TEST_P(PromptCacheTurns, CallsContinueAsOneGenerateDoes) {
  const Loaded l = load("extra/" + GetParam());
  const CausalLM& model = l.model;
  const auto &a = l.a, &whole = l.whole;
  ASSERT_EQ(whole.size(), a.size() + 40);

  PromptCache cache;
  GenerateOptions o = test::greedy_exactly(10);
  o.prompt_cache = &cache;
  const auto out1 = model.generate(a, o);
  EXPECT_EQ(out1, first(whole, a.size() + 10));
  EXPECT_EQ(cache.reused(), 0);
  // The last token's keys are not made until a step runs it.
  EXPECT_EQ(cache.tokens(), first(out1, out1.size() - 1));

  o = test::greedy_exactly(14);
  o.prompt_cache = &cache;
  const auto out2 = model.generate(out1, o);  // needs a larger cache than the first call made
  EXPECT_EQ(out2, first(whole, a.size() + 24));
  EXPECT_EQ(cache.reused(), static_cast<int64_t>(out1.size()) - 1);

  // The prompt is exactly what the cache holds: its last token runs again.
  const auto held = cache.tokens();
  o = test::greedy_exactly(17);
  o.prompt_cache = &cache;
  EXPECT_EQ(model.generate(held, o), whole);
  EXPECT_EQ(cache.reused(), static_cast<int64_t>(held.size()) - 1);
  EXPECT_EQ(cache.tokens(), first(whole, whole.size() - 1));
}

// A prompt that parts from the cached tokens reuses their common prefix and runs the rest in
// one step: the same tokens as a call without a cache.
TEST_P(PromptCacheTurns, APromptThatPartsRunsFromTheCommonPrefix) {
  const Loaded l = load("extra/" + GetParam());
  const CausalLM& model = l.model;
  const auto& whole = l.whole;
  const auto other = test::id_rows(l.golden, "input_ids_b")[0];

  PromptCache cache;
  GenerateOptions o = test::greedy_exactly(12);
  o.prompt_cache = &cache;
  model.generate(first(whole, 30), o);
  // 25 tokens in common, then another prompt's tokens (a new message after the history).
  std::vector<int64_t> next = first(whole, 25);
  next.insert(next.end(), other.begin(), other.end());
  const GenerateOptions fresh = test::greedy_exactly(12);
  const auto expected = model.generate(next, fresh);
  EXPECT_EQ(model.generate(next, o), expected);
  EXPECT_EQ(cache.reused(), 25);
  // And back to a prompt that shares nothing with it.
  EXPECT_EQ(model.generate(other, o), model.generate(other, fresh));
  EXPECT_EQ(cache.reused(), 0);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PromptCacheTurns,
                         ::testing::Values("mistral-window-tiny", "qwen2-window-layers-tiny",
                                           "gemma3-text-tiny"),
                         test::ParamName());

class PromptCacheUse : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = new CausalLM(CausalLM::from_pretrained(test::model_dir("qwen3-tiny")));
  }
  static void TearDownTestSuite() { delete model_; }
  static GenerateOptions with(PromptCache& cache, int64_t tokens) {
    GenerateOptions o = test::greedy_exactly(static_cast<int>(tokens));
    o.prompt_cache = &cache;
    return o;
  }
  static inline CausalLM* model_ = nullptr;
};

TEST_F(PromptCacheUse, RefusesWhatItCannotTake) {
  PromptCache cache;
  const std::vector<int64_t> p{5, 6, 7, 8};
  Batch two;
  two.input_ids = {p, p};
  expect_error([&] { model_->generate(two, with(cache, 3)); }, "prompt_cache: takes one prompt");
  Batch padded;
  padded.input_ids = {p};
  padded.attention_mask = {{0, 1, 1, 1}};
  expect_error([&] { model_->generate(padded, with(cache, 3)); }, "without padding");
  GenerateOptions beams = with(cache, 3);
  beams.num_beams = 2;
  expect_error([&] { model_->generate(p, beams); }, "not with beam search");
  // None of these touched the cache; it still works.
  EXPECT_EQ(model_->generate(p, with(cache, 3)), model_->generate(p, test::greedy_exactly(3)));
}

TEST_F(PromptCacheUse, BelongsToOneModelUntilCleared) {
  const CausalLM other = CausalLM::from_pretrained(test::model_dir("qwen2-tiny"));
  const std::vector<int64_t> p{5, 6, 7, 8, 9};
  PromptCache cache;
  model_->generate(p, with(cache, 4));
  expect_error([&] { other.generate(p, with(cache, 4)); }, "another model's keys and values");
  cache.clear();
  EXPECT_TRUE(cache.tokens().empty());
  EXPECT_EQ(other.generate(p, with(cache, 4)), other.generate(p, test::greedy_exactly(4)));
  EXPECT_EQ(cache.tokens().size(), p.size() + 3);
}

TEST_F(PromptCacheUse, OutlivesItsModel) {
  PromptCache cache;
  const std::vector<int64_t> p{5, 6, 7, 8, 9};
  {
    const CausalLM gone = CausalLM::from_pretrained(test::model_dir("qwen3-tiny"));
    gone.generate(p, with(cache, 4));
  }
  // Another model object takes it over, empty: the keys were the freed model's.
  EXPECT_EQ(model_->generate(p, with(cache, 4)), model_->generate(p, test::greedy_exactly(4)));
  EXPECT_EQ(cache.reused(), 0);
}

TEST_F(PromptCacheUse, NoNewTokensLeavesTheCacheAsItWas) {
  PromptCache cache;
  const std::vector<int64_t> p{5, 6, 7, 8, 9};
  model_->generate(p, with(cache, 4));
  const auto held = cache.tokens();
  GenerateOptions none = with(cache, 0);
  none.min_new_tokens = 0;
  EXPECT_EQ(model_->generate(std::vector<int64_t>{1, 2}, none), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(cache.tokens(), held);
}

// Where RoPE's frequencies follow the sequence's length, a fresh prefill would rotate the
// earlier keys differently: such models run every prompt whole, and still continue exactly.
TEST(PromptCacheRope, LengthDependentRopeRunsPromptsWhole) {
  const Loaded l = load("extra/llama-dynamic-tiny");
  const CausalLM& model = l.model;
  const auto &a = l.a, &whole = l.whole;
  PromptCache cache;
  GenerateOptions o = test::greedy_exactly(20);
  o.prompt_cache = &cache;
  const auto out = model.generate(a, o);
  o.max_new_tokens = o.min_new_tokens = 20;
  EXPECT_EQ(model.generate(out, o), whole);
  EXPECT_EQ(cache.reused(), 0);

  ModelConfig config = model.config();
  const std::vector<int64_t> held{1, 2, 3, 4}, prompt{1, 2, 3, 9};
  EXPECT_EQ(reusable_prefix(config, held, prompt), 0);
  config.rope.type = RopeType::standard;
  EXPECT_EQ(reusable_prefix(config, held, prompt), 3);
  EXPECT_EQ(reusable_prefix(config, held, held), 3);  // the last token always runs
  EXPECT_EQ(reusable_prefix(config, {}, prompt), 0);
  config.recompute_cache_past = 16;  // Phi-3's longrope switch
  EXPECT_EQ(reusable_prefix(config, held, prompt), 0);
}

}  // namespace
}  // namespace anvil
