// stop_strings against transformers' StopStringCriteria (scripts/goldens/
// make_stop_string_goldens.py): every prefix of texts with split multi-byte characters, word-start
// markers and newlines, on a byte-level tokenizer (qwen3) and a Metaspace / byte-fallback one
// (spm-llama2); then generate() with stop strings on qwen2-tiny read through the qwen3 tokenizer,
// greedy and with beams.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "anvil/error.h"
#include "anvil/model.h"
#include "anvil/tokenizer.h"
#include "formats/mapped_file.h"
#include "generate/generate.h"
#include "generate/stop_strings.h"
#include "test_data.h"

namespace anvil {
namespace {

const nlohmann::json& goldens() {
  static const nlohmann::json data =
      nlohmann::json::parse(read_text_file(test::data_dir() + "/extra/stop_strings.json"));
  return data;
}

Tokenizer tokenizer(const std::string& name) {
  return Tokenizer::from_file(test::data_dir() + "/tokenizers/" + name + "/tokenizer.json");
}

class StopStringParity : public testing::TestWithParam<std::string> {};

TEST_P(StopStringParity, EveryPrefixStopsWhereTransformersStops) {
  const auto& g = goldens()[GetParam()];
  const Tokenizer tok = tokenizer(GetParam());
  std::set<std::pair<std::vector<int64_t>, std::string>> hits;
  for (const auto& h : g["hits"]) {
    hits.insert({h["ids"].get<std::vector<int64_t>>(), h["stop"].get<std::string>()});
  }
  const auto stops = g["stops"].get<std::vector<std::string>>();
  size_t checked = 0;
  for (size_t t = 0; t < g["texts"].size(); ++t) {
    const auto ids = g["encoded"][t].get<std::vector<int64_t>>();
    ASSERT_EQ(tok.encode(g["texts"][t].get<std::string>(), false), ids);
    for (size_t n = 1; n <= ids.size(); ++n) {
      const std::vector<int64_t> prefix(ids.begin(), ids.begin() + static_cast<int64_t>(n));
      for (const std::string& stop : stops) {
        StopStrings one(tok, {stop});
        EXPECT_EQ(one.hit(prefix), hits.count({prefix, stop}) == 1)
            << "text " << t << " first " << n << " tokens, stop '" << stop << "'";
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 100u);
  EXPECT_GE(hits.size(), 10u);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, StopStringParity, testing::Values("qwen3", "spm-llama2"),
                         [](const testing::TestParamInfo<std::string>& p) {
                           return p.param == "qwen3" ? std::string("qwen3") : "spm_llama2";
                         });

TEST(StopStrings, GenerateStopsRowsAsTransformers) {
  const auto& g = goldens()["generate"];
  ModelOptions mo;
  mo.dtype = DType::f32;
  const CausalLM model = CausalLM::from_pretrained(test::model_dir("qwen2-tiny"), mo);
  const Tokenizer tok = tokenizer("qwen3");
  Batch b;
  b.input_ids = g["input_ids"].get<std::vector<std::vector<int64_t>>>();
  b.attention_mask = g["attention_mask"].get<std::vector<std::vector<int64_t>>>();
  for (const auto& c : g["cases"]) {
    const std::string cfg = c["generation_config"].dump();
    SCOPED_TRACE(cfg);
    const GenerationConfig gen = GenerationConfig::from_json_text(cfg, "generation_config.json");
    GenerateOptions o;
    o.tokenizer = &tok;
    EXPECT_EQ(run_generate(model.decoder(), gen, b, o),
              c["output"].get<std::vector<std::vector<int64_t>>>());
    // Through the options instead of the config.
    GenerationConfig plain = gen;
    plain.stop_strings.clear();
    o.stop_strings = gen.stop_strings;
    EXPECT_EQ(run_generate(model.decoder(), plain, b, o),
              c["output"].get<std::vector<std::vector<int64_t>>>());
  }
  // Without a tokenizer they cannot be read: refused, as transformers refuses.
  const GenerationConfig gen =
      GenerationConfig::from_json_text(R"({"stop_strings": "x"})", "generation_config.json");
  try {
    run_generate(model.decoder(), gen, b, GenerateOptions{});
    ADD_FAILURE() << "stop strings without a tokenizer were not refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tokenizer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(GenerationConfig::from_json_text(R"({"stop_strings": [""]})", "g"), Error);
  EXPECT_THROW(GenerationConfig::from_json_text(R"({"stop_strings": 5})", "g"), Error);
}

}  // namespace
}  // namespace anvil
