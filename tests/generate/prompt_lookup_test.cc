// Prompt lookup decoding: the draft rule of transformers' PromptLookupCandidateGenerator, and
// generate() with it giving the tokens generate() gives without it (transformers' goldens for
// greedy steps; the same processors per position; a prompt cache), with drafts actually kept;
// what it cannot take is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "expect_error.h"
#include "formats/mapped_file.h"
#include "generate/generation_settings.h"
#include "generate/prompt_lookup.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::expect_error;
using Ids = std::vector<int64_t>;

TEST(LookupDraft, TheFirstEarlierPlaceOfTheLongestNgram) {
  // The bigram (7, 8) occurs at 1 and 5: the first place gives what follows it.
  EXPECT_EQ(lookup_draft({1, 7, 8, 2, 3, 7, 8, 4, 9, 7, 8}, 2, 3, {}), (Ids{2, 3, 7}));
  // Capped by max_tokens and by the end of the sequence.
  EXPECT_EQ(lookup_draft({1, 7, 8, 2, 3, 7, 8, 4, 9, 7, 8}, 2, 1, {}), (Ids{2}));
  EXPECT_EQ(lookup_draft({5, 6, 5, 6}, 2, 10, {}), (Ids{5, 6}));
  // No bigram match: the last token alone (its first place).
  EXPECT_EQ(lookup_draft({4, 9, 3, 4, 1, 2, 9, 4}, 2, 2, {}), (Ids{9, 3}));
  // Cut before an eos; a first match whose draft is only an eos gives nothing.
  EXPECT_EQ(lookup_draft({3, 4, 5, 0, 6, 3}, 2, 5, {0}), (Ids{4, 5}));
  EXPECT_EQ(lookup_draft({3, 0, 5, 3}, 2, 5, {0}), Ids{});
  // Nothing matches; too short to match at all.
  EXPECT_EQ(lookup_draft({1, 2, 3, 4}, 3, 5, {}), Ids{});
  EXPECT_EQ(lookup_draft({1}, 2, 5, {}), Ids{});
  EXPECT_EQ(lookup_draft({1, 1}, 2, 0, {}), Ids{});
  // What the processors forbid cuts the draft; where nothing is left, the next place is tried.
  const AllowedPrefix no_2 = [](const Ids& d) {
    return static_cast<size_t>(std::find(d.begin(), d.end(), 2) - d.begin());
  };
  EXPECT_EQ(lookup_draft({1, 7, 8, 2, 3, 7, 8, 4, 9, 7, 8}, 2, 3, {}, no_2), (Ids{4, 9, 7}));
  EXPECT_EQ(lookup_draft({1, 7, 8, 3, 2, 7, 8, 4, 9, 7, 8}, 2, 3, {}, no_2), (Ids{3}));
  EXPECT_EQ(lookup_draft({7, 2, 5, 7, 2, 6, 7}, 1, 3, {}, no_2), Ids{});
}

struct Loaded {
  CausalLM model;
  Ids a, whole;  // prompt a and its 40-token greedy continuation (gen_long_a, eos ignored)
};
Loaded load(const std::string& name) {
  const auto golden = SafetensorsFile::open(test::golden_path(name));
  return Loaded{CausalLM::from_pretrained(test::model_dir(name)),
                test::id_rows(golden, "input_ids_a")[0], test::id_rows(golden, "gen_long_a")[0]};
}

// Fixtures with a 40-token golden: a sliding window shorter than the sequence (Mistral),
// windows on some layers (Qwen2), Gemma 3's local and global layers. (Dynamic NTK RoPE rotates
// a step's keys by the step's longest position, drafts included, as transformers' assisted
// decoding does: its tokens may differ from plain greedy's, so it is not among them.)
class PromptLookup : public ::testing::TestWithParam<std::string> {};

// What generate() with prompt lookup must do on a sequence it reproduces: each step, the first
// one after the prompt, drafts from the sequence so far and keeps the draft's prefix that the
// sequence continues with, then one token more.
SpeculationStats expected_stats(const Ids& whole, size_t prompt, int64_t max_tokens,
                                int64_t ngram) {
  SpeculationStats s;
  for (size_t at = prompt; at < whole.size();) {
    const Ids so_far(whole.begin(), whole.begin() + static_cast<int64_t>(at));
    const auto left = static_cast<int64_t>(whole.size() - at);
    const Ids draft = lookup_draft(so_far, ngram, std::min(max_tokens, left - 1), {});
    size_t kept = 0;
    while (kept < draft.size() && draft[kept] == whole[at + kept]) ++kept;
    if (!draft.empty()) ++s.steps;
    s.drafted += static_cast<int64_t>(draft.size());
    s.accepted += static_cast<int64_t>(kept);
    at += kept + 1;
  }
  return s;
}

TEST_P(PromptLookup, GreedyTokensAreTransformersWithDraftsKept) {
  const Loaded l = load("extra/" + GetParam());
  int64_t accepted = 0;
  for (int64_t ngram : {1, 2, 3}) {
    SpeculationStats stats;
    GenerateOptions o = test::greedy_exactly(40);
    o.prompt_lookup_num_tokens = 5;
    o.max_matching_ngram_size = ngram;
    o.speculation_stats = &stats;
    EXPECT_EQ(l.model.generate(l.a, o), l.whole) << "n-grams of " << ngram;
    const SpeculationStats want = expected_stats(l.whole, l.a.size(), 5, ngram);
    EXPECT_EQ(stats.steps, want.steps) << ngram;
    EXPECT_EQ(stats.drafted, want.drafted) << ngram;
    EXPECT_EQ(stats.accepted, want.accepted) << ngram;
    accepted += stats.accepted;
  }
  // Where the sequence repeats itself (random weights often do), drafts are kept: fewer
  // forward passes than tokens. (The Mistral fixture's 40 tokens never repeat a draft.)
  if (GetParam() != "mistral-window-tiny") {
    EXPECT_GT(accepted, 0) << GetParam();
  }
}

// transformers' steps of a 40-token generation (its drafts and num_matches) as anvil counts them:
// transformers drafts past the tokens still to generate and drops the extra ones after the
// check; anvil drafts at most what can be kept (one fewer than the tokens left).
SpeculationStats transformers_stats(const nlohmann::json& steps) {
  const auto drafts = steps.at("drafts").get<std::vector<int64_t>>();
  const auto kept = steps.at("kept").get<std::vector<int64_t>>();
  SpeculationStats want;
  int64_t t = 0;  // new tokens before the step
  for (size_t i = 0; i < drafts.size(); ++i) {
    const int64_t d = std::min(drafts[i], 40 - t - 1);
    want.steps += d > 0;
    want.drafted += d;
    want.accepted += kept[i];
    t += kept[i] + 1;
  }
  EXPECT_EQ(t, 40);
  return want;
}

const nlohmann::json& speculative_goldens() {
  static const nlohmann::json data =
      nlohmann::json::parse(read_text_file(test::data_dir() + "/extra/speculative-steps.json"));
  return data;
}

// transformers' own steps (scripts/goldens/make_assistant_schedule_goldens.py): the same
// drafts and kept tokens, its first draft following the prompt.
TEST(PromptLookupGoldens, StepsAreTransformers) {
  for (const nlohmann::json& c : speculative_goldens().at("lookup")) {
    const std::string name = c.at("model");
    const int64_t ngram = c.at("ngram");
    SCOPED_TRACE(name + " n-grams of " + std::to_string(ngram));
    const SpeculationStats want = transformers_stats(c);
    const Loaded l = load(name);
    SpeculationStats stats;
    GenerateOptions o = test::greedy_exactly(40);
    o.prompt_lookup_num_tokens = 5;
    o.max_matching_ngram_size = ngram;
    o.speculation_stats = &stats;
    EXPECT_EQ(l.model.generate(l.a, o), l.whole);
    EXPECT_EQ(stats.steps, want.steps);
    EXPECT_EQ(stats.drafted, want.drafted);
    EXPECT_EQ(stats.accepted, want.accepted);
  }
}

// min_new_tokens' eos suppression cuts a draft at an eos it still bans (the path without a
// vocabulary-wide pass); a bad word is cut by the processors' pass.
TEST(LookupDraft, ProcessorsAllowWhatTheyDoNotBan) {
  GenerationConfig gen;
  gen.eos_token_ids = {0};
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.min_new_tokens = 5;
  const GenerationSettings plain = resolve_settings(gen, o, 4, 100);
  EXPECT_EQ(processors_allow(plain, {1, 2, 3, 4}, 3, 0, 16, {4, 0, 5}), 1u);
  EXPECT_EQ(processors_allow(plain, {1, 2, 3, 4}, 4, 0, 16, {4, 0, 5}), 3u);
  gen.bad_words_ids = {{4, 9}};
  const GenerationSettings bad = resolve_settings(gen, o, 4, 100);
  EXPECT_EQ(processors_allow(bad, {1, 2, 3, 4}, 6, 0, 16, {9, 4, 9}), 0u);
  EXPECT_EQ(processors_allow(bad, {1, 2, 3, 5}, 6, 0, 16, {9, 4, 9, 2}), 2u);
  EXPECT_EQ(processors_allow(bad, {1, 2, 3, 5}, 3, 0, 16, {9, 0, 9}), 1u);
}

// With an n-gram ban, transformers cuts each draft where its processors forbid a token (logits
// of ones set to -inf) and tries the next earlier place where that leaves nothing: the same
// tokens and steps as transformers (scripts/goldens/make_assistant_schedule_goldens.py).
TEST(PromptLookupGoldens, ProcessorsCutDraftsAsTransformers) {
  for (const nlohmann::json& c : speculative_goldens().at("lookup_banned")) {
    const std::string name = c.at("model");
    SCOPED_TRACE(name);
    const SpeculationStats want = transformers_stats(c);
    const Loaded l = load(name);
    SpeculationStats stats;
    GenerateOptions o = test::greedy_exactly(40);
    o.prompt_lookup_num_tokens = 5;
    o.max_matching_ngram_size = 2;
    o.no_repeat_ngram_size = 3;
    o.speculation_stats = &stats;
    EXPECT_EQ(l.model.generate(l.a, o), c.at("sequence").get<Ids>());
    EXPECT_EQ(stats.steps, want.steps);
    EXPECT_EQ(stats.drafted, want.drafted);
    EXPECT_EQ(stats.accepted, want.accepted);
  }
}

// Each kept position's processors see the sequence up to it: a repetition penalty and an
// n-gram ban give what they give one step at a time.
TEST_P(PromptLookup, ProcessorsPerPositionAsOneTokenSteps) {
  const Loaded l = load("extra/" + GetParam());
  GenerateOptions plain = test::greedy_exactly(30);
  plain.repetition_penalty = 1.3f;
  plain.no_repeat_ngram_size = 3;
  GenerateOptions lookup = plain;
  lookup.prompt_lookup_num_tokens = 6;
  lookup.max_matching_ngram_size = 1;
  EXPECT_EQ(l.model.generate(l.a, lookup), l.model.generate(l.a, plain));
}

// Top-k 1 sampling is greedy: drawing per position keeps what greedy keeps.
TEST_P(PromptLookup, SamplingDrawsEachPosition) {
  const Loaded l = load("extra/" + GetParam());
  GenerateOptions o = test::greedy_exactly(40);
  o.do_sample = true;
  o.top_k = 1;
  o.seed = 5;
  o.prompt_lookup_num_tokens = 3;
  o.max_matching_ngram_size = 1;
  EXPECT_EQ(l.model.generate(l.a, o), l.whole);
}

// With a prompt cache: two calls continue as one generate; the rejected drafts' keys are not
// kept.
TEST_P(PromptLookup, WithAPromptCache) {
  const Loaded l = load("extra/" + GetParam());
  PromptCache cache;
  GenerateOptions o = test::greedy_exactly(15);
  o.prompt_lookup_num_tokens = 4;
  o.max_matching_ngram_size = 1;
  o.prompt_cache = &cache;
  const Ids out1 = l.model.generate(l.a, o);
  EXPECT_EQ(cache.tokens(), Ids(out1.begin(), out1.end() - 1));
  o = test::greedy_exactly(25);
  o.prompt_lookup_num_tokens = 4;
  o.max_matching_ngram_size = 1;
  o.prompt_cache = &cache;
  EXPECT_EQ(l.model.generate(out1, o), l.whole);
}

// Every length up to a few tokens (the drafts cut to what may still be generated).
TEST_P(PromptLookup, ShortLimits) {
  const Loaded l = load("extra/" + GetParam());
  for (int n = 0; n <= 4; ++n) {
    GenerateOptions o = test::greedy_exactly(n);
    o.prompt_lookup_num_tokens = 10;
    o.max_matching_ngram_size = 1;
    EXPECT_EQ(l.model.generate(l.a, o),
              Ids(l.whole.begin(), l.whole.begin() + static_cast<int64_t>(l.a.size()) + n))
        << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, PromptLookup,
                         ::testing::Values("mistral-window-tiny", "qwen2-window-layers-tiny",
                                           "gemma3-text-tiny"),
                         test::ParamName());

// eos stops the sequence where the model picks it, drafts or not: the same tokens as without.
TEST(PromptLookupEos, StopsWhereGreedyStops) {
  const Loaded l = load("extra/qwen2-window-layers-tiny");
  // An eos that greedy search reaches after some tokens: the golden's 12th new token.
  const int64_t eos = l.whole[l.a.size() + 11];
  GenerateOptions plain;
  plain.max_new_tokens = 40;
  plain.do_sample = false;
  plain.eos_token_ids = Ids{eos};
  GenerateOptions lookup = plain;
  lookup.prompt_lookup_num_tokens = 8;
  lookup.max_matching_ngram_size = 1;
  const Ids want = l.model.generate(l.a, plain);
  EXPECT_EQ(l.model.generate(l.a, lookup), want);
  EXPECT_EQ(want.back(), eos);
}

TEST(PromptLookupRefusals, WhatItCannotTake) {
  const Loaded l = load("extra/qwen2-window-layers-tiny");
  GenerateOptions o = test::greedy_exactly(5);
  o.prompt_lookup_num_tokens = 4;
  Batch two;
  two.input_ids = {l.a, l.a};
  expect_error([&] { l.model.generate(two, o); },
               "prompt_lookup_num_tokens: not with a batch of 2");
  GenerateOptions beams = o;
  beams.num_beams = 2;
  expect_error([&] { l.model.generate(l.a, beams); }, "not with beam search");
  GenerateOptions scores = o;
  std::vector<Tensor> kept;
  scores.scores = &kept;
  expect_error([&] { l.model.generate(l.a, scores); }, "not with per-step scores");
  GenerateOptions zero = o;
  zero.prompt_lookup_num_tokens = 0;
  expect_error([&] { l.model.generate(l.a, zero); }, "prompt_lookup_num_tokens must be at least 1");
  GenerateOptions ngram = o;
  ngram.max_matching_ngram_size = -1;
  expect_error([&] { l.model.generate(l.a, ngram); }, "max_matching_ngram_size must be at least 1");
  const Loaded phi = load("extra/phi3-longrope-window-tiny");
  expect_error([&] { phi.model.generate(phi.a, o); }, "recomputes its cache");
}

}  // namespace
}  // namespace anvil
