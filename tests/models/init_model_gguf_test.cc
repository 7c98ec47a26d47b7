// `anvil init-model --dtype q8_0|...|q4_k_m`: the quantizers, the GGUF
// writer, and the quantized model it writes, run through the CPU's quantized kernels against the
// same weights dequantized to float32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include <nlohmann/json.hpp>

#include "anvil/error.h"
#include "anvil/gguf.h"
#include "anvil/model.h"
#include "formats/ggml_quants.h"
#include "formats/gguf_writer.h"
#include "formats/mapped_file.h"
#include "models/init_model.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

TEST(Quantize, RoundTripsWithinHalfAStep) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(32 * 64);
  for (float& v : x) v = dist(rng);
  x[5] = 0;  // an all-zero block must not divide by zero
  for (int i = 64; i < 96; ++i) x[i] = 0;
  for (GgmlType t :
       {GgmlType::q8_0, GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1}) {
    std::vector<uint8_t> q(ggml_row_bytes(t, static_cast<int64_t>(x.size())));
    quantize_row(t, x.data(), q.data(), static_cast<int64_t>(x.size()));
    std::vector<float> back(x.size());
    dequantize_row(t, q.data(), back.data(), static_cast<int64_t>(x.size()));
    for (size_t b = 0; b < x.size(); b += 32) {
      float lo = x[b], hi = x[b], amax = 0;
      for (size_t i = b; i < b + 32; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
        amax = std::max(amax, std::fabs(x[i]));
      }
      // Step sizes: Q8_0 amax/127; Q4_0 amax/8 and Q5_0 amax/16 (the far side clamps: one
      // step); Q4_1 (max-min)/15 and Q5_1 (max-min)/31 plus the f16 rounding of the minimum and
      // the scale.
      const bool symmetric = t == GgmlType::q4_0 || t == GgmlType::q5_0;
      const float step = t == GgmlType::q8_0   ? amax / 127.0f
                         : t == GgmlType::q4_0 ? amax / 8.0f
                         : t == GgmlType::q5_0 ? amax / 16.0f
                         : t == GgmlType::q4_1 ? (hi - lo) / 15.0f
                                               : (hi - lo) / 31.0f;
      const float bound = (symmetric ? 1.0f : 0.5f) * step * 1.01f + 2e-3f * amax;
      for (size_t i = b; i < b + 32; ++i) {
        ASSERT_LE(std::fabs(back[i] - x[i]), bound) << ggml_type_name(t) << " element " << i;
      }
    }
  }
  std::vector<uint8_t> q(256);
  EXPECT_THROW(quantize_row(GgmlType::q2_k, x.data(), q.data(), 256), Error);
  EXPECT_THROW(quantize_row(GgmlType::q8_0, x.data(), q.data(), 31), Error);
  EXPECT_THROW(quantize_row(GgmlType::q4_k, x.data(), q.data(), 32), Error);
}

// The K types' min/max fit: every element within a step of its sub-block (plus the rounding of
// the six- or eight-bit scales against d), and the whole within the error of its bit width.
TEST(Quantize, KTypesRoundTripWithinTheirSteps) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(256 * 24);
  for (float& v : x) v = dist(rng);
  for (int i = 0; i < 256; ++i) x[256 + i] = 0;                          // an all-zero super-block
  for (int i = 0; i < 32; ++i) x[512 + i] = 0;                           // an all-zero sub-block
  for (int i = 0; i < 256; ++i) x[768 + i] = 3.0f + x[768 + i] * 0.01f;  // all positive
  for (int i = 0; i < 256; ++i) x[1024 + i] *= i < 128 ? 1e-3f : 10.0f;  // scales far apart
  struct Case {
    GgmlType type;
    int sub, levels;     // sub-block size, quant levels
    float rms_fraction;  // of the rms of x (measured 0.075, 0.035, 0.018)
  };
  for (const Case c : {Case{GgmlType::q4_k, 32, 16, 0.09f}, Case{GgmlType::q5_k, 32, 32, 0.045f},
                       Case{GgmlType::q6_k, 16, 63, 0.025f}}) {
    std::vector<uint8_t> q(ggml_row_bytes(c.type, static_cast<int64_t>(x.size())));
    quantize_row(c.type, x.data(), q.data(), static_cast<int64_t>(x.size()));
    std::vector<float> back(x.size());
    dequantize_row(c.type, q.data(), back.data(), static_cast<int64_t>(x.size()));
    double err2 = 0, x2 = 0;
    for (size_t sb = 0; sb < x.size(); sb += 256) {
      float sb_amax = 0;
      for (size_t i = sb; i < sb + 256; ++i) sb_amax = std::max(sb_amax, std::fabs(x[i]));
      for (size_t b = sb; b < sb + 256; b += static_cast<size_t>(c.sub)) {
        float lo = 0, hi = 0;
        for (size_t i = b; i < b + static_cast<size_t>(c.sub); ++i) {
          lo = std::min(lo, x[i]);
          hi = std::max(hi, x[i]);
        }
        // A step of the sub-block's range, and the scales' rounding: half a step of d
        // (the super-block's largest scale over 63, or 127 for Q6_K) per level.
        const float range = c.type == GgmlType::q6_k ? 2 * std::max(-lo, hi) : hi - lo;
        const float step = range / static_cast<float>(c.levels - 1);
        const float scale_rounding = sb_amax / (c.type == GgmlType::q6_k ? 127.0f : 63.0f);
        const float bound = step + scale_rounding + 1e-6f;
        for (size_t i = b; i < b + static_cast<size_t>(c.sub); ++i) {
          ASSERT_LE(std::fabs(back[i] - x[i]), bound)
              << ggml_type_name(c.type) << " element " << i << " of " << x[i];
          err2 += (back[i] - x[i]) * (back[i] - x[i]);
          x2 += x[i] * x[i];
        }
      }
    }
    EXPECT_LE(std::sqrt(err2 / x2), c.rms_fraction) << ggml_type_name(c.type);
    for (int i = 256; i < 512; ++i) EXPECT_EQ(back[static_cast<size_t>(i)], 0.0f);
  }
}

TEST(GgufWriter, WritesWhatTheReaderReads) {
  test::TempDir dir;
  GgufWriter w(dir.file("t.gguf"));
  w.add_string("general.architecture", "qwen2");
  w.add_u32("qwen2.block_count", 3);
  w.add_f32("qwen2.rope.freq_base", 1e6f);
  w.add_string_array("tokenizer.ggml.tokens", {"a", "bc", ""});
  std::vector<float> values(64 * 3);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f - 7.0f;
  w.add_tensor("m", GgmlType::q8_0, {64, 3}, [&](std::span<std::byte> out) {
    for (int r = 0; r < 3; ++r) {
      quantize_row(GgmlType::q8_0, values.data() + r * 64,
                   out.data() + r * ggml_row_bytes(GgmlType::q8_0, 64), 64);
    }
  });
  w.add_tensor("v", GgmlType::f32, {5}, [](std::span<std::byte> out) {
    const float v[5] = {1, 2, 3, 4, 5};
    std::memcpy(out.data(), v, sizeof v);
  });
  w.finish();
  const GgufFile f = GgufFile::open(dir.file("t.gguf"));
  EXPECT_EQ(f.find("general.architecture")->as_string(), "qwen2");
  EXPECT_EQ(f.find("qwen2.block_count")->as_u64(), 3u);
  const auto tokens = f.find("tokenizer.ggml.tokens")->as_string_array();
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[1], "bc");
  const GgufTensorInfo* m = f.find_tensor("m");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->type, GgmlType::q8_0);
  std::vector<float> back(values.size());
  dequantize_row(GgmlType::q8_0, f.tensor_data(*m), back.data(), 64 * 3);
  for (size_t i = 0; i < values.size(); ++i)
    EXPECT_NEAR(back[i], values[i], 0.17f);  // half a step: max |v| 41 / 127 / 2
  const GgufTensorInfo* v = f.find_tensor("v");
  ASSERT_NE(v, nullptr);
  float last;
  std::memcpy(&last, f.tensor_data(*v) + 16, 4);
  EXPECT_EQ(last, 5.0f);
}

// The largest difference between two runs' logits, and the largest logit of the reference.
struct LogitGap {
  float max_diff = 0, max_abs = 0;
};
LogitGap logit_gap(const std::vector<float>& got, const std::vector<float>& want) {
  LogitGap g;
  for (size_t i = 0; i < got.size(); ++i) {
    g.max_diff = std::max(g.max_diff, std::fabs(got[i] - want[i]));
    g.max_abs = std::max(g.max_abs, std::fabs(want[i]));
  }
  return g;
}

class InitModelGguf : public ::testing::TestWithParam<DType> {};

// The quantized model through the quantized kernels against the same file dequantized at load
// (--dtype f32): same argmax at every position, logits within the int8-activation error.
TEST_P(InitModelGguf, QuantizedKernelsAgreeWithTheDequantizedWeights) {
  test::TempDir dir;
  init_model(test::model_dir("qwen2-tiny") + "/config.json", dir.path(), 7, GetParam());
  const std::string path = dir.file("model.gguf");
  const CausalLM q = CausalLM::from_pretrained(path);
  EXPECT_EQ(q.dtype(), GetParam());
  ModelOptions f32;
  f32.dtype = DType::f32;
  const CausalLM ref = CausalLM::from_pretrained(path, f32);
  Batch b;
  b.input_ids = {{1, 5, 9, 22, 7, 3, 100, 4, 8, 15, 16, 23, 42}};
  const Tensor lq = q.logits(b), lr = ref.logits(b);
  const auto got = lq.to_f32_vector(), want = lr.to_f32_vector();
  const int64_t vocab = lq.size(-1);
  const auto [max_diff, max_abs] = logit_gap(got, want);
  RecordProperty("max_abs_logit_difference", std::to_string(max_diff));
  // int8 activations (AVX-512 VNNI): measured 0.5-0.75% of the largest logit; exact paths ~0.
  EXPECT_LE(max_diff, 2e-2f * max_abs + 1e-4f);
  // The same argmax wherever the reference's top two logits are further apart than twice the
  // largest difference (a random model has near ties that any rounding may flip), and that at
  // most positions.
  int64_t compared = 0;
  for (int64_t pos = 0; pos < lq.size(1); ++pos) {
    std::vector<float> row(want.begin() + pos * vocab, want.begin() + (pos + 1) * vocab);
    const auto argmax = [&](const std::vector<float>& v) {
      return std::max_element(v.begin() + pos * vocab, v.begin() + (pos + 1) * vocab) -
             (v.begin() + pos * vocab);
    };
    std::partial_sort(row.begin(), row.begin() + 2, row.end(), std::greater<float>());
    if (row[0] - row[1] <= 2 * max_diff) continue;
    ++compared;
    EXPECT_EQ(argmax(got), argmax(want)) << "position " << pos;
  }
  EXPECT_GE(compared, lq.size(1) / 2);
}

// Quantized weights on the CPU keep a half-precision KV cache unless told otherwise; float
// weights keep float32. Against the float32 cache: logits within the quantized path's error,
// the same greedy continuation (decode steps read the cache the prefill wrote).
TEST_P(InitModelGguf, HalfKvCacheByDefaultForQuantizedWeights) {
  test::TempDir dir;
  init_model(test::model_dir("qwen2-tiny") + "/config.json", dir.path(), 11, GetParam());
  const std::string path = dir.file("model.gguf");
  const CausalLM half = CausalLM::from_pretrained(path);
  EXPECT_EQ(half.kv_cache_dtype(), DType::f16);
  ModelOptions exact;
  exact.kv_cache_dtype = DType::f32;
  const CausalLM full = CausalLM::from_pretrained(path, exact);
  EXPECT_EQ(full.kv_cache_dtype(), DType::f32);
  ModelOptions dequantized;
  dequantized.dtype = DType::f32;
  EXPECT_EQ(CausalLM::from_pretrained(path, dequantized).kv_cache_dtype(), DType::f32);
  Batch b;
  b.input_ids = {{1, 5, 9, 22, 7, 3, 100, 4, 8, 15, 16, 23, 42}};
  const auto got = half.logits(b).to_f32_vector(), want = full.logits(b).to_f32_vector();
  const auto [max_diff, max_abs] = logit_gap(got, want);
  RecordProperty("max_abs_logit_difference", std::to_string(max_diff));
  EXPECT_GT(max_diff, 0.0f);  // the cache really is half precision
  // Half's rounding of keys and values moves the int8 rounding of the activations after them:
  // measured 0.7-0.9% of the largest logit, the same order as int8 activations themselves.
  EXPECT_LE(max_diff, 2e-2f * max_abs + 1e-4f);
  GenerateOptions g;
  g.max_new_tokens = 12;
  g.do_sample = false;
  EXPECT_EQ(half.generate(b, g), full.generate(b, g));
  // A dtype no cache takes is refused when the model loads, naming it.
  ModelOptions bad;
  bad.kv_cache_dtype = DType::q8_0;
  try {
    CausalLM::from_pretrained(path, bad);
    FAIL() << "a q8_0 KV cache was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("KV cache dtype q8_0"), std::string::npos) << e.what();
  }
}

// Where `together` first parts from `alone` (both a prompt and its greedy continuation), the
// reference's logits after alone's prefix must rank the two tokens first and second within
// `rel` of the largest logit: a near tie that a different rounding may flip. A batch's prefill
// may take other kernels than one prompt's (on an AMX CPU from 16 rows: bf16 tiles instead of
// int8 activations), and a random model has such ties; a wrong row does not land on one.
void expect_same_or_parted_at_a_tie(const CausalLM& model, const std::vector<int64_t>& together,
                                    const std::vector<int64_t>& alone, float rel,
                                    const std::string& what) {
  ASSERT_EQ(together.size(), alone.size()) << what;
  size_t p = 0;
  while (p < alone.size() && together[p] == alone[p]) ++p;
  if (p == alone.size()) return;
  Batch prefix;
  prefix.input_ids = {std::vector<int64_t>(alone.begin(), alone.begin() + static_cast<long>(p))};
  const Tensor logits = model.logits(prefix);
  const int64_t vocab = logits.size(-1);
  const auto all = logits.to_f32_vector();
  const std::vector<float> last(all.end() - vocab, all.end());
  float max_abs = 0;
  for (float v : last) max_abs = std::max(max_abs, std::fabs(v));
  const auto at = [&](int64_t id) { return last[static_cast<size_t>(id)]; };
  int64_t above = 0;  // tokens ranked above the one the batch chose
  for (float v : last) above += v > at(together[p]);
  EXPECT_LE(above, 1) << what << ": parted at position " << p << " on a token ranked " << above + 1;
  EXPECT_LE(at(alone[p]) - at(together[p]), rel * max_abs)
      << what << ": parted at position " << p << " away from a tie";
}

// Greedy generation of a batch of 2-4 prompts gives each prompt the tokens it gets alone (up to
// a near tie, above): the batch's decode steps multiply several rows at once (on AVX-512 the
// few-row lanes kernels, whose rows are batch 1's sums), the single prompt's one.
TEST_P(InitModelGguf, BatchedDecodeGivesEachPromptItsOwnContinuation) {
  test::TempDir dir;
  init_model(test::model_dir("qwen2-tiny") + "/config.json", dir.path(), 13, GetParam());
  const CausalLM model = CausalLM::from_pretrained(dir.file("model.gguf"));
  const std::vector<std::vector<int64_t>> prompts = {{1, 5, 9, 22, 7, 3, 100, 4},
                                                     {8, 15, 16, 23, 42, 4, 8, 15},
                                                     {2, 71, 82, 81, 8, 28, 18, 28},
                                                     {31, 41, 59, 26, 53, 58, 97, 93}};
  GenerateOptions g;
  g.max_new_tokens = 10;
  g.do_sample = false;
  std::vector<std::vector<int64_t>> alone;
  for (const auto& p : prompts) {
    Batch one;
    one.input_ids = {p};
    alone.push_back(model.generate(one, g)[0]);
  }
  for (size_t n = 2; n <= prompts.size(); ++n) {
    Batch b;
    b.input_ids.assign(prompts.begin(), prompts.begin() + static_cast<std::ptrdiff_t>(n));
    const auto together = model.generate(b, g);
    ASSERT_EQ(together.size(), n);
    for (size_t i = 0; i < n; ++i) {
      // The int8 activations' error bound of the test above (2% of the largest logit).
      expect_same_or_parted_at_a_tie(model, together[i], alone[i], 2e-2f,
                                     "batch " + std::to_string(n) + " row " + std::to_string(i));
    }
  }
}

// The folder init-model writes for a block type (config.json beside model.gguf) loads by its
// path as the file does; a folder of several .gguf files and no safetensors asks for one.
TEST(InitModelGgufFolder, LoadsTheFoldersGgufFile) {
  test::TempDir dir;
  init_model(test::model_dir("qwen2-tiny") + "/config.json", dir.path(), 5, DType::q4_0);
  const CausalLM by_file = CausalLM::from_pretrained(dir.file("model.gguf"));
  const CausalLM by_folder = CausalLM::from_pretrained(dir.path());
  EXPECT_EQ(by_folder.dtype(), DType::q4_0);
  Batch b;
  b.input_ids = {{1, 5, 9, 22, 7}};
  EXPECT_EQ(by_folder.logits(b).to_f32_vector(), by_file.logits(b).to_f32_vector());
  std::filesystem::copy_file(dir.file("model.gguf"), dir.file("other.gguf"));
  try {
    CausalLM::from_pretrained(dir.path());
    FAIL() << "a folder of two .gguf files loaded";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("model.gguf, other.gguf"), std::string::npos) << what;
    EXPECT_NE(what.find("name the file"), std::string::npos) << what;
  }
}

// llama.cpp's Q4_K_M / Q5_K_M mixes on a model whose widths are whole super-blocks: each
// matrix in the type llama-quantize would choose (Q6_K for the output and for attn_v / ffn_down
// of layers 0, 3, 6 and 7 of 8), and the K-type kernels against the dequantized weights.
TEST(InitModelGgufMix, KQuantMixesFollowLlamaQuantize) {
  test::TempDir dir;
  nlohmann::json config =
      nlohmann::json::parse(read_text_file(test::model_dir("qwen2-tiny") + "/config.json"));
  config["hidden_size"] = 256;
  config["intermediate_size"] = 512;
  config["num_hidden_layers"] = 8;
  config["num_attention_heads"] = 4;
  config["num_key_value_heads"] = 2;
  config.erase("head_dim");
  const std::string config_path = dir.file("config.json");
  {
    std::ofstream f(config_path);
    f << config.dump();
  }
  for (const std::string mix : {"q4_k_m", "q5_k_m"}) {
    const std::string out = dir.file(mix);
    init_model(config_path, out, 3, mix);
    const GgmlType base = mix == "q4_k_m" ? GgmlType::q4_k : GgmlType::q5_k;
    const GgufFile f = GgufFile::open(out + "/model.gguf");
    const auto type_of = [&](const std::string& name) {
      const GgufTensorInfo* t = f.find_tensor(name);
      EXPECT_NE(t, nullptr) << name;
      return t ? t->type : GgmlType::f32;
    };
    EXPECT_EQ(type_of("output.weight"), GgmlType::q6_k);
    EXPECT_EQ(type_of("token_embd.weight"), base);
    for (int layer = 0; layer < 8; ++layer) {
      const std::string p = "blk." + std::to_string(layer) + ".";
      const bool more = layer == 0 || layer == 3 || layer == 6 || layer == 7;
      EXPECT_EQ(type_of(p + "attn_v.weight"), more ? GgmlType::q6_k : base) << p << mix;
      EXPECT_EQ(type_of(p + "ffn_down.weight"), more ? GgmlType::q6_k : base) << p << mix;
      EXPECT_EQ(type_of(p + "attn_q.weight"), base) << p << mix;
      EXPECT_EQ(type_of(p + "ffn_up.weight"), base) << p << mix;
      EXPECT_EQ(type_of(p + "attn_norm.weight"), GgmlType::f32) << p << mix;
    }
    const CausalLM q = CausalLM::from_pretrained(out + "/model.gguf");
    ModelOptions f32;
    f32.dtype = DType::f32;
    const CausalLM ref = CausalLM::from_pretrained(out + "/model.gguf", f32);
    Batch b;
    b.input_ids = {{1, 5, 9, 22, 7, 3, 100, 4, 8, 15, 16, 23, 42}};
    const auto got = q.logits(b).to_f32_vector(), want = ref.logits(b).to_f32_vector();
    const auto [max_diff, max_abs] = logit_gap(got, want);
    EXPECT_LE(max_diff, 2e-2f * max_abs + 1e-4f) << mix;
  }
  // Widths that are not whole super-blocks fall back as llama-quantize does.
  init_model(test::model_dir("qwen2-tiny") + "/config.json", dir.file("narrow"), 3, "q4_k_m");
  const GgufFile narrow = GgufFile::open(dir.file("narrow") + "/model.gguf");
  EXPECT_EQ(narrow.find_tensor("blk.0.attn_q.weight")->type, GgmlType::q5_0);
  EXPECT_EQ(narrow.find_tensor("blk.0.ffn_down.weight")->type, GgmlType::q5_0);
  EXPECT_EQ(narrow.find_tensor("blk.1.ffn_down.weight")->type, GgmlType::q8_0);  // promoted
  try {
    init_model(config_path, dir.file("bad"), 3, "q3_k_s");
    FAIL() << "an unknown dtype was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q4_k_m"), std::string::npos) << e.what();
  }
}

// --format gguf with a float dtype: the same values the safetensors folder holds (same seed and
// tensor ids), as float GGUF tensors (what llama.cpp's converter writes with --outtype), so the
// two folders give the same logits; the norms are F32 as llama.cpp writes them.
TEST(InitModelGgufFloat, FloatTensorsMatchTheSafetensorsFolder) {
  test::TempDir dir;
  const std::string config = test::model_dir("qwen2-tiny") + "/config.json";
  for (const std::string dtype : {"bf16", "f16", "f32"}) {
    init_model(config, dir.file("st-" + dtype), 5, dtype);
    init_model(config, dir.file("gguf-" + dtype), 5, dtype, InitFormat::gguf);
    const GgufFile f = GgufFile::open(dir.file("gguf-" + dtype) + "/model.gguf");
    const GgmlType want = dtype == "bf16"  ? GgmlType::bf16
                          : dtype == "f16" ? GgmlType::f16
                                           : GgmlType::f32;
    EXPECT_EQ(f.find_tensor("blk.0.attn_q.weight")->type, want) << dtype;
    EXPECT_EQ(f.find_tensor("token_embd.weight")->type, want) << dtype;
    EXPECT_EQ(f.find_tensor("blk.0.attn_norm.weight")->type, GgmlType::f32) << dtype;
    const CausalLM st = CausalLM::from_pretrained(dir.file("st-" + dtype));
    const CausalLM gg = CausalLM::from_pretrained(dir.file("gguf-" + dtype) + "/model.gguf");
    Batch b;
    b.input_ids = {{1, 5, 9, 22, 7, 3, 100, 4, 8, 15, 16, 23, 42}};
    const auto got = gg.logits(b).to_f32_vector(), want_logits = st.logits(b).to_f32_vector();
    ASSERT_EQ(got.size(), want_logits.size());
    const auto [max_diff, max_abs] = logit_gap(got, want_logits);
    // f32: the same arithmetic. bf16/f16: the folders run with different activation types or
    // norm weights (F32 in GGUF), so 16-bit rounding apart; a tensor read wrongly would differ
    // by the logits' whole size.
    EXPECT_LE(max_diff, (dtype == "f32" ? 1e-5f : 1e-2f) * max_abs + 1e-6f) << dtype;
  }
}

// init-model's GGUF of `text` (a config) and its safetensors folder of the same seed: the same
// logits (f32), and Q8_0 blocks within their rounding.
void expect_gguf_is_the_folder(test::TempDir& dir, const std::string& name,
                               const std::string& text) {
  const std::string config = dir.file(name + ".json");
  std::ofstream(config) << text;
  init_model(config, dir.file(name + "-st"), 5, "f32");
  init_model(config, dir.file(name + "-gguf"), 5, "f32", InitFormat::gguf);
  init_model(config, dir.file(name + "-q8"), 5, "q8_0");
  const CausalLM st = CausalLM::from_pretrained(dir.file(name + "-st"));
  const CausalLM gg = CausalLM::from_pretrained(dir.file(name + "-gguf") + "/model.gguf");
  EXPECT_EQ(gg.config().architecture, st.config().architecture);
  Batch b;
  b.input_ids = {{2, 5, 9, 22, 7, 3, 100, 4, 8, 15, 16, 23, 42}};
  const auto got = gg.logits(b).to_f32_vector(), want = st.logits(b).to_f32_vector();
  ASSERT_EQ(got.size(), want.size());
  const auto [max_diff, max_abs] = logit_gap(got, want);
  EXPECT_LE(max_diff, 1e-5f * max_abs + 1e-6f);
  EXPECT_GT(max_abs, 0.1f);
  const CausalLM q8 = CausalLM::from_pretrained(dir.file(name + "-q8") + "/model.gguf");
  const auto q = q8.logits(b).to_f32_vector();
  EXPECT_LE(logit_gap(q, want).max_diff, 0.1f * max_abs);  // Q8_0 rounding, not another model
}

// The Gemma family as GGUF (llama.cpp's keys and names, norms as 1 + w): the same logits as the
// safetensors folder of the same seed, for Gemma 2 (softcaps, windows on alternate layers) and
// Gemma 3 (a pattern of 3, its sliding layers' own RoPE base, a linear-scaled full layer);
// Q8_0 blocks load too; what GGUF cannot say is refused.
TEST(InitModelGgufGemma, SameLogitsAsTheSafetensorsFolder) {
  test::TempDir dir;
  const std::string common = R"("vocab_size": 300, "hidden_size": 64, "intermediate_size": 96,
      "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2,
      "head_dim": 32, "query_pre_attn_scalar": 32, "sliding_window": 5, "bos_token_id": 2,
      "eos_token_id": 1, "pad_token_id": 0)";
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"gemma2", R"({"architectures": ["Gemma2ForCausalLM"], "attn_logit_softcapping": 3.0,
          "final_logit_softcapping": 6.0, )" +
                     common + "}"},
      {"gemma3", R"({"architectures": ["Gemma3ForCausalLM"], "sliding_window_pattern": 3,
          "rope_theta": 50000.0, "rope_local_base_freq": 2000.0,
          "rope_scaling": {"rope_type": "linear", "factor": 2.0}, )" +
                     common + "}"},
  };
  for (const auto& [name, text] : configs) {
    SCOPED_TRACE(name);
    expect_gguf_is_the_folder(dir, name, text);
  }
  // query_pre_attn_scalar other than llama.cpp's rule (the safetensors fixture's 24, head_dim 32).
  try {
    init_model(test::data_dir() + "/extra/gemma3-text-tiny/model/config.json", dir.file("no"), 1,
               "q8_0");
    ADD_FAILURE() << "a GGUF without the model's attention scale was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("query_pre_attn_scalar"), std::string::npos) << e.what();
  }
}

// Llama and SmolLM3 (q/k rows permuted as llama.cpp's converter permutes them; SmolLM3's every
// 4th layer NoPE) and OLMo 2 (no input norms, whole-projection q/k norms, output norms) as
// GGUF: the same logits as the safetensors folder of the same seed; a SmolLM3 whose NoPE layers
// llama.cpp's rule cannot say is refused.
TEST(InitModelGgufSmolLM3AndOlmo2, SameLogitsAsTheSafetensorsFolder) {
  test::TempDir dir;
  const std::string common = R"("vocab_size": 300, "hidden_size": 64, "intermediate_size": 96,
      "num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2,
      "rope_theta": 10000.0, "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
      "tie_word_embeddings": false)";
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"llama", R"({"architectures": ["LlamaForCausalLM"], )" + common + "}"},
      {"smollm3",
       R"({"architectures": ["SmolLM3ForCausalLM"], "no_rope_layer_interval": 4, )" + common + "}"},
      {"olmo2", R"({"architectures": ["Olmo2ForCausalLM"], )" + common + "}"},
  };
  for (const auto& [name, text] : configs) {
    SCOPED_TRACE(name);
    expect_gguf_is_the_folder(dir, name, text);
  }
  const std::string odd = dir.file("smollm3-odd.json");
  std::ofstream(odd) << R"({"architectures": ["SmolLM3ForCausalLM"], "no_rope_layers": [1, 0, 1,
      1, 1, 1, 1, 0], )" + common +
                            "}";
  try {
    init_model(odd, dir.file("no"), 1, "q8_0");
    ADD_FAILURE() << "a GGUF with NoPE layers llama.cpp would not find was written";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("NoPE"), std::string::npos) << e.what();
  }
}

// The MoE architectures as GGUF (llama.cpp's expert keys, each layer's experts stacked,
// Mixtral as llama): the same logits as the safetensors folder of the same seed; what llama.cpp
// cannot run (dense layers between sparse ones, another renormalisation) is refused.
TEST(InitModelGgufMoe, SameLogitsAsTheSafetensorsFolder) {
  test::TempDir dir;
  const std::string common = R"("vocab_size": 300, "hidden_size": 64, "intermediate_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "rope_theta": 10000.0, "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
      "tie_word_embeddings": false, "num_experts_per_tok": 2)";
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"qwen3moe", R"({"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4,
          "moe_intermediate_size": 32, "norm_topk_prob": true, "head_dim": 16, )" +
                       common + "}"},
      {"qwen2moe", R"({"architectures": ["Qwen2MoeForCausalLM"], "num_experts": 4,
          "moe_intermediate_size": 32, "shared_expert_intermediate_size": 64, )" +
                       common + "}"},
      {"mixtral",
       R"({"architectures": ["MixtralForCausalLM"], "num_local_experts": 4, )" + common + "}"},
      {"olmoe", R"({"architectures": ["OlmoeForCausalLM"], "num_experts": 4, )" + common + "}"},
  };
  for (const auto& [name, text] : configs) {
    SCOPED_TRACE(name);
    expect_gguf_is_the_folder(dir, name, text);
  }
  const auto refused = [&](const std::string& name, const std::string& text) {
    const std::string config = dir.file(name + ".json");
    std::ofstream(config) << text;
    try {
      init_model(config, dir.file(name), 1, "q8_0");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("written");
  };
  EXPECT_NE(refused("dense", R"({"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4,
                "moe_intermediate_size": 32, "norm_topk_prob": true, "mlp_only_layers": [1],
                )" + common + "}")
                .find("dense layers"),
            std::string::npos);
  EXPECT_NE(refused("topk", R"({"architectures": ["Qwen3MoeForCausalLM"], "num_experts": 4,
                "moe_intermediate_size": 32, "norm_topk_prob": false, )" +
                                common + "}")
                .find("norm_topk_prob"),
            std::string::npos);
}

// Granite as llama.cpp's converter writes it (granite: q/k permuted, the four multipliers as
// embedding_scale, residual_scale, attention.scale, logit_scale; granitemoe: the folder's
// stacks split into ffn_{gate,up}_exps and ffn_{gate,up}_shexp): the same logits as the
// safetensors folder of the same seed.
TEST(InitModelGgufGranite, SameLogitsAsTheSafetensorsFolder) {
  test::TempDir dir;
  const std::string common = R"("vocab_size": 300, "hidden_size": 64, "intermediate_size": 64,
      "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
      "rope_theta": 10000.0, "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
      "tie_word_embeddings": false, "embedding_multiplier": 12.0, "attention_multiplier": 0.2,
      "residual_multiplier": 0.22, "logits_scaling": 8.0, "initializer_range": 0.1)";
  const std::vector<std::pair<std::string, std::string>> configs = {
      {"granite", R"({"architectures": ["GraniteForCausalLM"], )" + common + "}"},
      {"granitemoeshared", R"({"architectures": ["GraniteMoeSharedForCausalLM"],
          "num_local_experts": 4, "num_experts_per_tok": 2, "shared_intermediate_size": 32, )" +
                               common + "}"},
  };
  for (const auto& [name, text] : configs) {
    SCOPED_TRACE(name);
    expect_gguf_is_the_folder(dir, name, text);
  }
}

INSTANTIATE_TEST_SUITE_P(Types, InitModelGguf,
                         ::testing::Values(DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0,
                                           DType::q5_1),
                         [](const auto& p) { return std::string(dtype_name(p.param)); });

}  // namespace
}  // namespace anvil
