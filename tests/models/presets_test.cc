// The init-model presets (configs/*.json, compiled in): each parses as the architecture and
// shapes of the public checkpoint it names, so a typo in a preset cannot silently bench
// another model.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "anvil/config.h"
#include "models/init_model.h"

namespace anvil {
namespace {

struct Shape {
  const char* architecture;
  int64_t hidden, inter, layers, heads, kv_heads, head_dim, vocab;
};

TEST(Presets, EachParsesAsTheCheckpointItNames) {
  const std::map<std::string, Shape> want = {
      {"qwen2.5-0.5b", {"Qwen2ForCausalLM", 896, 4864, 24, 14, 2, 64, 151936}},
      {"qwen2.5-1.5b", {"Qwen2ForCausalLM", 1536, 8960, 28, 12, 2, 128, 151936}},
      {"qwen3-0.6b", {"Qwen3ForCausalLM", 1024, 3072, 28, 16, 8, 128, 151936}},
      {"qwen3-1.7b", {"Qwen3ForCausalLM", 2048, 6144, 28, 16, 8, 128, 151936}},
      {"llama-3.2-1b", {"LlamaForCausalLM", 2048, 8192, 16, 32, 8, 64, 128256}},
      {"smollm2-135m", {"LlamaForCausalLM", 576, 1536, 30, 9, 3, 64, 49152}},
      {"gemma-2-2b", {"Gemma2ForCausalLM", 2304, 9216, 26, 8, 4, 256, 256000}},
      {"gemma-3-1b", {"Gemma3ForCausalLM", 1152, 6912, 26, 4, 1, 256, 262144}},
      {"granite-3.1-2b", {"GraniteForCausalLM", 2048, 8192, 40, 32, 8, 64, 49155}},
      {"granite-3.0-1b-a400m", {"GraniteMoeForCausalLM", 1024, 512, 24, 16, 8, 64, 49155}},
      {"olmoe-1b-7b", {"OlmoeForCausalLM", 2048, 1024, 16, 16, 16, 128, 50304}},
      {"phi-3-mini", {"Phi3ForCausalLM", 3072, 8192, 32, 32, 32, 96, 32064}},
      {"olmo-2-1b", {"Olmo2ForCausalLM", 2048, 8192, 16, 16, 16, 128, 100352}},
  };
  size_t seen = 0;
  for (const EmbeddedConfig& e : embedded_configs()) {
    SCOPED_TRACE(e.name);
    const ModelConfig c = ModelConfig::from_json_text(e.json, e.name);
    const auto it = want.find(e.name);
    ASSERT_NE(it, want.end()) << "a preset without expected shapes here: add it";
    const Shape& s = it->second;
    EXPECT_EQ(c.architecture, s.architecture);
    EXPECT_EQ(c.hidden_size, s.hidden);
    EXPECT_EQ(c.intermediate_size, s.inter);
    EXPECT_EQ(c.num_hidden_layers, s.layers);
    EXPECT_EQ(c.num_attention_heads, s.heads);
    EXPECT_EQ(c.num_key_value_heads, s.kv_heads);
    EXPECT_EQ(c.head_dim, s.head_dim);
    EXPECT_EQ(c.vocab_size, s.vocab);
    ++seen;
  }
  EXPECT_EQ(seen, want.size());
  // The settings beyond the shapes that the new presets exist to exercise.
  for (const EmbeddedConfig& e : embedded_configs()) {
    const ModelConfig c = ModelConfig::from_json_text(e.json, e.name);
    if (std::string(e.name) == "llama-3.2-1b") {
      EXPECT_EQ(c.rope.type, RopeType::llama3);
      EXPECT_TRUE(c.tie_word_embeddings);
    }
    if (std::string(e.name) == "phi-3-mini") {  // Phi-3-mini-4k: a window of 2,047 keys
      EXPECT_EQ(c.sliding_window, 2047);
      EXPECT_FALSE(c.tie_word_embeddings);
    }
    if (std::string(e.name) == "granite-3.1-2b") {
      EXPECT_DOUBLE_EQ(c.residual_multiplier, 0.22);
      EXPECT_EQ(c.num_experts, 0);
    }
  }
}

}  // namespace
}  // namespace anvil
