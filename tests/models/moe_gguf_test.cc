// Mixture-of-experts GGUFs beyond the parity fixtures: the expert keys llama.cpp writes, read
// or refused by name, and each expert as its slice of the layer's stacked tensor.
#include <gtest/gtest.h>

#include <string>

#include "anvil/error.h"
#include "gguf_metadata.h"
#include "models/gguf_model.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

std::string error_of(const std::string& path) {
  try {
    open_gguf_model(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(MoeGguf, ExpertKeysReadOrRefusedByName) {
  test::TempDir dir;
  // A qwen3moe file of `count` experts, `used` a token, 32 wide, and `more` keys.
  const auto qwen3moe = [&](
                            const std::string& name, uint32_t count, uint32_t used,
                            const std::function<void(GgufWriter&)>& more = [](GgufWriter&) {}) {
    return test::metadata_gguf(dir, name, "qwen3moe", [&](GgufWriter& w) {
      if (count) w.add_u32("qwen3moe.expert_count", count);
      w.add_u32("qwen3moe.expert_used_count", used);
      w.add_u32("qwen3moe.expert_feed_forward_length", 32);
      more(w);
    });
  };
  const GgufModel ok = open_gguf_model(qwen3moe("ok.gguf", 16, 4));
  EXPECT_EQ(ok.config.architecture, "Qwen3MoeForCausalLM");
  EXPECT_EQ(ok.config.num_experts, 16);
  EXPECT_EQ(ok.config.num_experts_per_tok, 4);
  EXPECT_EQ(ok.config.moe_intermediate_size, 32);
  EXPECT_TRUE(ok.config.norm_topk_prob);  // llama.cpp renormalises qwen3moe's picks
  EXPECT_TRUE(ok.config.is_moe_layer(0));

  // A llama file with experts is Mixtral (experts as wide as feed_forward_length).
  const GgufModel mixtral =
      open_gguf_model(test::metadata_gguf(dir, "mixtral.gguf", "llama", [](GgufWriter& w) {
        w.add_u32("llama.expert_count", 8);
        w.add_u32("llama.expert_used_count", 2);
      }));
  EXPECT_EQ(mixtral.config.architecture, "MixtralForCausalLM");
  EXPECT_EQ(mixtral.config.moe_intermediate_size, 128);
  EXPECT_FALSE(mixtral.config.router_weights_in_act_dtype);

  const auto refused = [&](const std::string& path, const std::string& says) {
    const std::string e = error_of(path);
    EXPECT_NE(e.find(says), std::string::npos) << e;
  };
  refused(qwen3moe("none.gguf", 0, 2), "qwen3moe.expert_count");
  refused(qwen3moe("used.gguf", 4, 5), "expert_used_count 5");
  refused(qwen3moe("gating.gguf", 4, 2,
                   [](GgufWriter& w) { w.add_u32("qwen3moe.expert_gating_func", 2); }),
          "expert_gating_func 2");
  refused(qwen3moe("scale.gguf", 4, 2,
                   [](GgufWriter& w) { w.add_f32("qwen3moe.expert_weights_scale", 2.5f); }),
          "expert_weights_scale");
  refused(test::metadata_gguf(dir, "qwen3.gguf", "qwen3",
                              [](GgufWriter& w) {
                                w.add_u32("qwen3.expert_count", 4);
                                w.add_u32("qwen3.expert_used_count", 2);
                              }),
          "qwen3 with experts");
}

// Granite's multipliers as llama.cpp's converter writes them (llama.cpp's defaults where a key
// is absent: 1, and head_dim^-0.5 for the attention), granitemoe's experts and shared MLP; a
// zero multiplier is refused by name.
TEST(MoeGguf, GraniteMultipliersAndExperts) {
  test::TempDir dir;
  const GgufModel dense =
      open_gguf_model(test::metadata_gguf(dir, "granite.gguf", "granite", [](GgufWriter& w) {
        w.add_f32("granite.embedding_scale", 12.0f);
        w.add_f32("granite.residual_scale", 0.25f);
        w.add_f32("granite.attention.scale", 0.125f);
        w.add_f32("granite.logit_scale", 8.0f);
      }));
  EXPECT_EQ(dense.config.architecture, "GraniteForCausalLM");
  EXPECT_DOUBLE_EQ(dense.config.embedding_scale, 12.0);
  EXPECT_DOUBLE_EQ(dense.config.residual_multiplier, 0.25);
  EXPECT_EQ(dense.config.attention_multiplier, 0.125);
  EXPECT_DOUBLE_EQ(dense.config.logits_scaling, 8.0);
  const GgufModel bare =
      open_gguf_model(test::metadata_gguf(dir, "bare.gguf", "granite", [](GgufWriter&) {}));
  EXPECT_FALSE(bare.config.attention_multiplier);  // head_dim^-0.5, as llama.cpp
  EXPECT_DOUBLE_EQ(bare.config.logits_scaling, 1.0);

  const GgufModel moe =
      open_gguf_model(test::metadata_gguf(dir, "moe.gguf", "granitemoe", [](GgufWriter& w) {
        w.add_u32("granitemoe.expert_count", 8);
        w.add_u32("granitemoe.expert_used_count", 2);
        w.add_u32("granitemoe.expert_shared_feed_forward_length", 64);
      }));
  EXPECT_EQ(moe.config.architecture, "GraniteMoeSharedForCausalLM");
  EXPECT_EQ(moe.config.moe_intermediate_size, 128);  // feed_forward_length
  EXPECT_EQ(moe.config.shared_expert_intermediate_size, 64);
  EXPECT_FALSE(moe.config.shared_expert_gated);
  EXPECT_TRUE(moe.config.norm_topk_prob);

  const std::string e = error_of(test::metadata_gguf(
      dir, "zero.gguf", "granite", [](GgufWriter& w) { w.add_f32("granite.logit_scale", 0.0f); }));
  EXPECT_NE(e.find("granite.logit_scale"), std::string::npos) << e;
}

// Expert e of a layer is slice e of blk.L.ffn_*_exps ({in, out, experts}); one past the stack
// is not in the file, and says which stack it looked in.
TEST(MoeGguf, ExpertsAreSlicesOfTheirStack) {
  const GgufModel m = open_gguf_model(test::data_dir() + "/extra/qwen3moe-gguf-tiny/model.gguf");
  const WeightSource& w = *m.weights;
  EXPECT_EQ(w.shape("model.layers.1.mlp.experts.7.gate_proj.weight"), (Shape{32, 64}));
  EXPECT_EQ(w.shape("model.layers.1.mlp.experts.7.down_proj.weight"), (Shape{64, 32}));
  EXPECT_EQ(w.shape("model.layers.0.mlp.gate.weight"), (Shape{8, 64}));
  EXPECT_FALSE(w.contains("model.layers.0.mlp.experts.8.up_proj.weight"));
  EXPECT_FALSE(w.contains("model.layers.0.mlp.experts.x.up_proj.weight"));
  const Tensor e0 = w.load("model.layers.0.mlp.experts.0.up_proj.weight");
  const Tensor e1 = w.load("model.layers.0.mlp.experts.1.up_proj.weight");
  EXPECT_EQ(static_cast<const std::byte*>(e1.raw()) - static_cast<const std::byte*>(e0.raw()),
            static_cast<std::ptrdiff_t>(32 * 64 * sizeof(float)));
  try {
    w.shape("model.layers.0.mlp.experts.8.up_proj.weight");
    ADD_FAILURE() << "an expert past the stack";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ffn_up_exps.weight[8]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anvil
