// generation_config.json's n-gram ban, bad words, minimum lengths, forced eos and suppressed
// tokens against transformers' own greedy generations (scripts/goldens/make_processor_goldens.py:
// qwen2-tiny's padded batch, eos set to a token greedy decoding reaches early), and the fields
// anvil refuses rather than ignores.
#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <span>

#include "anvil/config.h"
#include "anvil/error.h"
#include "anvil/model.h"
#include "formats/mapped_file.h"
#include "generate/generate.h"
#include "generate/generation_settings.h"
#include "test_data.h"

namespace anvil {
namespace {

// The goldens, qwen2-tiny in float32 and the batch they continue.
struct Goldens {
  nlohmann::json data =
      nlohmann::json::parse(read_text_file(test::data_dir() + "/extra/processors.json"));
  CausalLM model = CausalLM::from_pretrained(test::model_dir("qwen2-tiny"), [] {
    ModelOptions o;
    o.dtype = DType::f32;
    return o;
  }());
  Batch batch = [this] {
    Batch b;
    b.input_ids = data["input_ids"].get<std::vector<std::vector<int64_t>>>();
    b.attention_mask = data["attention_mask"].get<std::vector<std::vector<int64_t>>>();
    return b;
  }();
};

TEST(LogitsProcessorParity, NgramBanAndMinimumLengthsMatchTransformers) {
  const Goldens g;
  const CausalLM& model = g.model;
  const Batch& b = g.batch;
  for (const auto& c : g.data["cases"]) {
    const std::string cfg = c["generation_config"].dump();
    SCOPED_TRACE(cfg);
    const GenerationConfig gen = GenerationConfig::from_json_text(cfg, "generation_config.json");
    const auto got = run_generate(model.decoder(), gen, b, GenerateOptions{});
    EXPECT_EQ(got, c["output"].get<std::vector<std::vector<int64_t>>>());
  }
}

// The repetition penalty skips each row's left padding, as transformers' prompt_ignore_length
// does: padding made of the token greedy decoding picks first, which is still picked first.
// Greedy, beam search and top-k 1 sampling (whose pick goes through the candidates).
TEST(LogitsProcessorParity, RepetitionPenaltySkipsTheLeftPadding) {
  const Goldens g;
  Batch b = g.batch;
  b.input_ids = g.data["penalty_input_ids"].get<std::vector<std::vector<int64_t>>>();
  for (const auto& c : g.data["penalty_cases"]) {
    const std::string cfg = c["generation_config"].dump();
    SCOPED_TRACE(cfg);
    const GenerationConfig gen = GenerationConfig::from_json_text(cfg, "generation_config.json");
    EXPECT_EQ(run_generate(g.model.decoder(), gen, b, GenerateOptions{}),
              c["output"].get<std::vector<std::vector<int64_t>>>());
  }
}

// sequence_bias, exponential_decay_length_penalty, renormalize_logits under beam search,
// max_time 0 (one token, greedy and beams), forced_bos_token_id on a one-token prompt (with
// begin_suppress_tokens a step later) and on longer ones (no effect).
TEST(LogitsProcessorParity, BiasDecayRenormalizeMaxTimeAndForcedBos) {
  const Goldens g;
  const auto check = [&](const nlohmann::json& cases, const Batch& b) {
    for (const auto& c : cases) {
      const std::string cfg = c["generation_config"].dump();
      SCOPED_TRACE(cfg);
      const GenerationConfig gen = GenerationConfig::from_json_text(cfg, "generation_config.json");
      EXPECT_EQ(run_generate(g.model.decoder(), gen, b, GenerateOptions{}),
                c["output"].get<std::vector<std::vector<int64_t>>>());
    }
  };
  ASSERT_EQ(g.data["more_cases"].size(), 8u);
  const auto generate_error = [&](const std::string& cfg) {
    try {
      run_generate(g.model.decoder(), GenerationConfig::from_json_text(cfg, "g.json"), g.batch,
                   GenerateOptions{});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(generate_error(R"({"sequence_bias": [[[5000], 1.0]], "max_new_tokens": 2})")
                .find("sequence_bias: token 5000 is past the vocabulary (1000 tokens)"),
            std::string::npos);
  EXPECT_NE(generate_error(R"({"exponential_decay_length_penalty": [1, 1.5], "eos_token_id": null,
      "max_new_tokens": 2})")
                .find("needs an eos token"),
            std::string::npos);
  check(g.data["more_cases"], g.batch);
  Batch one;
  one.input_ids = g.data["bos_input_ids"].get<std::vector<std::vector<int64_t>>>();
  check(g.data["bos_cases"], one);
}

// Neither max_new_tokens nor max_length set: 20 new tokens, as transformers 5 (not 20 in all);
// a max_length the file sets counts the prompt; a prompt already at the limit is refused; the
// default stops at max_position_embeddings.
TEST(LogitsProcessorParity, DefaultLengthsAsTransformers5) {
  const Goldens g;
  for (const auto& c : g.data["length_cases"]) {
    const std::string cfg = c["generation_config"].dump();
    SCOPED_TRACE(cfg);
    const GenerationConfig gen = GenerationConfig::from_json_text(cfg, "generation_config.json");
    EXPECT_EQ(run_generate(g.model.decoder(), gen, g.batch, GenerateOptions{}),
              c["output"].get<std::vector<std::vector<int64_t>>>());
  }
  const auto settings = [](const std::string& cfg, int64_t prompt, int64_t positions) {
    return resolve_settings(GenerationConfig::from_json_text(cfg, "generation_config.json"),
                            GenerateOptions{}, prompt, positions);
  };
  EXPECT_EQ(settings("{}", 9, 1024).max_new, 20);
  EXPECT_EQ(settings("{}", 1010, 1024).max_new, 14);  // within max_position_embeddings
  EXPECT_EQ(settings(R"({"max_length": 30})", 9, 1024).max_new, 21);
  EXPECT_EQ(settings(R"({"max_length": 30, "max_new_tokens": 4})", 9, 1024).max_new, 4);
  try {
    settings(R"({"max_length": 9})", 9, 1024);
    ADD_FAILURE() << "a prompt at max_length was not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the prompt has 9 ids but max_length is 9"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(settings("{}", 1024, 1024), Error);
}

// GenerateOptions::prefix_allowed_tokens against transformers' prefix_allowed_tokens_fn (the same
// function on both sides: ids whose residue mod 3 follows the batch id and the row's length),
// greedy, penalised, beams, and sampled repeats (whose batch id is the prompt's); and a custom
// logits processor that bans two ids gives transformers' suppress_tokens output for them.
TEST(LogitsProcessorParity, PrefixAllowedTokensAndCustomProcessors) {
  const Goldens g;
  const int64_t vocab = g.model.config().vocab_size;
  GenerateOptions o;
  o.prefix_allowed_tokens = [vocab](int64_t batch_id, const std::vector<int64_t>& ids) {
    std::vector<int64_t> allowed;
    for (int64_t t = 0; t < vocab; ++t) {
      if ((t + batch_id + static_cast<int64_t>(ids.size())) % 3 == 0) allowed.push_back(t);
    }
    return allowed;
  };
  ASSERT_EQ(g.data["prefix_cases"].size(), 5u);
  for (const auto& c : g.data["prefix_cases"]) {
    const std::string cfg = c["generation_config"].dump();
    SCOPED_TRACE(cfg);
    const GenerationConfig gen = GenerationConfig::from_json_text(cfg, "generation_config.json");
    EXPECT_EQ(run_generate(g.model.decoder(), gen, g.batch, o),
              c["output"].get<std::vector<std::vector<int64_t>>>());
  }
  GenerateOptions empty;
  empty.prefix_allowed_tokens = [](int64_t, const std::vector<int64_t>&) {
    return std::vector<int64_t>{};
  };
  EXPECT_THROW(run_generate(g.model.decoder(), GenerationConfig{}, g.batch, empty), Error);

  const auto& suppressed = g.data["cases"][8];  // {"suppress_tokens": [first, second]}
  const auto banned =
      suppressed["generation_config"]["suppress_tokens"].get<std::vector<int64_t>>();
  GenerationConfig plain = GenerationConfig::from_json_text(suppressed["generation_config"].dump(),
                                                            "generation_config.json");
  plain.suppress_tokens.clear();
  GenerateOptions custom;
  custom.logits_processors.push_back(
      [banned](const std::vector<int64_t>&, std::span<float> scores) {
        for (int64_t id : banned) scores[id] = -std::numeric_limits<float>::infinity();
      });
  EXPECT_EQ(run_generate(g.model.decoder(), plain, g.batch, custom),
            suppressed["output"].get<std::vector<std::vector<int64_t>>>());
}

TEST(LogitsProcessorParity, OptionsOverrideTheConfig) {
  const Goldens goldens;
  // The first case (no_repeat_ngram_size 2) through GenerateOptions on a config without it.
  const auto& c = goldens.data["cases"][0];
  const GenerationConfig plain = GenerationConfig::from_json_text(
      R"({"do_sample": false, "max_new_tokens": 20, "pad_token_id": 0})", "generation_config.json");
  GenerateOptions g;
  g.no_repeat_ngram_size = 2;
  EXPECT_EQ(run_generate(goldens.model.decoder(), plain, goldens.batch, g),
            c["output"].get<std::vector<std::vector<int64_t>>>());
}

// Malformed fields fail at load; fields anvil does not implement load (the model's logits do
// not depend on them) and generate() refuses them by name.
TEST(GenerationConfig, RefusesWhatWouldChangeTheOutputByName) {
  const auto error = [](const std::string& text) {
    try {
      GenerationConfig::from_json_text(text, "generation_config.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(R"({"typical_p": 1.5})").find("typical_p"), std::string::npos);
  EXPECT_NE(error(R"({"bad_words_ids": [[5], []]})").find("bad_words_ids"), std::string::npos);
  EXPECT_NE(error(R"({"bad_words_ids": [5, 6]})").find("bad_words_ids"), std::string::npos);
  EXPECT_NE(error(R"({"no_repeat_ngram_size": -1})").find("no_repeat_ngram_size"),
            std::string::npos);
  EXPECT_NE(error(R"({"sequence_bias": [[[], 1.0]]})").find("sequence_bias"), std::string::npos);
  EXPECT_NE(error(R"({"sequence_bias": [[[5], "x"]]})").find("sequence_bias"), std::string::npos);
  EXPECT_NE(error(R"({"exponential_decay_length_penalty": [2]})")
                .find("exponential_decay_length_penalty"),
            std::string::npos);
  EXPECT_NE(error(R"({"max_time": -1})").find("max_time"), std::string::npos);
  const auto unimplemented = [](const std::string& text) {
    return GenerationConfig::from_json_text(text, "generation_config.json").unimplemented;
  };
  EXPECT_EQ(unimplemented(R"({"num_beam_groups": 2})"),
            "generation_config.json: field 'num_beam_groups' is 2: group beam search is not "
            "implemented");
  EXPECT_NE(unimplemented(R"({"penalty_alpha": 0.6})").find("contrastive search"),
            std::string::npos);
  EXPECT_NE(unimplemented(R"({"constraints": [1]})").find("constraints"), std::string::npos);
  // Defaults, nulls and empty lists are what transformers ignores too.
  EXPECT_EQ(unimplemented(R"({"num_beams": 1, "typical_p": 1.0, "epsilon_cutoff": 0.0,
      "bad_words_ids": null, "suppress_tokens": [], "guidance_scale": null,
      "renormalize_logits": true, "output_scores": true})"),
            "");
  // generate() raises it.
  const Goldens goldens;
  const GenerationConfig beams =
      GenerationConfig::from_json_text(R"({"num_beam_groups": 4})", "generation_config.json");
  try {
    run_generate(goldens.model.decoder(), beams, goldens.batch, GenerateOptions{});
    ADD_FAILURE() << "group beam search was not refused";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), beams.unimplemented);
  }
}

}  // namespace
}  // namespace anvil
