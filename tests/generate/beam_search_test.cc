// Beam search and num_return_sequences against transformers' own generate
// (scripts/goldens/make_beam_goldens.py: qwen2-tiny's left-padded batch and llama-tiny's prompt,
// eos set to tokens the beams reach early, every early_stopping mode and several length
// penalties; Mistral's sliding window and Phi-3's longrope past its original context), the KV
// cache row gather, and the settings transformers refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "anvil/config.h"
#include "anvil/error.h"
#include "anvil/model.h"
#include "formats/mapped_file.h"
#include "generate/beam_search.h"
#include "generate/generate.h"
#include "generate/generation_settings.h"
#include "test_data.h"

namespace anvil {
namespace {

const nlohmann::json& goldens() {
  static const nlohmann::json data =
      nlohmann::json::parse(read_text_file(test::data_dir() + "/extra/beams.json"));
  return data;
}

CausalLM load_f32(const std::string& name) {
  ModelOptions o;
  o.dtype = DType::f32;
  return CausalLM::from_pretrained(test::model_dir(name), o);
}

Batch batch_of(const nlohmann::json& model) {
  Batch b;
  b.input_ids = model["input_ids"].get<std::vector<std::vector<int64_t>>>();
  b.attention_mask = model["attention_mask"].get<std::vector<std::vector<int64_t>>>();
  return b;
}

class BeamParity : public testing::TestWithParam<std::string> {};

TEST_P(BeamParity, SequencesAndScoresMatchTransformers) {
  const auto& model_goldens = goldens()[GetParam()];
  const CausalLM model = load_f32(GetParam());
  const Batch batch = batch_of(model_goldens);
  for (const auto& c : model_goldens["cases"]) {
    const std::string cfg = c["generation_config"].dump();
    SCOPED_TRACE(cfg);
    const GenerationConfig gen = GenerationConfig::from_json_text(cfg, "generation_config.json");
    const auto want = c["output"].get<std::vector<std::vector<int64_t>>>();
    EXPECT_EQ(run_generate(model.decoder(), gen, batch, GenerateOptions{}), want);
    const GenerationSettings settings =
        resolve_settings(gen, GenerateOptions{}, static_cast<int64_t>(batch.input_ids[0].size()),
                         model.config().max_position_embeddings);
    const BeamSearchResult got =
        run_beam_search(model.decoder(), settings, batch, checked_mask(batch));
    const auto scores = c["scores"].get<std::vector<float>>();
    ASSERT_EQ(got.scores.size(), scores.size());
    for (size_t i = 0; i < scores.size(); ++i) {
      EXPECT_NEAR(got.scores[i], scores[i], 1e-4 * std::max(1.0f, std::fabs(scores[i])));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BeamParity,
                         testing::Values("qwen2-tiny", "llama-tiny", "extra/mistral-window-tiny",
                                         "extra/phi3-longrope-window-tiny"),
                         [](const testing::TestParamInfo<std::string>& p) {
                           std::string name = p.param;
                           for (char& ch : name) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

// The options reach the same result as the config's fields.
TEST(BeamSearch, OptionsOverrideTheConfig) {
  const auto& model_goldens = goldens()["qwen2-tiny"];
  const CausalLM model = load_f32("qwen2-tiny");
  const auto& c = model_goldens["cases"][9];  // num_beams 4, num_return_sequences 3
  ASSERT_EQ(c["generation_config"]["num_return_sequences"], 3);
  GenerateOptions o;
  o.num_beams = 4;
  o.num_return_sequences = 3;
  o.eos_token_ids = std::vector<int64_t>{c["generation_config"]["eos_token_id"].get<int64_t>()};
  o.max_new_tokens = 12;
  o.pad_token_id = 0;
  EXPECT_EQ(model.generate(batch_of(model_goldens), o),
            c["output"].get<std::vector<std::vector<int64_t>>>());
}

TEST(BeamSearch, RefusesWhatTransformersRefuses) {
  const CausalLM model = load_f32("llama-tiny");
  const std::vector<int64_t> ids{1, 2, 3};
  const auto error = [&](const GenerateOptions& o) {
    try {
      Batch b;
      b.input_ids = {ids};
      model.generate(b, o);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  GenerateOptions o;
  o.max_new_tokens = 3;
  o.num_beams = 2;
  o.num_return_sequences = 3;
  EXPECT_NE(error(o).find("must not exceed num_beams"), std::string::npos);
  o.num_beams = 1;
  o.do_sample = false;
  EXPECT_NE(error(o).find("greedy decoding"), std::string::npos);
  o.num_return_sequences = 1;
  o.num_beams = 0;
  EXPECT_NE(error(o).find("num_beams must be at least 1"), std::string::npos);
  o.num_beams = 2;
  o.streamer = [](const std::vector<int64_t>&) { return true; };
  EXPECT_NE(error(o).find("streamer"), std::string::npos);
  // The one-prompt form returns one row.
  GenerateOptions two;
  two.num_beams = 2;
  two.num_return_sequences = 2;
  EXPECT_THROW(model.generate(ids, two), Error);
  const auto parse_error = [](const std::string& text) {
    try {
      GenerationConfig::from_json_text(text, "generation_config.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(parse_error(R"({"early_stopping": "sometimes"})").find("early_stopping"),
            std::string::npos);
  EXPECT_NE(parse_error(R"({"num_beams": 0})").find("num_beams"), std::string::npos);
  EXPECT_EQ(GenerationConfig::from_json_text(R"({"early_stopping": "never"})", "g").early_stopping,
            EarlyStopping::never);
  EXPECT_EQ(GenerationConfig::from_json_text(R"({"early_stopping": true})", "g").early_stopping,
            EarlyStopping::when_beams_finished);
}

// Sampling with num_return_sequences: each prompt's rows one after another, drawn
// independently (the same seed, the same rows; top_k 1 leaves greedy's).
TEST(NumReturnSequences, SamplingRepeatsEachPrompt) {
  const auto& model_goldens = goldens()["qwen2-tiny"];
  const CausalLM model = load_f32("qwen2-tiny");
  const Batch batch = batch_of(model_goldens);
  GenerateOptions o;
  o.max_new_tokens = 8;
  o.do_sample = true;
  o.top_k = 0;
  o.num_return_sequences = 3;
  o.eos_token_ids.emplace();  // none (emplace: GCC 12 misreads an assigned empty vector)
  o.seed = 3;
  const auto rows = model.generate(batch, o);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(model.generate(batch, o), rows);
  const size_t prompt = batch.input_ids[0].size();
  for (size_t r = 0; r < rows.size(); ++r) {
    EXPECT_TRUE(
        std::equal(batch.input_ids[r / 3].begin(), batch.input_ids[r / 3].end(), rows[r].begin()));
  }
  EXPECT_GE(std::set<std::vector<int64_t>>(rows.begin(), rows.begin() + 3).size(), 2u);
  o.top_k = 1;
  GenerateOptions greedy = o;
  greedy.do_sample = false;
  greedy.num_return_sequences = 1;
  const auto one = model.generate(batch, greedy);
  const auto sampled = model.generate(batch, o);
  for (size_t r = 0; r < sampled.size(); ++r) EXPECT_EQ(sampled[r], one[r / 3]);
  EXPECT_EQ(sampled[0].size(), prompt + 8);
}

// Rows gathered between caches: each row's first `length` positions of every layer and head
// come from its source row; other rows and positions stay as they were.
TEST(BeamSearch, CopyCacheRowsGathersThePrefix) {
  ModelConfig c;
  c.num_hidden_layers = 2;
  c.num_key_value_heads = 2;
  c.head_dim = 3;
  KvCache from = KvCache::allocate(c, 3, 5, DType::f32, Device::cpu());
  KvCache to = KvCache::allocate(c, 4, 6, DType::f32, Device::cpu());
  const auto fill = [](KvCache& kv, float base) {
    for (size_t l = 0; l < kv.keys.size(); ++l) {
      for (Tensor* t : {&kv.keys[l], &kv.values[l]}) {
        float* p = t->data<float>();
        for (int64_t i = 0; i < t->numel(); ++i) p[i] = base + static_cast<float>(i);
      }
      base += 1000;
    }
  };
  fill(from, 0);
  fill(to, -100000);
  const KvCache before = [&] {
    KvCache copy = KvCache::allocate(c, 4, 6, DType::f32, Device::cpu());
    for (size_t l = 0; l < to.keys.size(); ++l) {
      copy.keys[l].copy_from(to.keys[l]);
      copy.values[l].copy_from(to.values[l]);
    }
    return copy;
  }();
  const std::vector<int64_t> source{2, -1, 0, 2};
  copy_cache_rows(from, to, source, 4);
  for (size_t l = 0; l < to.keys.size(); ++l) {
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t h = 0; h < 2; ++h) {
        for (int64_t p = 0; p < 6; ++p) {
          for (int64_t d = 0; d < 3; ++d) {
            const auto at = [&](const Tensor& t, int64_t row) {
              const int64_t cap = t.size(2);
              return t.data<float>()[((row * 2 + h) * cap + p) * 3 + d];
            };
            const bool copied = source[r] >= 0 && p < 4;
            EXPECT_EQ(at(to.keys[l], r),
                      copied ? at(from.keys[l], source[r]) : at(before.keys[l], r));
            EXPECT_EQ(at(to.values[l], r),
                      copied ? at(from.values[l], source[r]) : at(before.values[l], r));
          }
        }
      }
    }
  }
}

// Beam sampling: the same seed gives the same rows; its best row does not depend on how many
// are returned, and those are distinct; at a temperature of 0.01 the draws take the
// continuations in score order (a gap of 0.1 in log-probability becomes 10), so the rows are
// greedy beam search's; and a distribution left with fewer continuations than the step keeps is
// refused, as torch.multinomial refuses it.
TEST(BeamSearch, SamplingDrawsFromTheWarpedContinuations) {
  const CausalLM model = load_f32("llama-tiny");
  Batch b;
  b.input_ids = {{1, 17, 33, 4, 250}};
  GenerateOptions o;
  o.max_new_tokens = 6;
  o.num_beams = 3;
  o.do_sample = true;
  o.top_k = 50;
  o.eos_token_ids.emplace();  // none (emplace: GCC 12 misreads an assigned empty vector)
  o.seed = 7;
  const auto first = model.generate(b, o);
  EXPECT_EQ(model.generate(b, o), first);
  o.num_return_sequences = 3;
  const auto three = model.generate(b, o);
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0], first[0]);
  EXPECT_EQ(std::set<std::vector<int64_t>>(three.begin(), three.end()).size(), 3u);

  o.top_k = 0;
  o.temperature = 0.01f;
  GenerateOptions greedy = o;
  greedy.do_sample = false;
  greedy.temperature.reset();
  EXPECT_EQ(model.generate(b, o), model.generate(b, greedy));

  o.top_k = 1;  // one continuation from the first beam, six wanted
  try {
    model.generate(b, o);
    ADD_FAILURE() << "beam sampling with too few continuations was not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("beam sampling: only 1 continuations"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace anvil
