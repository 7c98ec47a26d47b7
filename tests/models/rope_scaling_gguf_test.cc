// RoPE scaling through GGUF files: `anvil init-model` writes a config's scaling in llama.cpp's
// keys (linear and yarn as rope.scaling.*, llama3 as rope_freqs.weight), the GGUF reader gives
// back the same frequencies and attention factor as the config.json, and `anvil convert` writes
// them back into a config.json; what a format cannot say is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "anvil/config.h"
#include "anvil/error.h"
#include "anvil/model.h"
#include "formats/gguf_writer.h"
#include "formats/mapped_file.h"
#include "gguf_metadata.h"
#include "models/convert.h"
#include "models/gguf_model.h"
#include "models/init_model.h"
#include "models/rope_table.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

std::string extra_config(const std::string& name) {
  return test::data_dir() + "/extra/" + name + "/model/config.json";
}

// A fixture's config with its rope_scaling replaced, written into `dir`.
std::string config_with_scaling(const test::TempDir& dir, const std::string& fixture,
                                const nlohmann::json& scaling) {
  auto j = nlohmann::json::parse(read_text_file(test::model_dir(fixture) + "/config.json"));
  j.erase("rope_parameters");
  j["rope_theta"] = 10000.0;
  j["rope_scaling"] = scaling;
  const std::string path = dir.file("config.json");
  std::ofstream(path) << j.dump(2);
  return path;
}

void expect_same_rope(const ModelConfig& got, const ModelConfig& want) {
  const auto g = rope_frequencies(got.rope, got.head_dim);
  const auto w = rope_frequencies(want.rope, want.head_dim);
  ASSERT_EQ(g.inv_freq.size(), w.inv_freq.size());
  for (size_t i = 0; i < w.inv_freq.size(); ++i) {
    EXPECT_NEAR(g.inv_freq[i], w.inv_freq[i], 1e-6 * w.inv_freq[i]) << "frequency " << i;
  }
  EXPECT_NEAR(g.attention_scaling, w.attention_scaling, 1e-6);
}

class RopeScalingGguf : public ::testing::TestWithParam<std::string> {};

// The config, the GGUF init-model writes from it, and the config.json convert writes from that
// GGUF: the same frequencies and attention factor; and the GGUF's model (float32 weights) the
// same logits as the safetensors model init-model writes from the same seed. (Against
// llama.cpp itself, on such files with 0.5-initialized weights: the logits agree within
// 0.4-0.8% of the largest, as unscaled RoPE does; docs/gguf.md.)
TEST_P(RopeScalingGguf, SurvivesGgufAndConvert) {
  test::TempDir dir;
  std::string config;
  if (GetParam() == "linear") {
    config = config_with_scaling(dir, "qwen2-tiny", {{"rope_type", "linear"}, {"factor", 3.0}});
  } else if (GetParam() == "llama3") {  // llama.cpp reads rope_freqs.weight for llama only
    config = config_with_scaling(dir, "llama-tiny",
                                 {{"rope_type", "llama3"},
                                  {"factor", 8.0},
                                  {"low_freq_factor", 1.0},
                                  {"high_freq_factor", 4.0},
                                  {"original_max_position_embeddings", 16}});
  } else if (GetParam() == "yarn-mscale") {  // folded into rope.scaling.attn_factor
    config = config_with_scaling(dir, "qwen2-tiny",
                                 {{"rope_type", "yarn"},
                                  {"factor", 16.0},
                                  {"original_max_position_embeddings", 24},
                                  {"mscale", 1.0},
                                  {"mscale_all_dim", 0.7},
                                  {"attention_factor", 1.3}});
  } else {
    config = extra_config(GetParam());
  }
  const ModelConfig want = ModelConfig::from_file(config);
  ASSERT_NE(want.rope.type, RopeType::standard);

  init_model(config, dir.file("gguf"), 5, "f32", InitFormat::gguf);
  const GgufModel gguf = open_gguf_model(dir.file("gguf") + "/model.gguf");
  expect_same_rope(gguf.config, want);

  if (want.rope.type != RopeType::llama3) {  // rope_freqs has no config.json form
    convert_gguf_to_hf(dir.file("gguf") + "/model.gguf", dir.file("hf"), DType::f32);
    expect_same_rope(ModelConfig::from_file(dir.file("hf") + "/config.json"), want);
  }

  // Qwen2's GGUF stores q/k rows as they are, so init-model's two formats hold the same weights
  // (Llama's are permuted for llama.cpp, and their random values land on other rows).
  if (want.model_type != "qwen2") return;
  init_model(config, dir.file("st"), 5, "f32");
  ModelOptions o;
  o.dtype = DType::f32;
  const CausalLM from_gguf = CausalLM::from_pretrained(dir.file("gguf") + "/model.gguf", o);
  const CausalLM from_st = CausalLM::from_pretrained(dir.file("st"), o);
  Batch b;
  b.input_ids = {{1, 5, 9, 22, 7, 3, 100, 4, 8, 15, 16, 23, 42, 11, 17, 19, 30, 31, 33, 40}};
  const auto g = from_gguf.logits(b).to_f32_vector(), s = from_st.logits(b).to_f32_vector();
  ASSERT_EQ(g.size(), s.size());
  float max_diff = 0;
  for (size_t i = 0; i < g.size(); ++i) max_diff = std::max(max_diff, std::fabs(g[i] - s[i]));
  EXPECT_LE(max_diff, 1e-4f);
}

INSTANTIATE_TEST_SUITE_P(Scalings, RopeScalingGguf,
                         ::testing::Values("qwen2-yarn-tiny", "llama3", "linear", "yarn-mscale"),
                         test::ParamName());

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RopeScalingGgufErrors, WhatAFormatCannotSayIsRefused) {
  test::TempDir dir;
  // llama.cpp's Llama / Qwen loaders read no betas, and always truncate the ramp.
  EXPECT_NE(error_of([&] {
              init_model(extra_config("llama-yarn-params-tiny"), dir.file("a"), 1, "f32",
                         InitFormat::gguf);
            }).find("beta_fast"),
            std::string::npos);
  // llama3 as rope_freqs.weight is read for the llama architecture only.
  EXPECT_NE(error_of([&] {
              init_model(config_with_scaling(dir, "qwen2-tiny",
                                             {{"rope_type", "llama3"},
                                              {"factor", 8.0},
                                              {"low_freq_factor", 1.0},
                                              {"high_freq_factor", 4.0}}),
                         dir.file("d"), 1, "f32", InitFormat::gguf);
            }).find("llama architecture"),
            std::string::npos);
  // llama.cpp has no dynamic NTK scaling.
  EXPECT_NE(error_of([&] {
              init_model(extra_config("llama-dynamic-tiny"), dir.file("e"), 1, "f32",
                         InitFormat::gguf);
            }).find("dynamic"),
            std::string::npos);
  // Nor sliding-window attention (Mistral's default window of 4096).
  EXPECT_NE(error_of([&] {
              init_model(test::data_dir() + "/extra/mistral-window-tiny/model/config.json",
                         dir.file("f"), 1, "f32", InitFormat::gguf);
            }).find("sliding"),
            std::string::npos);
  // llama3 in a GGUF is rope_freqs.weight, which config.json cannot hold.
  init_model(extra_config("llama3-bias-tiny"), dir.file("b"), 1, "f32", InitFormat::gguf);
  EXPECT_NE(error_of([&] {
              convert_gguf_to_hf(dir.file("b") + "/model.gguf", dir.file("c"), DType::f32);
            }).find("rope_freqs.weight"),
            std::string::npos);
}

// A Qwen2 one with RoPE scaling `type`, factor 4, and `keys`.
std::string scaled_gguf(const test::TempDir& dir, const std::string& name, const std::string& type,
                        const std::function<void(GgufWriter&)>& keys) {
  return test::metadata_gguf(dir, name, "qwen2", [&](GgufWriter& w) {
    w.add_u32("qwen2.attention.head_count_kv", 2);
    w.add_f32("qwen2.rope.freq_base", 10000.0f);
    w.add_string("qwen2.rope.scaling.type", type);
    w.add_f32("qwen2.rope.scaling.factor", 4.0f);
    keys(w);
  });
}

TEST(RopeScalingGgufRead, YarnKeysOtherToolsWrite) {
  test::TempDir dir;
  // Only type and factor: the original context is the training context, the rest defaults.
  const RopeConfig plain =
      open_gguf_model(scaled_gguf(dir, "a.gguf", "yarn", [](GgufWriter&) {})).config.rope;
  EXPECT_EQ(plain.type, RopeType::yarn);
  EXPECT_EQ(plain.factor, 4.0);
  EXPECT_EQ(plain.original_max_position_embeddings, 4096);
  EXPECT_EQ(plain.beta_fast, 32.0);
  EXPECT_EQ(plain.attention_factor, 0.0);
  // Betas and DeepSeek's log multiplier (mscale_all_dim beside an mscale of 1), attn_factor
  // multiplying what those give.
  const RopeConfig all = open_gguf_model(scaled_gguf(dir, "b.gguf", "yarn", [](GgufWriter& w) {
                           w.add_u32("qwen2.rope.scaling.original_context_length", 1024);
                           w.add_f32("qwen2.rope.scaling.yarn_beta_fast", 16.0f);
                           w.add_f32("qwen2.rope.scaling.yarn_beta_slow", 2.0f);
                           w.add_f32("qwen2.rope.scaling.yarn_log_multiplier", 0.5f);
                           w.add_f32("qwen2.rope.scaling.attn_factor", 2.0f);
                         })).config.rope;
  EXPECT_EQ(all.original_max_position_embeddings, 1024);
  EXPECT_EQ(all.beta_fast, 16.0);
  EXPECT_EQ(all.beta_slow, 2.0);
  EXPECT_EQ(all.mscale, 1.0);
  EXPECT_EQ(all.mscale_all_dim, 0.5);
  // (0.1 ln 4 + 1) / (0.05 ln 4 + 1), doubled
  EXPECT_NEAR(all.attention_factor, 2 * (0.1 * std::log(4.0) + 1) / (0.05 * std::log(4.0) + 1),
              1e-6);
}

TEST(RopeScalingGgufRead, BadYarnKeysNameTheFileAndKey) {
  test::TempDir dir;
  const auto error_for = [&](const std::string& name, const std::function<void(GgufWriter&)>& k) {
    const std::string path = scaled_gguf(dir, name, "yarn", k);
    const std::string e = error_of([&] { open_gguf_model(path); });
    EXPECT_NE(e.find(path), std::string::npos) << e;
    return e;
  };
  EXPECT_NE(
      error_for("a.gguf",
                [](GgufWriter& w) { w.add_u32("qwen2.rope.scaling.original_context_length", 0); })
          .find("original_context_length"),
      std::string::npos);
  EXPECT_NE(
      error_for("b.gguf", [](GgufWriter& w) { w.add_f32("qwen2.rope.scaling.attn_factor", -1.0f); })
          .find("attn_factor"),
      std::string::npos);
  EXPECT_NE(error_for("c.gguf",
                      [](GgufWriter& w) { w.add_f32("qwen2.rope.scaling.yarn_beta_fast", 0.0f); })
                .find("yarn_beta_fast"),
            std::string::npos);
  EXPECT_NE(error_for("d.gguf",
                      [](GgufWriter& w) { w.add_f32("qwen2.rope.scaling.yarn_ext_factor", 0.5f); })
                .find("yarn_ext_factor"),
            std::string::npos);
  // A scaling type anvil does not implement is named.
  const std::string path = scaled_gguf(dir, "e.gguf", "longrope", [](GgufWriter&) {});
  EXPECT_NE(error_of([&] { open_gguf_model(path); }).find("'longrope'"), std::string::npos);
}

// Phi-3 metadata llama.cpp's converter writes, malformed: refused naming the file and the key.
TEST(RopeScalingGgufRead, BadPhi3RopeIsRefusedByName) {
  test::TempDir dir;
  const auto phi3 = [&](const std::string& name, const std::function<void(GgufWriter&)>& more) {
    const std::string path = test::metadata_gguf(dir, name, "phi3", more);
    return error_of([&] { open_gguf_model(path); });
  };
  const auto factors = [](GgufWriter& w, const char* name, int64_t n, float v) {
    w.add_tensor(name, GgmlType::f32, {static_cast<uint64_t>(n)}, [n, v](std::span<std::byte> o) {
      for (int64_t i = 0; i < n; ++i) std::memcpy(o.data() + 4 * i, &v, 4);
    });
  };
  EXPECT_NE(phi3("a.gguf", [](GgufWriter& w) { w.add_u32("phi3.rope.dimension_count", 13); })
                .find("rope.dimension_count is 13; it must be even"),
            std::string::npos);
  EXPECT_NE(phi3("b.gguf", [&](GgufWriter& w) { factors(w, "rope_factors_long.weight", 8, 2.0f); })
                .find("without the other"),
            std::string::npos);
  EXPECT_NE(phi3("c.gguf",
                 [&](GgufWriter& w) {
                   factors(w, "rope_factors_long.weight", 8, 2.0f);
                   factors(w, "rope_factors_short.weight", 6, 1.0f);
                 })
                .find("rope_factors_short.weight must be F32 with rope.dimension_count/2 = 8"),
            std::string::npos);
  EXPECT_NE(phi3("d.gguf",
                 [&](GgufWriter& w) {
                   factors(w, "rope_factors_long.weight", 8, 0.0f);
                   factors(w, "rope_factors_short.weight", 8, 1.0f);
                 })
                .find("not positive"),
            std::string::npos);
  EXPECT_EQ(phi3("e.gguf", [](GgufWriter&) {}), "");  // plain Phi-3 (no scaling) loads
}

}  // namespace
}  // namespace anvil
