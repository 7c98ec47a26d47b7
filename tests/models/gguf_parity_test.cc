// The tiny transformers fixtures written as GGUF files the way llama.cpp lays them out
// (scripts/goldens/make_tiny_ggufs.py: llama.cpp names, {arch}.* metadata, Llama's q/k rows
// permuted): anvil must give the same logits and greedy tokens as from the safetensors folders,
// which are checked against transformers. This covers the name mapping, the metadata and the
// un-permutation for every architecture, with grouped-query heads, and (llama3-bias-tiny) q/k/v/o
// and MLP biases with Llama 3.1 RoPE scaling stored as rope_freqs.weight.
#include <gtest/gtest.h>

#include <cmath>

#include "anvil/model.h"
#include "models/convert.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

class GgufParity : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufParity, SameLogitsAndTokensAsTransformers) {
  const std::string gguf = test::data_dir() + "/" + GetParam() + "/model.gguf";
  const auto golden =
      SafetensorsFile::open(test::data_dir() + "/" + GetParam() + "/golden.safetensors");
  const CausalLM model = CausalLM::from_pretrained(gguf);
  EXPECT_EQ(model.dtype(), DType::f32);
  Batch b;
  b.input_ids = test::id_rows(golden, "input_ids_b");
  b.attention_mask = test::id_rows(golden, "attention_mask_b");
  const auto got = model.logits(b).to_f32_vector();
  const auto want = golden.load("logits_b").to_f32_vector();
  const int64_t vocab = golden.load("logits_b").size(-1);
  std::vector<int64_t> mask;
  for (const auto& r : b.attention_mask) mask.insert(mask.end(), r.begin(), r.end());
  float max_diff = 0;
  for (size_t pos = 0; pos < mask.size(); ++pos) {
    if (!mask[pos]) continue;
    for (int64_t v = 0; v < vocab; ++v) {
      max_diff = std::max(max_diff, std::fabs(got[pos * vocab + v] - want[pos * vocab + v]));
    }
  }
  EXPECT_LE(max_diff, 1e-4f);
  GenerateOptions g;
  const auto want_gen = test::id_rows(golden, "gen_b");
  g.max_new_tokens = static_cast<int64_t>(want_gen[0].size() - b.input_ids[0].size());
  g.do_sample = false;
  EXPECT_EQ(model.generate(b, g), want_gen);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufParity,
                         ::testing::Values("qwen3-tiny", "llama-tiny", "qwen2-tiny",
                                           "extra/llama3-bias-tiny",
                                           "extra/phi3-longrope-window-tiny"),
                         test::ParamName());

// Phi-3 as llama.cpp's converter writes it (scripts/goldens/make_phi3_gguf.py): past the
// original context the long factors, in the long input's logits and in a generation that
// crosses it (where transformers recomputes the cache), as from the safetensors folder; and the
// same from the Hub folder `anvil convert` writes from that file.
class GgufParityPhi3 : public ::testing::TestWithParam<bool> {};

TEST_P(GgufParityPhi3, LongropeAndWindowFromLlamaCppMetadata) {
  const std::string dir = test::data_dir() + "/extra/phi3-longrope-window-tiny";
  const auto golden = SafetensorsFile::open(dir + "/golden.safetensors");
  test::TempDir converted;
  if (GetParam()) convert_gguf_to_hf(dir + "/model.gguf", converted.path(), DType::f32);
  const CausalLM model =
      CausalLM::from_pretrained(GetParam() ? converted.path() : dir + "/model.gguf");
  EXPECT_EQ(model.config().sliding_window, 10);
  Batch l;
  l.input_ids = test::id_rows(golden, "input_ids_long");
  const Tensor got = model.logits(l);
  const Tensor want = golden.load("logits_long_last");
  const int64_t last = want.size(1);
  const auto g = got.narrow(1, got.size(1) - last, last).contiguous().to_f32_vector();
  const auto w = want.to_f32_vector();
  float max_diff = 0;
  for (size_t i = 0; i < w.size(); ++i) max_diff = std::max(max_diff, std::fabs(g[i] - w[i]));
  EXPECT_LE(max_diff, 1e-4f);
  Batch a;
  a.input_ids = test::id_rows(golden, "input_ids_a");
  EXPECT_EQ(model.generate(a, test::greedy_exactly(40)), test::id_rows(golden, "gen_long_a"));
}

INSTANTIATE_TEST_SUITE_P(GgufAndConverted, GgufParityPhi3, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "converted" : "gguf";
                         });

}  // namespace
}  // namespace anvil
