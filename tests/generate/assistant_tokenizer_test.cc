// An assistant of another tokenizer (transformers' universal assisted decoding): its drafts pass
// through text, and the model's tokens stay its own whatever the tokenizers (greedy and top-1
// sampling give plain greedy's tokens); on a real model whose text round-trips, most drafts are
// kept; what cannot work is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "anvil/auto_tokenizer.h"
#include "anvil/model.h"
#include "anvil/tokenizer.h"
#include "cli/cli_run.h"
#include "expect_error.h"
#include "formats/default_model.h"
#include "formats/mapped_file.h"
#include "models/init_model.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

using Ids = std::vector<int64_t>;

Tokenizer fixture_tokenizer(const std::string& name) {
  return Tokenizer::from_file(test::data_dir() + "/tokenizers/" + name + "/tokenizer.json");
}

// A random llama-tiny with `vocab` ids, written into `dir`.
CausalLM random_llama(const test::TempDir& dir, int64_t vocab) {
  nlohmann::json config =
      nlohmann::json::parse(read_text_file(test::model_dir("llama-tiny") + "/config.json"));
  config["vocab_size"] = vocab;
  std::ofstream(dir.file("like.json")) << config.dump();
  std::filesystem::create_directory(dir.file("model"));
  init_model(dir.file("like.json"), dir.file("model"), 7, "f32");
  return CausalLM::from_pretrained(dir.file("model"));
}

GenerateOptions bridged(const CausalLM& assistant, const Tokenizer& target,
                        const Tokenizer& drafting, SpeculationStats* stats) {
  GenerateOptions o = test::greedy_exactly(40);
  o.assistant_model = &assistant;
  o.tokenizer = &target;
  o.assistant_tokenizer = &drafting;
  o.num_assistant_tokens = 5;
  o.assistant_confidence_threshold = 0.0f;  // random weights are never confident
  o.speculation_stats = stats;
  return o;
}

// A llama-tiny (SentencePiece tokenizer) with a random assistant of a byte-level tokenizer and
// twice the vocabulary: greedy and top-1 sampling give the model's own tokens.
TEST(AssistantTokenizer, AnotherTokenizerLeavesTheTokensAlone) {
  const CausalLM model = CausalLM::from_pretrained(test::model_dir("llama-tiny"));
  const Tokenizer target = fixture_tokenizer("spm-llama2");
  const Tokenizer drafting = fixture_tokenizer("gpt2-bytelevel");
  test::TempDir dir;
  const CausalLM assistant = random_llama(dir, drafting.vocab_size());
  const Ids prompt = {1, 415, 210, 338, 263, 124, 310, 278};
  const Ids plain = model.generate(prompt, test::greedy_exactly(40));
  SpeculationStats stats;
  EXPECT_EQ(model.generate(prompt, bridged(assistant, target, drafting, &stats)), plain);
  EXPECT_GT(stats.steps, 0);
  EXPECT_GT(stats.drafted, 0);
  EXPECT_LE(stats.accepted, stats.drafted);
  GenerateOptions sampled = bridged(assistant, target, drafting, nullptr);
  sampled.do_sample = true;
  sampled.top_k = 1;
  sampled.seed = 3;
  EXPECT_EQ(model.generate(prompt, sampled), plain);
}

TEST(AssistantTokenizer, WhatItCannotTakeIsRefused) {
  const CausalLM model = CausalLM::from_pretrained(test::model_dir("llama-tiny"));
  const Tokenizer target = fixture_tokenizer("spm-llama2");
  const Tokenizer drafting = fixture_tokenizer("gpt2-bytelevel");
  const Ids prompt = {1, 415, 210, 338, 263, 124, 310, 278};
  test::TempDir dir;
  const CausalLM assistant = random_llama(dir, drafting.vocab_size());
  GenerateOptions o = bridged(assistant, target, drafting, nullptr);
  o.tokenizer = nullptr;
  test::expect_error([&] { model.generate(prompt, o); }, "needs tokenizer, the model's own");
  // A tokenizer of more ids than the assistant has rows: not its tokenizer.
  const CausalLM small = CausalLM::from_pretrained(test::model_dir("extra/olmo2-tiny"));
  test::expect_error([&] { model.generate(prompt, bridged(small, target, drafting, nullptr)); },
                     "outside the assistant model's vocabulary of 300");
  // Its drafts are the model's tokens, none the assistant's own to keep or reject.
  o = bridged(assistant, target, drafting, nullptr);
  o.assistant_confidence_threshold = 0.4f;
  o.assistant_adaptive_confidence = true;
  test::expect_error([&] { model.generate(prompt, o); },
                     "assistant_adaptive_confidence: not with an assistant of another tokenizer");
}

// SmolLM2 (f32) with its own Q4_1 weights as the assistant, drafting through the text (a long
// prompt: the assistant's ids kept incrementally): the tokens are plain greedy's, and as the
// text round-trips, most drafts are kept.
TEST(AssistantTokenizer, TheDefaultModelThroughItsOwnText) {
  const std::string path = default_model_cache_path();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "the default model is not at " << path
                 << " (scripts/test fetches it with `anvil default-model`)";
  }
  ModelOptions f32;
  f32.dtype = DType::f32;
  const CausalLM model = CausalLM::from_pretrained(path, f32);
  const CausalLM assistant = CausalLM::from_pretrained(path);
  const auto tok = AutoTokenizer::from_pretrained(path);
  // A prompt of over 512 bytes: the assistant's ids are then part finalised, part re-encoded.
  const Ids prompt = tok.encode(
      "Johannes Gutenberg was a goldsmith in Mainz. Around 1440 he began to work on a press that "
      "could print pages from movable metal type, a method that was much faster than copying "
      "books by hand or carving whole pages into wooden blocks. His workshop cast letters from "
      "an alloy of lead, tin and antimony, mixed an oil-based ink that stuck to metal, and "
      "adapted the screw presses that were used to make wine and paper. The first large book "
      "printed this way was a Bible in Latin, finished around 1455, and about 180 copies were "
      "made. Within fifty years there were presses in more than two hundred cities across "
      "Europe. The history of the printing press after Gutenberg began in");
  const Ids plain = model.generate(prompt, test::greedy_exactly(40));
  SpeculationStats stats;
  GenerateOptions o = bridged(assistant, tok.tokenizer(), tok.tokenizer(), &stats);
  o.assistant_confidence_threshold = 0.4f;
  EXPECT_EQ(model.generate(prompt, o), plain);
  EXPECT_GT(stats.drafted, 10);
  EXPECT_GE(stats.accepted * 2, stats.drafted) << stats.accepted << " of " << stats.drafted;
}

// `anvil generate --assistant-model` with an assistant of another vocabulary (a random llama
// with a byte-level tokenizer of 2,000 ids, where the default model has 49,152): the CLI sees
// the tokenizers differ and drafts through text (the assistant's ids are not the model's: taken
// as they are, the model's ids would be refused as outside the assistant's vocabulary), and the
// text is plain greedy's.
TEST(AssistantTokenizer, TheCliDraftsThroughTextWhereTheTokenizersDiffer) {
  const std::string path = default_model_cache_path();
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "the default model is not at " << path
                 << " (scripts/test fetches it with `anvil default-model`)";
  }
  test::TempDir dir;
  const Tokenizer drafting = fixture_tokenizer("gpt2-bytelevel");
  random_llama(dir, drafting.vocab_size());
  std::filesystem::copy_file(test::data_dir() + "/tokenizers/gpt2-bytelevel/tokenizer.json",
                             dir.file("model/tokenizer.json"));
  const std::string gen = "generate " + path +
                          " 'The history of the printing press began in' --greedy --dtype f32 "
                          "--max-new-tokens 16 --min-new-tokens 16";
  const test::CliRun plain = test::run_cli(gen);
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const test::CliRun assisted = test::run_cli(gen + " --assistant-model " + dir.file("model") +
                                              " --num-assistant-tokens 4 "
                                              "--assistant-confidence-threshold 0");
  ASSERT_EQ(assisted.exit_code, 0) << assisted.err;
  EXPECT_EQ(assisted.out, plain.out);
  EXPECT_NE(assisted.err.find("assistant: "), std::string::npos) << assisted.err;
}

}  // namespace
}  // namespace anvil
