// Parity on fixtures made by scripts/goldens/make_extra_goldens.py with transformers 5.17:
// llama3 RoPE scaling with q/k/v/o and MLP biases and one KV head (sharded checkpoint, Hub-style
// config), Qwen3 with attention biases stored in bf16, and models written by `anvil
// init-model`, which transformers loaded with no missing or unexpected weights.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "anvil/error.h"
#include "anvil/model.h"
#include "formats/mapped_file.h"
#include "models/init_model.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

std::string extra(const std::string& name) {
  return test::data_dir() + "/extra/" + name;
}

float max_diff_where(const Tensor& got, const Tensor& want, const std::vector<int64_t>& mask) {
  const auto g = got.to_f32_vector(), w = want.to_f32_vector();
  const int64_t vocab = want.size(-1);
  float m = 0;
  for (size_t pos = 0; pos * vocab < g.size(); ++pos) {
    if (!mask.empty() && mask[pos] == 0) continue;
    for (int64_t v = 0; v < vocab; ++v) {
      m = std::max(m, std::fabs(g[pos * vocab + v] - w[pos * vocab + v]));
    }
  }
  return m;
}

void check_parity(const std::string& model_dir, const std::string& golden_path) {
  const auto golden = SafetensorsFile::open(golden_path);
  for (const char* attn : {"sdpa", "eager"}) {
    SCOPED_TRACE(attn);
    ModelOptions o;
    o.dtype = DType::f32;
    o.attn_implementation = attn;
    const CausalLM model = CausalLM::from_pretrained(model_dir, o);

    Batch a;
    a.input_ids = test::id_rows(golden, "input_ids_a");
    EXPECT_LE(max_diff_where(model.logits(a), golden.load("logits_a"), {}), 1e-4f);

    Batch b;
    b.input_ids = test::id_rows(golden, "input_ids_b");
    b.attention_mask = test::id_rows(golden, "attention_mask_b");
    std::vector<int64_t> mask;
    for (const auto& r : b.attention_mask) mask.insert(mask.end(), r.begin(), r.end());
    EXPECT_LE(max_diff_where(model.logits(b), golden.load("logits_b"), mask), 1e-4f);

    Batch l;
    l.input_ids = test::id_rows(golden, "input_ids_long");
    const Tensor want_long = golden.load("logits_long_last");
    const Tensor got_long = model.logits(l);
    const int64_t last = want_long.size(1);
    EXPECT_LE(max_diff_where(got_long.narrow(1, got_long.size(1) - last, last).contiguous(),
                             want_long, {}),
              1e-4f);

    GenerateOptions g;
    g.max_new_tokens = 12;
    g.do_sample = false;
    EXPECT_EQ(model.generate(b, g), test::id_rows(golden, "gen_b"));
  }
}

// check_parity on a fixture folder (model/ and golden.safetensors).
void check_parity(const std::string& dir) {
  check_parity(dir + "/model", dir + "/golden.safetensors");
}

TEST(ExtraParity, Llama3RopeBiasesMqaShardedHubConfig) {
  check_parity(extra("llama3-bias-tiny"));
}

TEST(ExtraParity, Qwen3AttentionBiasStoredInBf16) {
  check_parity(extra("qwen3-bias-bf16-tiny"));
}

// check_parity, then 40 greedy tokens from input_ids_a (eos ignored) from a freshly loaded model
// against the golden's gen_long_a.
void check_parity_and_long_generation(const std::string& dir) {
  check_parity(dir);
  const auto golden = SafetensorsFile::open(dir + "/golden.safetensors");
  ModelOptions o;
  o.dtype = DType::f32;
  const CausalLM model = CausalLM::from_pretrained(dir + "/model", o);
  Batch a;
  a.input_ids = test::id_rows(golden, "input_ids_a");
  EXPECT_EQ(model.generate(a, test::greedy_exactly(40)), test::id_rows(golden, "gen_long_a"));
}

// scripts/goldens/make_rope_goldens.py: YaRN as Qwen's cards enable it (Hub-style config), and
// with every optional parameter set.
TEST(ExtraParity, Qwen2YarnHubConfig) {
  check_parity(extra("qwen2-yarn-tiny"));
}

TEST(ExtraParity, LlamaYarnEveryParameter) {
  check_parity(extra("llama-yarn-params-tiny"));
}

// Dynamic NTK scaling over max_position_embeddings 32: check_parity's long input grows the base
// and the batch's generation after it resets it (state carried between calls, as transformers'
// rotary module carries it); then a generation whose decode steps grow it at every step.
TEST(ExtraParity, LlamaDynamicNtkGrowsAndResets) {
  check_parity_and_long_generation(extra("llama-dynamic-tiny"));
}

// scripts/goldens/make_mistral_goldens.py: Mistral's sliding window of 6 positions, which every
// input and generation reaches past (prompts longer than the window, a padded batch, 40 greedy
// tokens).
TEST(ExtraParity, MistralSlidingWindow) {
  check_parity_and_long_generation(extra("mistral-window-tiny"));
}

// scripts/goldens/make_window_goldens.py: windows on some layers only, as Qwen2Config sets them
// up from max_window_layers (a window of 5 on layers 1 and 2, Hub-style config without
// layer_types) and as layer_types names them (Qwen3, a window of 7 on layers 0 and 2).
TEST(ExtraParity, Qwen2SlidingWindowFromMaxWindowLayers) {
  check_parity_and_long_generation(extra("qwen2-window-layers-tiny"));
}

TEST(ExtraParity, Qwen3SlidingWindowFromLayerTypes) {
  check_parity_and_long_generation(extra("qwen3-window-types-tiny"));
}

// scripts/goldens/make_phi3_goldens.py: Phi-3's fused projections, longrope switching to its
// long factors past 32 positions (the long input, and mid-way through the 40-token
// generation) and a sliding window of 10.
// scripts/goldens/make_gemma_goldens.py: Gemma's (1 + w) norms, scaled embedding and GeGLU
// (the Hub's legacy hidden_act "gelu"); Gemma 2's four norms a layer, softcapped scores and
// logits, query_pre_attn_scalar and windows on the even layers; Gemma 3's q/k norms and its
// sliding layers' own RoPE base beside the full layer's linear scaling (Hub-style config with
// sliding_window_pattern).
TEST(ExtraParity, GemmaGeluNormsPlusOneScaledEmbedding) {
  check_parity_and_long_generation(extra("gemma-tiny"));
}

TEST(ExtraParity, Gemma2SoftcapsSandwichNormsWindows) {
  check_parity_and_long_generation(extra("gemma2-tiny"));
}

TEST(ExtraParity, Gemma3TextLocalRopeQkNormsWindows) {
  check_parity_and_long_generation(extra("gemma3-text-tiny"));
}

// scripts/goldens/make_smollm3_goldens.py: SmolLM3's NoPE layers (every 2nd from
// no_rope_layer_interval, Hub-style config; then an explicit no_rope_layers whose NoPE layers
// carry a window of 5).
TEST(ExtraParity, SmolLM3NoPeLayersFromTheInterval) {
  check_parity_and_long_generation(extra("smollm3-nope-tiny"));
}

TEST(ExtraParity, SmolLM3WindowsOnTheNoPeLayers) {
  check_parity_and_long_generation(extra("smollm3-window-tiny"));
}

// scripts/goldens/make_olmo2_goldens.py: OLMo 2's output norms without input norms, and q/k
// normalised over whole projections.
TEST(ExtraParity, Olmo2OutputNormsWholeProjectionQkNorms) {
  check_parity_and_long_generation(extra("olmo2-tiny"));
}

// scripts/goldens/make_moe_goldens.py: sparse mixture-of-experts MLPs.
TEST(ExtraParity, Qwen3MoeNormalisedTopKWithADenseLayer) {
  check_parity_and_long_generation(extra("qwen3-moe-tiny"));
}

TEST(ExtraParity, Qwen2MoeSharedExpertEverySecondLayer) {
  check_parity_and_long_generation(extra("qwen2-moe-tiny"));
}

TEST(ExtraParity, MixtralExpertsAndWindow) {
  check_parity_and_long_generation(extra("mixtral-tiny"));
}

TEST(ExtraParity, OlmoeExpertsWholeProjectionQkNorms) {
  check_parity_and_long_generation(extra("olmoe-tiny"));
}

// scripts/goldens/make_granite_goldens.py: Granite's four multipliers (embeddings, attention
// scale, residual branches, logits) with biases and tied embeddings; GraniteMoe's stacked
// experts; GraniteMoeShared's ungated shared MLP.
TEST(ExtraParity, GraniteMultipliersBiasesTied) {
  check_parity_and_long_generation(extra("granite-tiny"));
}

TEST(ExtraParity, GraniteMoeStackedExperts) {
  check_parity_and_long_generation(extra("granitemoe-tiny"));
}

TEST(ExtraParity, GraniteMoeSharedMlp) {
  check_parity_and_long_generation(extra("granitemoeshared-tiny"));
}

TEST(ExtraParity, Phi3FusedLongropeWindow) {
  check_parity_and_long_generation(extra("phi3-longrope-window-tiny"));
}

// scripts/goldens/make_phi3_goldens.py: Phi-4-mini's shape, partial_rotary_factor 0.75 (12 of
// 16 dimensions rotate, the rest pass through) with longrope over the rotated pairs and tied
// embeddings; the long input and a generation past the original context.
TEST(ExtraParity, Phi3PartialRotary) {
  check_parity_and_long_generation(extra("phi3-partial-tiny"));
}

TEST(ExtraParity, Bf16CheckpointLoadsAsBf16ByDefault) {
  const CausalLM model = CausalLM::from_pretrained(extra("qwen3-bias-bf16-tiny") + "/model");
  EXPECT_EQ(model.dtype(), DType::bf16);  // "auto": the checkpoint's dtype
}

class InitModelParity : public ::testing::TestWithParam<std::string> {};

TEST_P(InitModelParity, TransformersLoadsAnvilsRandomModelsAndAgrees) {
  test::TempDir dir;
  // The same call that made the models transformers loaded (scripts/goldens: seed 7, f32).
  init_model(test::model_dir(GetParam()) + "/config.json", dir.path(), 7, DType::f32);
  check_parity(dir.path(), extra("anvil-init-" + GetParam()) + "/golden.safetensors");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, InitModelParity,
                         ::testing::Values("qwen3-tiny", "llama-tiny", "qwen2-tiny"),
                         test::ParamName());

// init-model from a config with sliding windows on some layers and no token ids: the folder
// keeps the windows, and its generation_config.json is an empty object (it had been `null`,
// which no loader takes); GGUF refuses only a config whose layers really have a window.
TEST(InitModel, KeepsLayerWindowsAndWritesAnEmptyGenerationConfig) {
  test::TempDir dir;
  nlohmann::json config = nlohmann::json::parse(
      read_text_file(extra("qwen2-window-layers-tiny") + "/model/config.json"));
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id"}) config.erase(key);
  const std::string config_path = dir.file("config.json");
  {
    std::ofstream f(config_path);
    f << config.dump();
  }
  init_model(config_path, dir.file("out"), 5, DType::f32);
  EXPECT_EQ(nlohmann::json::parse(read_text_file(dir.file("out") + "/generation_config.json")),
            nlohmann::json::object());
  const CausalLM model = CausalLM::from_pretrained(dir.file("out"));
  std::vector<int64_t> windows;
  for (int64_t l = 0; l < model.config().num_hidden_layers; ++l) {
    windows.push_back(model.config().layer_window(l));
  }
  EXPECT_EQ(windows, (std::vector<int64_t>{0, 5, 5}));
  Batch b;
  b.input_ids = {{3, 4, 5, 6, 7, 8, 9, 10}};
  EXPECT_EQ(model.generate(b, test::greedy_exactly(4))[0].size(), 12u);
  // GGUF has no sliding window: a config with windowed layers is refused by name, one whose
  // use_sliding_window leaves every layer full (max_window_layers past the last) is written.
  try {
    init_model(config_path, dir.file("gguf"), 5, DType::q8_0);
    ADD_FAILURE() << "a windowed config was written as GGUF";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sliding-window"), std::string::npos) << e.what();
  }
  config["max_window_layers"] = 3;
  {
    std::ofstream f(config_path);
    f << config.dump();
  }
  EXPECT_NO_THROW(init_model(config_path, dir.file("gguf_full"), 5, DType::q8_0));
}

}  // namespace
}  // namespace anvil
