// config.json and generation_config.json: both RoPE spellings, llama3 and yarn scaling,
// architecture flags, and the refusals that keep anvil from running a model it would get wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "anvil/config.h"
#include "anvil/error.h"
#include "models/rope_table.h"
#include "test_data.h"

namespace anvil {
namespace {

// The message of the Error that f throws, else "no error".
template <class F>
std::string thrown_by(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

// A config.json of `arch` (4 layers of 4 heads, 2 kv heads, hidden 16, MLP 24) with `extra`
// fields.
ModelConfig arch_config(const std::string& arch, const std::string& extra) {
  const std::string shape = R"("vocab_size": 10, "hidden_size": 16, "intermediate_size": 24,
      "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2)";
  return ModelConfig::from_json_text(
      R"({"architectures": [")" + arch + R"("], )" + shape + extra + "}", "config.json");
}

// The message of the Error that arch_config(arch, extra) throws, else "no error".
std::string arch_error(const std::string& arch, const std::string& extra) {
  return thrown_by([&] { arch_config(arch, extra); });
}

const char* kBase = R"({
  "architectures": ["LlamaForCausalLM"], "vocab_size": 100, "hidden_size": 64,
  "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "eos_token_id": [5, 7], "bos_token_id": 1)";

ModelConfig parse(const std::string& extra) {
  return ModelConfig::from_json_text(std::string(kBase) + extra + "}", "config.json");
}

std::string error_of(const std::string& extra) {
  try {
    parse(extra);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelConfig, ReadsTheFixtures) {
  const auto q3 = ModelConfig::from_file(test::model_dir("qwen3-tiny") + "/config.json");
  EXPECT_EQ(q3.architecture, "Qwen3ForCausalLM");
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_FALSE(q3.qkv_bias);
  EXPECT_EQ(q3.head_dim, 32);  // not hidden / heads = 16
  EXPECT_EQ(q3.rope.theta, 1e6);
  EXPECT_TRUE(q3.tie_word_embeddings);
  const auto q2 = ModelConfig::from_file(test::model_dir("qwen2-tiny") + "/config.json");
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_FALSE(q2.o_bias);
  EXPECT_FALSE(q2.tie_word_embeddings);
  EXPECT_EQ(q2.head_dim, 16);
  const auto ll = ModelConfig::from_file(test::model_dir("llama-tiny") + "/config.json");
  EXPECT_EQ(ll.rope.theta, 1e5);
  EXPECT_EQ(ll.rms_norm_eps, 1e-5);
  EXPECT_EQ(ll.dtype, DType::f32);
}

TEST(ModelConfig, BothRopeSpellings) {
  EXPECT_EQ(parse(R"(,"rope_theta": 500000, "rope_scaling": null)").rope.theta, 500000);
  EXPECT_EQ(
      parse(R"(,"rope_parameters": {"rope_type": "default", "rope_theta": 1234.0})").rope.theta,
      1234.0);
  EXPECT_EQ(parse("").rope.theta, 10000.0);  // transformers' default
  const auto hub = parse(R"(,"rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3",
      "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192})");
  const auto v5 = parse(R"(,"rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0,
      "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192})");
  for (const auto& c : {hub, v5}) {
    EXPECT_EQ(c.rope.type, RopeType::llama3);
    EXPECT_EQ(c.rope.factor, 8.0);
    EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
  }
  // The old "type" key of rope_scaling is accepted too.
  EXPECT_EQ(parse(R"(,"rope_scaling": {"type": "default"})").rope.type, RopeType::standard);
}

TEST(ModelConfig, Llama3FrequenciesMatchTransformers) {
  RopeConfig r;
  r.type = RopeType::llama3;
  r.theta = 500000;
  r.factor = 8;
  r.low_freq_factor = 1;
  r.high_freq_factor = 4;
  r.original_max_position_embeddings = 8192;
  const auto f = rope_frequencies(r, 128);
  ASSERT_EQ(f.inv_freq.size(), 64u);
  // Expected values: transformers' _compute_llama3_parameters (computed in float64 here).
  const std::pair<int, double> expected[] = {{0, 1.0},
                                             {20, 0.016560440080994446},   // high frequency: kept
                                             {30, 0.0013718935677611381},  // smoothed band
                                             {40, 3.428102195952591e-05},  // low frequency: / 8
                                             {63, 3.068925988914511e-07}};
  for (const auto& [i, v] : expected) EXPECT_NEAR(f.inv_freq[i], v, v * 2e-6) << i;
  EXPECT_EQ(f.attention_scaling, 1.0f);
}

TEST(ModelConfig, LinearRopeScalingDividesTheFrequencies) {
  const auto c = parse(R"(,"rope_scaling": {"type": "linear", "factor": 4.0})");
  EXPECT_EQ(c.rope.type, RopeType::linear);
  RopeConfig plain;
  const auto base = rope_frequencies(plain, 64);
  const auto scaled = rope_frequencies(c.rope, 64);
  for (size_t i = 0; i < base.inv_freq.size(); ++i) {
    EXPECT_FLOAT_EQ(scaled.inv_freq[i], base.inv_freq[i] / 4.0f);
  }
  EXPECT_NE(error_of(R"(,"rope_scaling": {"type": "linear"})").find("factor"), std::string::npos);
}

TEST(ModelConfig, ReadsYarnAsTransformersStandardizesIt) {
  // Qwen's model cards: the Hub's older style, everything optional left out.
  const auto qwen = parse(R"(,"max_position_embeddings": 131072, "rope_theta": 1000000.0,
      "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768})");
  EXPECT_EQ(qwen.rope.type, RopeType::yarn);
  EXPECT_EQ(qwen.rope.factor, 4.0);
  EXPECT_EQ(qwen.rope.original_max_position_embeddings, 32768);
  EXPECT_EQ(qwen.rope.beta_fast, 32.0);
  EXPECT_EQ(qwen.rope.beta_slow, 1.0);
  EXPECT_TRUE(qwen.rope.truncate);
  EXPECT_EQ(qwen.rope.attention_factor, 0.0);  // derived
  // The original context defaults to max_position_embeddings; a top-level
  // original_max_position_embeddings (Phi-3's place for it) wins over the parameters'.
  EXPECT_EQ(parse(R"(,"max_position_embeddings": 4096,
      "rope_parameters": {"rope_type": "yarn", "factor": 2.0})")
                .rope.original_max_position_embeddings,
            4096);
  EXPECT_EQ(parse(R"(,"original_max_position_embeddings": 1024, "rope_parameters":
      {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 2048})")
                .rope.original_max_position_embeddings,
            1024);
  // factor null: max_position_embeddings over the original context (DeepSeek-V3's convention).
  EXPECT_EQ(parse(R"(,"max_position_embeddings": 8192, "rope_parameters":
      {"rope_type": "yarn", "factor": null, "original_max_position_embeddings": 2048})")
                .rope.factor,
            4.0);
  // beta 0 or null means the default, as `or 32` / `or 1` does.
  const auto all = parse(R"(,"rope_parameters": {"rope_type": "yarn", "factor": 8.0,
      "beta_fast": 0, "beta_slow": 3.0, "mscale": 0.9, "mscale_all_dim": 0.6,
      "attention_factor": 1.25, "truncate": false})");
  EXPECT_EQ(all.rope.beta_fast, 32.0);
  EXPECT_EQ(all.rope.beta_slow, 3.0);
  EXPECT_EQ(all.rope.mscale, 0.9);
  EXPECT_EQ(all.rope.mscale_all_dim, 0.6);
  EXPECT_EQ(all.rope.attention_factor, 1.25);
  EXPECT_FALSE(all.rope.truncate);
  // llama3's original context defaults the same way.
  EXPECT_EQ(parse(R"(,"max_position_embeddings": 640, "rope_scaling": {"rope_type": "llama3",
      "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0})")
                .rope.original_max_position_embeddings,
            640);
}

TEST(ModelConfig, YarnFrequenciesMatchTransformers) {
  // Expected values: transformers 5.25's _compute_yarn_parameters on the same parameters.
  RopeConfig qwen;
  qwen.type = RopeType::yarn;
  qwen.theta = 1e6;
  qwen.factor = 4;
  qwen.original_max_position_embeddings = 32768;
  const auto f = rope_frequencies(qwen, 128);
  ASSERT_EQ(f.inv_freq.size(), 64u);
  const std::pair<int, double> expected[] = {{0, 1.0},
                                             {10, 0.11547820270061493},     // extrapolated
                                             {20, 0.01333521492779255},     // on the ramp
                                             {30, 0.0010643609566614032},   // on the ramp
                                             {40, 4.4456985051510856e-05},  // interpolated
                                             {63, 3.102344408034696e-07}};
  for (const auto& [i, v] : expected) EXPECT_NEAR(f.inv_freq[i], v, v * 2e-6) << i;
  EXPECT_FLOAT_EQ(f.attention_scaling, 1.138629436111989f);  // 0.1 ln 4 + 1

  RopeConfig all;  // a ramp not truncated, betas and mscales of its own
  all.type = RopeType::yarn;
  all.theta = 2000;
  all.factor = 8;
  all.original_max_position_embeddings = 48;
  all.beta_fast = 24;
  all.beta_slow = 2;
  all.mscale = 0.9;
  all.mscale_all_dim = 0.6;
  all.truncate = false;
  const auto g = rope_frequencies(all, 24);
  const std::pair<int, double> expected_all[] = {{0, 1.0},
                                                 {2, 0.04870958626270294},
                                                 {4, 0.009921255521476269},
                                                 {6, 0.0027950850781053305},
                                                 {8, 0.0007874505245126784},
                                                 {11, 0.00011775132588809356}};
  for (const auto& [i, v] : expected_all) EXPECT_NEAR(g.inv_freq[i], v, v * 2e-6) << i;
  EXPECT_FLOAT_EQ(g.attention_scaling, 1.0554632865277602f);
  all.attention_factor = 0.75;  // given: used as is
  EXPECT_EQ(rope_frequencies(all, 24).attention_scaling, 0.75f);
}

TEST(ModelConfig, DynamicNtkFrequenciesMatchTransformers) {
  const auto c = parse(R"(,"max_position_embeddings": 2048,
      "rope_parameters": {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 4.0})");
  EXPECT_EQ(c.rope.type, RopeType::dynamic);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 2048);
  // Expected values: transformers 5.25's _compute_dynamic_ntk_parameters, seq_len a tensor.
  const auto at_load = rope_frequencies(c.rope, 64);
  EXPECT_EQ(frequencies_for_length(c.rope, 64, 2048), at_load.inv_freq);  // not grown yet
  EXPECT_FLOAT_EQ(at_load.inv_freq[16], 0.009999999776482582f);
  const auto grown = frequencies_for_length(c.rope, 64, 5000);
  const std::pair<int, double> expected[] = {{0, 1.0},
                                             {1, 0.7050434350967407},
                                             {8, 0.06105580925941467},
                                             {16, 0.0037278118543326855},
                                             {31, 1.9710247215698473e-05}};
  for (const auto& [i, v] : expected) EXPECT_NEAR(grown[i], v, v * 2e-6) << i;
}

TEST(ModelConfig, Phi3LongropeAsTransformersReadsIt) {
  const auto phi3 = [](const std::string& extra) {
    return ModelConfig::from_json_text(
        R"({"architectures": ["Phi3ForCausalLM"], "vocab_size": 10, "hidden_size": 32,
            "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4,
            "max_position_embeddings": 131072)" +
            extra + "}",
        "config.json");
  };
  const auto plain = phi3("");
  EXPECT_TRUE(plain.fused_projections);
  EXPECT_EQ(plain.rms_norm_eps, 1e-5);  // Phi3Config's default
  EXPECT_EQ(plain.sliding_window, std::nullopt);
  EXPECT_EQ(plain.recompute_cache_past, std::nullopt);
  // Phi-3.5's spelling: "su" (and "yarn") mean longrope for Phi-3; the original context is the
  // top-level field, 4096 when absent.
  const auto c = phi3(R"(, "rope_scaling": {"type": "su", "short_factor": [1.0, 1.5, 2.0, 1.25],
      "long_factor": [2.0, 3.0, 5.0, 7.0]})");
  EXPECT_EQ(c.rope.type, RopeType::longrope);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 4096);
  EXPECT_EQ(c.recompute_cache_past, 4096);
  // Expected values: transformers 5.25's _compute_longrope_parameters (factor 131072 / 4096).
  const auto f = rope_frequencies(c.rope, 8);
  const float want_short[] = {1.0f, 0.06666667014360428f, 0.004999999888241291f,
                              0.0007999999797903001f};
  const float want_long[] = {0.5f, 0.03333333507180214f, 0.0020000000949949026f,
                             0.0001428571413271129f};
  EXPECT_FLOAT_EQ(f.attention_scaling, 1.1902380714238083f);
  const auto past = frequencies_for_length(c.rope, 8, 5000);
  const auto within = frequencies_for_length(c.rope, 8, 4096);
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(f.inv_freq[i], want_short[i]) << i;
    EXPECT_FLOAT_EQ(within[i], want_short[i]) << i;
    EXPECT_FLOAT_EQ(past[i], want_long[i]) << i;
  }
  const auto error = [&](const std::string& extra) {
    try {
      phi3(extra);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(R"(, "rope_scaling": {"type": "longrope", "short_factor": [1, 1],
      "long_factor": [1, 1, 1, 1]})")
                .find("short_factor' must be a list of (rotary) head_dim / 2 = 4 numbers"),
            std::string::npos);
  EXPECT_NE(error(R"(, "rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1, 1],
      "long_factor": [1, 0, 1, 1]})")
                .find("long_factor' must hold positive numbers"),
            std::string::npos);
  // Partial rotary: the factors count the rotated pairs (0.75 of head_dim 8: 6 dimensions, 3
  // pairs); an odd number of rotated dimensions is refused.
  EXPECT_NE(error(R"(, "partial_rotary_factor": 0.75, "rope_scaling": {"type": "longrope",
      "short_factor": [1, 1, 1, 1], "long_factor": [1, 1, 1, 1]})")
                .find("short_factor' must be a list of (rotary) head_dim / 2 = 3 numbers"),
            std::string::npos);
  const ModelConfig partial = phi3(R"(, "partial_rotary_factor": 0.75, "rope_scaling": {
      "type": "longrope", "short_factor": [1, 2, 3], "long_factor": [4, 5, 6]})");
  EXPECT_EQ(partial.rope.rotary_dim, 6);
  EXPECT_EQ(partial.rotary_dims(), 6);
  const auto freqs = rope_frequencies(partial.rope, partial.head_dim).inv_freq;
  ASSERT_EQ(freqs.size(), 4u);  // head_dim / 2, the unrotated pair's frequency 0
  EXPECT_FLOAT_EQ(freqs[0], 1.0f);
  EXPECT_FLOAT_EQ(freqs[1], 1.0f / (2.0f * std::pow(10000.0f, 2.0f / 6.0f)));
  EXPECT_EQ(freqs[3], 0.0f);
  EXPECT_EQ(phi3(R"(, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5})")
                .rope.rotary_dim,
            4);
  EXPECT_NE(error(R"(, "partial_rotary_factor": 0.4)").find("even number of dimensions"),
            std::string::npos);
  EXPECT_NE(error(R"(, "sliding_window": 0)").find("sliding_window"), std::string::npos);
}

TEST(ModelConfig, RefusesWhatItCannotRunByName) {
  EXPECT_NE(error_of(R"(,"partial_rotary_factor": 0.5)").find("rotates whole heads"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_scaling": {"rope_type": "yarn"})").find("factor"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_scaling": {"rope_type": "yarn", "factor": 2,
      "attention_factor": 0})")
                .find("attention_factor"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_scaling": {"rope_type": "mrope", "factor": 4.0})").find("'mrope'"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_parameters": {"rope_type": "dynamic"})").find("factor"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"rope_scaling": {"rope_type": "llama3", "factor": 8.0})")
                .find("low_freq_factor"),
            std::string::npos);
  EXPECT_NE(error_of(R"(,"hidden_act": "gelu")").find("'gelu'"), std::string::npos);
  EXPECT_NE(error_of(R"(,"torch_dtype": "int8")").find("int8"), std::string::npos);
}

// The error a config naming `architecture` (and nothing else) gives: an unknown architecture,
// or for a known one the first missing field.
std::string error_of_architecture(const std::string& architecture) {
  try {
    ModelConfig::from_json_text(R"({"architectures": [")" + architecture + R"("]})",
                                "x/config.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelConfig, BadFieldsNameTheFileAndField) {
  const std::string broken = error_of(R"(,"num_key_value_heads": 3)");
  EXPECT_EQ(broken.rfind("config.json: field 'num_key_value_heads'", 0), 0u) << broken;
  EXPECT_NE(error_of(R"(,"head_dim": 0)").find("'head_dim' must be positive"), std::string::npos);
  EXPECT_NE(error_of(R"(,"head_dim": 15)").find("even"), std::string::npos);
  EXPECT_NE(error_of(R"(,"vocab_size": "big")").find("'vocab_size' must be an integer"),
            std::string::npos);
  try {
    ModelConfig::from_json_text(R"({"architectures": ["GPT2LMHeadModel"]})", "x/config.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "x/config.json: unknown architecture 'GPT2LMHeadModel' (anvil supports "
              "LlamaForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Qwen2ForCausalLM, "
              "Qwen3ForCausalLM, GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, "
              "SmolLM3ForCausalLM, Olmo2ForCausalLM, Qwen3MoeForCausalLM, "
              "Qwen2MoeForCausalLM, MixtralForCausalLM, OlmoeForCausalLM, GraniteForCausalLM, "
              "GraniteMoeForCausalLM, GraniteMoeSharedForCausalLM, and their base models' "
              "checkpoints: Qwen3Model, ...)");
  }
  // Base models' classes name the same decoder; Gemma 3's text decoder is Gemma3TextModel
  // (Gemma3Model is the multimodal one).
  for (const char* base :
       {"Qwen3Model", "LlamaModel", "Gemma3TextModel", "GraniteMoeSharedModel"}) {
    const std::string e = error_of_architecture(base);
    EXPECT_EQ(e.find("unknown architecture"), std::string::npos) << base << ": " << e;
  }
  for (const char* other : {"Gemma3Model", "Qwen9Model", "Model", "ForCausalLM"}) {
    EXPECT_NE(error_of_architecture(other).find("unknown architecture"), std::string::npos)
        << other;
  }
  try {
    ModelConfig::from_json_text(R"({"architectures": ["Qwen3ForCausalLM"]})", "x/config.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "x/config.json: field 'vocab_size' is missing");
  }
  EXPECT_THROW(ModelConfig::from_json_text("{not json", "c.json"), Error);
  EXPECT_THROW(ModelConfig::from_file("/nonexistent/config.json"), Error);
}

TEST(ModelConfig, ArchitectureFlags) {
  EXPECT_TRUE(parse(R"(,"attention_bias": true)").o_bias);
  EXPECT_TRUE(parse(R"(,"mlp_bias": true)").mlp_bias);
  EXPECT_EQ(parse("").eos_token_ids, (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(parse("").head_dim, 16);
  const auto by_type = ModelConfig::from_json_text(
      R"({"model_type": "qwen2", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 8,
          "num_hidden_layers": 1, "num_attention_heads": 2})",
      "c.json");
  EXPECT_EQ(by_type.architecture, "Qwen2ForCausalLM");
  EXPECT_EQ(by_type.num_key_value_heads, 2);
  EXPECT_EQ(by_type.max_position_embeddings, 32768);   // Qwen2Config's default
  EXPECT_EQ(parse("").max_position_embeddings, 2048);  // LlamaConfig's
}

TEST(ModelConfig, MistralSlidingWindowAsMistralConfigReadsIt) {
  const auto mistral = [](const std::string& extra) {
    return ModelConfig::from_json_text(
        R"({"architectures": ["MistralForCausalLM"], "vocab_size": 10, "hidden_size": 8,
            "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
            "attention_bias": true)" +
            extra + "}",
        "config.json");
  };
  EXPECT_EQ(mistral("").model_type, "mistral");
  EXPECT_EQ(mistral("").sliding_window, 4096);  // MistralConfig's default when absent
  EXPECT_EQ(mistral(R"(,"sliding_window": null)").sliding_window, std::nullopt);
  EXPECT_EQ(mistral(R"(,"sliding_window": 32)").sliding_window, 32);
  EXPECT_FALSE(mistral("").qkv_bias);  // MistralAttention has no biases, whatever the flag
  EXPECT_FALSE(mistral("").o_bias);
  EXPECT_EQ(parse("").sliding_window, std::nullopt);  // Llama: none
  try {
    mistral(R"(,"sliding_window": 0)");
    ADD_FAILURE() << "a zero window was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'sliding_window' must be positive"), std::string::npos)
        << e.what();
  }
}

// Qwen2Config / Qwen3Config: the window only with use_sliding_window, on the layers from
// max_window_layers on, or on those layer_types names.
TEST(ModelConfig, QwenSlidingWindowLayersAsQwen2ConfigReadsThem) {
  const auto qwen = [](const std::string& arch, const std::string& extra) {
    return ModelConfig::from_json_text(
        R"({"architectures": [")" + arch +
            R"("], "vocab_size": 10, "hidden_size": 8, "intermediate_size": 8,
            "num_hidden_layers": 4, "num_attention_heads": 2)" +
            extra + "}",
        "config.json");
  };
  const auto windows = [](const ModelConfig& c) {
    std::vector<int64_t> w;
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) w.push_back(c.layer_window(l));
    return w;
  };
  using W = std::vector<int64_t>;
  for (const std::string arch : {"Qwen2ForCausalLM", "Qwen3ForCausalLM"}) {
    // sliding_window is dropped without use_sliding_window (Qwen2.5's configs set both).
    EXPECT_EQ(qwen(arch, R"(,"sliding_window": 32)").sliding_window, std::nullopt) << arch;
    EXPECT_FALSE(
        qwen(arch, R"(,"sliding_window": 32, "max_window_layers": 1)").has_sliding_window());
    EXPECT_EQ(windows(qwen(arch, R"(,"use_sliding_window": true, "sliding_window": 32,
                                   "max_window_layers": 1)")),
              (W{0, 32, 32, 32}))
        << arch;
    // max_window_layers defaults to 28: no layer of a 4-layer model; the window to 4096.
    EXPECT_EQ(windows(qwen(arch, R"(,"use_sliding_window": true)")), (W{0, 0, 0, 0})) << arch;
    EXPECT_EQ(qwen(arch, R"(,"use_sliding_window": true)").sliding_window, 4096) << arch;
    EXPECT_EQ(windows(qwen(arch, R"(,"use_sliding_window": true, "sliding_window": 8,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention",
                        "full_attention"])")),
              (W{8, 0, 8, 0}))
        << arch;
    // layer_types without use_sliding_window: no window anywhere.
    EXPECT_FALSE(qwen(arch, R"(,"layer_types": ["sliding_attention", "full_attention",
        "sliding_attention", "full_attention"])")
                     .has_sliding_window());
    const auto error = [&](const std::string& extra) {
      try {
        qwen(arch, extra);
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string();
    };
    const std::string windowed = R"(,"use_sliding_window": true, "layer_types": )";
    EXPECT_NE(error(windowed + R"(["full_attention"])").find("one type per layer (4)"),
              std::string::npos);
    EXPECT_NE(error(windowed + R"(["full_attention", "full_attention", "chunked_attention",
        "full_attention"])")
                  .find("chunked_attention"),
              std::string::npos);
    // Without a window they are not read: a config edited to another layer count still loads.
    EXPECT_EQ(error(R"(,"layer_types": ["full_attention"])"), "");
    EXPECT_NE(error(R"(,"use_sliding_window": true, "sliding_window": -1)").find("sliding_window"),
              std::string::npos);
  }
  // Mistral's window covers every layer; use_sliding_window means nothing to it.
  const ModelConfig m = ModelConfig::from_json_text(
      R"({"architectures": ["MistralForCausalLM"], "vocab_size": 10, "hidden_size": 8,
          "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2,
          "sliding_window": 16, "use_sliding_window": false})",
      "config.json");
  EXPECT_EQ(windows(m), (W{16, 16}));
}

// The Gemma family as GemmaConfig, Gemma2Config and Gemma3TextConfig read their fields.
TEST(ModelConfig, GemmaFamilyAsTheirConfigsReadThem) {
  const auto gemma = [](const std::string& arch, const std::string& extra) {
    return ModelConfig::from_json_text(
        R"({"architectures": [")" + arch +
            R"("], "vocab_size": 10, "hidden_size": 16, "intermediate_size": 8,
            "num_hidden_layers": 7, "num_attention_heads": 2, "num_key_value_heads": 2,
            "head_dim": 8)" +
            extra + "}",
        "config.json");
  };
  const auto error = [&](const std::string& arch, const std::string& extra) {
    try {
      gemma(arch, extra);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto sliding = [](const ModelConfig& c) {
    std::vector<bool> s;
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) s.push_back(c.is_sliding_layer(l));
    return s;
  };
  using S = std::vector<bool>;

  // Gemma: the legacy "gelu" is the tanh form; (1 + w) norms, sqrt(hidden) embedding scale.
  const ModelConfig g1 = gemma("GemmaForCausalLM", R"(,"hidden_act": "gelu")");
  EXPECT_EQ(g1.hidden_act, Activation::gelu_tanh);
  EXPECT_TRUE(g1.norm_plus_one);
  EXPECT_DOUBLE_EQ(g1.embedding_scale, 4.0);
  EXPECT_FALSE(g1.sandwich_norms);
  EXPECT_FALSE(g1.has_sliding_window());
  EXPECT_EQ(g1.final_logit_softcapping, 0.0);
  EXPECT_EQ(gemma("GemmaForCausalLM", "").hidden_act, Activation::gelu_tanh);
  // The config classes' own defaults where a field is missing: head_dim 256, a tied head, and
  // GemmaConfig's 16 / Gemma2Config's and Gemma3TextConfig's 4 key/value heads.
  for (const auto& [arch, kv] : {std::pair<std::string, int64_t>{"GemmaForCausalLM", 16},
                                 {"Gemma2ForCausalLM", 4},
                                 {"Gemma3ForCausalLM", 4}}) {
    const ModelConfig d = ModelConfig::from_json_text(
        R"({"architectures": [")" + arch + R"("], "vocab_size": 10, "hidden_size": 32,
            "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 16})",
        "config.json");
    EXPECT_EQ(d.head_dim, 256) << arch;
    EXPECT_EQ(d.num_key_value_heads, kv) << arch;
    EXPECT_TRUE(d.tie_word_embeddings) << arch;
  }
  EXPECT_FALSE(gemma("GemmaForCausalLM", R"(,"tie_word_embeddings": false)").tie_word_embeddings);

  // Gemma 2: softcaps 50 / 30 and query_pre_attn_scalar 256 by default, null turns a cap off;
  // windows of 4096 on the even layers unless layer_types says otherwise.
  const ModelConfig g2 = gemma("Gemma2ForCausalLM", "");
  EXPECT_EQ(g2.attn_logit_softcapping, 50.0);
  EXPECT_EQ(g2.final_logit_softcapping, 30.0);
  EXPECT_EQ(g2.query_pre_attn_scalar, 256.0);
  EXPECT_TRUE(g2.sandwich_norms);
  EXPECT_EQ(sliding(g2), (S{true, false, true, false, true, false, true}));
  EXPECT_EQ(g2.layer_window(0), 4096);
  EXPECT_EQ(g2.layer_window(1), 0);
  const ModelConfig g2b = gemma("Gemma2ForCausalLM", R"(,"attn_logit_softcapping": null,
      "final_logit_softcapping": 12.5, "sliding_window": null)");
  EXPECT_EQ(g2b.attn_logit_softcapping, 0.0);
  EXPECT_EQ(g2b.final_logit_softcapping, 12.5);
  EXPECT_FALSE(g2b.has_sliding_window());
  EXPECT_NE(error("Gemma2ForCausalLM", R"(,"hidden_activation": "gelu")").find("'gelu'"),
            std::string::npos);  // Gemma2Config's "gelu" is the exact GELU
  EXPECT_NE(error("Gemma2ForCausalLM", R"(,"use_bidirectional_attention": true)")
                .find("use_bidirectional_attention"),
            std::string::npos);

  // Gemma 3: every 6th layer full by default, or sliding_window_pattern; the sliding layers'
  // own RoPE base (rope_local_base_freq, default 1e4) beside rope_theta (default 1e6) and its
  // scaling; or transformers 5's rope_parameters per layer type.
  const ModelConfig g3 = gemma("Gemma3ForCausalLM", "");
  EXPECT_EQ(sliding(g3), (S{true, true, true, true, true, false, true}));
  EXPECT_TRUE(g3.qk_norm);
  EXPECT_EQ(g3.attn_logit_softcapping, 0.0);
  // Gemma3Attention never applies attn_logit_softcapping; the final one it does.
  const ModelConfig g3caps = gemma("Gemma3ForCausalLM", R"(,"attn_logit_softcapping": 50.0,
      "final_logit_softcapping": 30.0)");
  EXPECT_EQ(g3caps.attn_logit_softcapping, 0.0);
  EXPECT_EQ(g3caps.final_logit_softcapping, 30.0);
  EXPECT_DOUBLE_EQ(g3.rope.theta, 1e6);
  ASSERT_TRUE(g3.sliding_rope);
  EXPECT_DOUBLE_EQ(g3.sliding_rope->theta, 1e4);
  const ModelConfig g3hub = gemma("Gemma3ForCausalLM", R"(,"sliding_window_pattern": 3,
      "rope_theta": 5e5, "rope_local_base_freq": 2e3, "sliding_window": 512,
      "rope_scaling": {"rope_type": "linear", "factor": 8.0})");
  EXPECT_EQ(sliding(g3hub), (S{true, true, false, true, true, false, true}));
  EXPECT_EQ(g3hub.layer_window(2), 0);
  EXPECT_EQ(g3hub.layer_window(3), 512);
  EXPECT_EQ(g3hub.rope.type, RopeType::linear);
  EXPECT_DOUBLE_EQ(g3hub.rope.theta, 5e5);
  EXPECT_EQ(g3hub.sliding_rope->type, RopeType::standard);
  EXPECT_DOUBLE_EQ(g3hub.sliding_rope->theta, 2e3);
  const ModelConfig g3v5 = gemma("Gemma3ForCausalLM", R"(,"rope_parameters": {
      "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 100000.0},
      "sliding_attention": {"rope_type": "default", "rope_theta": 1000.0}})");
  EXPECT_EQ(g3v5.rope.type, RopeType::linear);
  EXPECT_DOUBLE_EQ(g3v5.rope.factor, 2.0);
  EXPECT_DOUBLE_EQ(g3v5.sliding_rope->theta, 1000.0);
  EXPECT_NE(error("Gemma3ForCausalLM", R"(,"rope_parameters": {"sliding_attention":
      {"rope_type": "dynamic", "factor": 2.0}})")
                .find("sliding_attention"),
            std::string::npos);
  EXPECT_NE(
      error("Gemma3ForCausalLM", R"(,"sliding_window_pattern": 0)").find("sliding_window_pattern"),
      std::string::npos);
  // Only Gemma 3 reads rope parameters per layer type; SiLU models refuse other activations.
  EXPECT_NE(error("LlamaForCausalLM", R"(,"rope_parameters": {"full_attention": {}})")
                .find("per layer type"),
            std::string::npos);
  EXPECT_EQ(gemma("LlamaForCausalLM", R"(,"hidden_act": "gelu_pytorch_tanh")").hidden_act,
            Activation::gelu_tanh);
  EXPECT_NE(error("LlamaForCausalLM", R"(,"hidden_act": "relu")").find("'relu'"),
            std::string::npos);
}

// SmolLM3Config: NoPE layers from no_rope_layers or every no_rope_layer_interval-th (4), the
// window (with use_sliding_window) on the NoPE layers unless layer_types says otherwise.
TEST(ModelConfig, SmolLM3NoPeLayersAndWindows) {
  const auto smollm3 = [](const std::string& extra) {
    return ModelConfig::from_json_text(
        R"({"architectures": ["SmolLM3ForCausalLM"], "vocab_size": 10, "hidden_size": 16,
            "intermediate_size": 8, "num_hidden_layers": 8, "num_attention_heads": 4)" +
            extra + "}",
        "config.json");
  };
  const auto rotates = [](const ModelConfig& c) {
    std::vector<bool> r;
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) r.push_back(c.layer_rotates(l));
    return r;
  };
  using B = std::vector<bool>;
  const ModelConfig d = smollm3("");
  EXPECT_EQ(rotates(d), (B{true, true, true, false, true, true, true, false}));
  EXPECT_EQ(d.num_key_value_heads, 4);
  EXPECT_TRUE(d.tie_word_embeddings);
  EXPECT_FALSE(d.has_sliding_window());
  const ModelConfig w = smollm3(R"(,"no_rope_layer_interval": 3, "use_sliding_window": true,
      "sliding_window": 16)");
  EXPECT_EQ(rotates(w), (B{true, true, false, true, true, false, true, true}));
  EXPECT_EQ(w.layer_window(2), 16);
  EXPECT_EQ(w.layer_window(3), 0);
  // A window without use_sliding_window is not one.
  EXPECT_FALSE(smollm3(R"(,"sliding_window": 16)").has_sliding_window());
  const auto error = [&](const std::string& extra) {
    try {
      smollm3(extra);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error(R"(,"no_rope_layers": [1, 0])").find("no_rope_layers"), std::string::npos);
  EXPECT_NE(error(R"(,"no_rope_layers": [1, 0, 2, 1, 1, 1, 1, 1])").find("0 or 1"),
            std::string::npos);
  EXPECT_NE(error(R"(,"no_rope_layer_interval": 0)").find("no_rope_layer_interval"),
            std::string::npos);
}

// Olmo2Config: output norms only, q/k norms over whole projections, Llama's defaults elsewhere.
TEST(ModelConfig, Olmo2NormsAndDefaults) {
  const ModelConfig c = ModelConfig::from_json_text(
      R"({"architectures": ["Olmo2ForCausalLM"], "vocab_size": 10, "hidden_size": 16,
          "intermediate_size": 8, "num_hidden_layers": 2, "num_attention_heads": 4,
          "attention_bias": true})",
      "config.json");
  EXPECT_TRUE(c.qk_norm_full);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.output_norms_only);
  EXPECT_TRUE(c.qkv_bias && c.o_bias);
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.num_key_value_heads, 4);
}

// The MoE configs: each class's defaults, the experts' count under its field or its
// attribute_map alias, which layers are sparse, and malformed fields named.
TEST(ModelConfig, MixtureOfExpertsFieldsAndDefaults) {
  const ModelConfig q3 = arch_config("Qwen3MoeForCausalLM", "");
  EXPECT_EQ(q3.num_experts, 128);
  EXPECT_EQ(q3.num_experts_per_tok, 8);
  EXPECT_EQ(q3.moe_intermediate_size, 768);
  EXPECT_FALSE(q3.norm_topk_prob);
  EXPECT_TRUE(q3.qk_norm);
  EXPECT_TRUE(q3.is_moe_layer(0) && q3.is_moe_layer(3));
  // The Hub's num_experts and transformers 5's num_local_experts both count the experts.
  EXPECT_EQ(arch_config("Qwen3MoeForCausalLM", R"(, "num_experts": 16)").num_experts, 16);
  EXPECT_EQ(arch_config("Qwen3MoeForCausalLM", R"(, "num_local_experts": 12)").num_experts, 12);
  const ModelConfig sparse =
      arch_config("Qwen3MoeForCausalLM", R"(, "decoder_sparse_step": 2, "mlp_only_layers": [3],
          "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8)");
  EXPECT_FALSE(sparse.is_moe_layer(0));
  EXPECT_TRUE(sparse.is_moe_layer(1));
  EXPECT_FALSE(sparse.is_moe_layer(2));
  EXPECT_FALSE(sparse.is_moe_layer(3));  // listed in mlp_only_layers

  const ModelConfig q2 = arch_config("Qwen2MoeForCausalLM", "");
  EXPECT_EQ(q2.num_experts, 60);
  EXPECT_EQ(q2.num_experts_per_tok, 4);
  EXPECT_EQ(q2.shared_expert_intermediate_size, 5632);
  EXPECT_TRUE(q2.qkv_bias);
  EXPECT_FALSE(arch_config("Qwen2MoeForCausalLM", R"(, "qkv_bias": false)").qkv_bias);

  const ModelConfig mx = arch_config("MixtralForCausalLM", "");
  EXPECT_EQ(mx.num_experts, 8);
  EXPECT_EQ(mx.num_experts_per_tok, 2);
  EXPECT_EQ(mx.moe_intermediate_size, 24);  // intermediate_size
  EXPECT_TRUE(mx.norm_topk_prob);
  EXPECT_FALSE(mx.router_weights_in_act_dtype);
  EXPECT_FALSE(mx.sliding_window);
  EXPECT_DOUBLE_EQ(mx.rope.theta, 1e6);

  const ModelConfig ol = arch_config("OlmoeForCausalLM", "");
  EXPECT_EQ(ol.num_experts, 64);
  EXPECT_EQ(ol.num_experts_per_tok, 8);
  EXPECT_TRUE(ol.qk_norm_full);
  EXPECT_FALSE(ol.output_norms_only);

  EXPECT_NE(arch_error("Qwen3MoeForCausalLM", R"(, "num_experts": 4, "num_experts_per_tok": 5)")
                .find("num_experts_per_tok"),
            std::string::npos);
  EXPECT_NE(arch_error("Qwen3MoeForCausalLM", R"(, "moe_intermediate_size": 0)")
                .find("moe_intermediate_size"),
            std::string::npos);
  EXPECT_NE(arch_error("Qwen3MoeForCausalLM", R"(, "decoder_sparse_step": 0)")
                .find("decoder_sparse_step"),
            std::string::npos);
  EXPECT_NE(arch_error("Qwen3MoeForCausalLM", R"(, "num_experts": -1)").find("num_local_experts"),
            std::string::npos);
  EXPECT_NE(
      arch_error("MixtralForCausalLM", R"(, "num_local_experts": 0)").find("num_local_experts"),
      std::string::npos);
  EXPECT_NE(arch_error("OlmoeForCausalLM", R"(, "clip_qkv": 8.0)").find("clip_qkv"),
            std::string::npos);
  EXPECT_NE(
      arch_error("Qwen3MoeForCausalLM", R"(, "mlp_only_layers": ["a"])").find("mlp_only_layers"),
      std::string::npos);
}

// Granite's multipliers (each defaulting to 1, as GraniteConfig's do: an absent
// attention_multiplier scales scores by 1, not head_dim^-0.5), GraniteMoe's experts and
// GraniteMoeShared's ungated shared MLP; a zero or non-numeric multiplier is refused by name.
TEST(ModelConfig, GraniteMultipliersAndExperts) {
  const ModelConfig plain = arch_config("GraniteForCausalLM", "");
  EXPECT_DOUBLE_EQ(plain.embedding_scale, 1.0);
  EXPECT_EQ(plain.attention_multiplier, 1.0);
  EXPECT_DOUBLE_EQ(plain.residual_multiplier, 1.0);
  EXPECT_DOUBLE_EQ(plain.logits_scaling, 1.0);
  EXPECT_FALSE(plain.embedding_scale_rounded);
  const ModelConfig g = arch_config("GraniteForCausalLM", R"(, "embedding_multiplier": 12,
      "attention_multiplier": 0.015625, "residual_multiplier": 0.22, "logits_scaling": 8.0,
      "attention_bias": true, "mlp_bias": true)");
  EXPECT_DOUBLE_EQ(g.embedding_scale, 12.0);
  EXPECT_EQ(g.attention_multiplier, 0.015625);
  EXPECT_DOUBLE_EQ(g.residual_multiplier, 0.22);
  EXPECT_DOUBLE_EQ(g.logits_scaling, 8.0);
  EXPECT_TRUE(g.qkv_bias && g.o_bias && g.mlp_bias);
  EXPECT_EQ(g.num_experts, 0);

  const ModelConfig moe = arch_config("GraniteMoeForCausalLM", R"(, "num_local_experts": 6)");
  EXPECT_EQ(moe.num_experts, 6);
  EXPECT_EQ(moe.num_experts_per_tok, 2);
  EXPECT_EQ(moe.moe_intermediate_size, 24);  // intermediate_size
  EXPECT_TRUE(moe.norm_topk_prob);           // softmax over the picked experts' logits
  EXPECT_TRUE(moe.stacked_experts);
  EXPECT_EQ(moe.shared_expert_intermediate_size, 0);
  const ModelConfig shared =
      arch_config("GraniteMoeSharedForCausalLM", R"(, "shared_intermediate_size": 40)");
  EXPECT_EQ(shared.shared_expert_intermediate_size, 40);
  EXPECT_FALSE(shared.shared_expert_gated);
  EXPECT_EQ(arch_config("GraniteMoeSharedForCausalLM", "").shared_expert_intermediate_size, 0);

  EXPECT_NE(arch_error("GraniteForCausalLM", R"(, "logits_scaling": 0)").find("logits_scaling"),
            std::string::npos);
  EXPECT_NE(arch_error("GraniteForCausalLM", R"(, "residual_multiplier": "x")")
                .find("residual_multiplier"),
            std::string::npos);
  EXPECT_NE(
      arch_error("GraniteMoeForCausalLM", R"(, "num_local_experts": 0)").find("num_local_experts"),
      std::string::npos);
  EXPECT_NE(arch_error("GraniteMoeSharedForCausalLM", R"(, "shared_intermediate_size": -1)")
                .find("shared_intermediate_size"),
            std::string::npos);
}

TEST(GenerationConfig, EosAsIntOrList) {
  const auto one =
      GenerationConfig::from_json_text(R"({"eos_token_id": 2, "pad_token_id": 0})", "g");
  EXPECT_EQ(one.eos_token_ids, (std::vector<int64_t>{2}));
  EXPECT_EQ(one.pad_token_id, 0);
  EXPECT_FALSE(one.do_sample);
  EXPECT_EQ(one.top_k, 50);
  const auto many = GenerationConfig::from_json_text(
      R"({"eos_token_id": [151645, 151643], "do_sample": true, "temperature": 0.6,
          "top_k": 20, "top_p": 0.95})",
      "g");
  EXPECT_EQ(many.eos_token_ids, (std::vector<int64_t>{151645, 151643}));
  EXPECT_TRUE(many.do_sample);
  EXPECT_FLOAT_EQ(many.temperature, 0.6f);
  EXPECT_EQ(many.top_k, 20);
  EXPECT_THROW(GenerationConfig::from_json_text(R"({"eos_token_id": "x"})", "g"), Error);
  EXPECT_THROW(GenerationConfig::from_json_text(R"({"top_p": 1.5})", "g"), Error);
}

TEST(GenerationConfig, PromptLookupFields) {
  const auto none = GenerationConfig::from_json_text("{}", "g");
  EXPECT_EQ(none.prompt_lookup_num_tokens, std::nullopt);
  EXPECT_EQ(none.max_matching_ngram_size, std::nullopt);
  const auto set = GenerationConfig::from_json_text(
      R"({"prompt_lookup_num_tokens": 10, "max_matching_ngram_size": 3})", "g");
  EXPECT_EQ(set.prompt_lookup_num_tokens, 10);
  EXPECT_EQ(set.max_matching_ngram_size, 3);
  const auto assistant = GenerationConfig::from_json_text(
      R"({"num_assistant_tokens": 5, "assistant_confidence_threshold": 0.25})", "g");
  EXPECT_EQ(assistant.num_assistant_tokens, 5);
  EXPECT_EQ(assistant.assistant_confidence_threshold, 0.25f);
  EXPECT_EQ(assistant.num_assistant_tokens_schedule, std::nullopt);
  for (const auto& [name, want] :
       {std::pair{"constant", AssistantTokensSchedule::constant},
        std::pair{"heuristic", AssistantTokensSchedule::heuristic},
        std::pair{"heuristic_transient", AssistantTokensSchedule::heuristic_transient}}) {
    const auto g = GenerationConfig::from_json_text(
        std::string(R"({"num_assistant_tokens_schedule": ")") + name + "\"}", "g");
    EXPECT_EQ(g.num_assistant_tokens_schedule, want) << name;
  }
  for (const char* bad : {R"({"num_assistant_tokens_schedule": "sometimes"})",
                          R"({"num_assistant_tokens_schedule": 2})"}) {
    try {
      GenerationConfig::from_json_text(bad, "dir/g.json");
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("dir/g.json"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("num_assistant_tokens_schedule"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_TRUE(set.unimplemented.empty());
  try {
    GenerationConfig::from_json_text(R"({"prompt_lookup_num_tokens": "ten"})", "dir/g.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dir/g.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("prompt_lookup_num_tokens"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace anvil
