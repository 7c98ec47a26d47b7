// `anvil bench`'s accounting: the bytes a decode step reads (weights, and the KV cache's keys and
// values up to each step's position) and the floors and shares derived from them.
#include <gtest/gtest.h>

#include "anvil/error.h"
#include "anvil/model.h"
#include "generate/bench.h"
#include "generate/kv_cache.h"
#include "models/decoder.h"
#include "test_data.h"

namespace anvil {
namespace {

TEST(Bench, CountsTheKvCacheBytesEachStepReads) {
  const CausalLM model = CausalLM::from_pretrained(test::model_dir("qwen3-tiny"));
  const Decoder& dec = model.decoder();
  const ModelConfig& c = dec.config();
  BenchOptions o;
  o.batch = 2;
  o.prompt_len = 5;
  o.gen_len = 3;
  o.repeats = 1;
  const BenchResult r = run_bench(model, o);

  EXPECT_EQ(r.weight_bytes, dec.decode_weight_bytes());
  EXPECT_FALSE(r.decode_steps_queued);  // the CPU takes one step at a time
  // Per position: keys and values of every layer, kv head and row, in the cache's dtype. The
  // three steps attend to 6, 7 and 8 positions.
  const DType cache_dtype = dec.new_cache(1, 1).keys.at(0).dtype();
  const int64_t per_position = 2 * c.num_hidden_layers * o.batch * c.num_key_value_heads *
                               c.head_dim * static_cast<int64_t>(dtype_size(cache_dtype));
  EXPECT_EQ(r.kv_bytes_per_step, per_position * (6 + 7 + 8) / 3);

  // The floors: the batch's tokens per step at the measured bandwidth over the bytes.
  ASSERT_GT(r.membw_bytes_per_s, 0);
  const double w = static_cast<double>(r.weight_bytes), kv = static_cast<double>(per_position * 7);
  EXPECT_NEAR(r.decode_floor_tokens_per_s, 2 * r.membw_bytes_per_s / w,
              1e-9 * r.decode_floor_tokens_per_s);
  EXPECT_NEAR(r.decode_floor_with_kv_tokens_per_s, 2 * r.membw_bytes_per_s / (w + kv),
              1e-9 * r.decode_floor_with_kv_tokens_per_s);
  // One run: its share of each floor differs by the bytes' ratio alone.
  ASSERT_GT(r.decode_fraction_of_floor, 0);
  EXPECT_NEAR(r.decode_fraction_of_floor_with_kv / r.decode_fraction_of_floor, (w + kv) / w, 1e-9);
}

TEST(Bench, PeakMemoryLeavesOutTheBandwidthProbe) {
  // The CPU's bandwidth probe reads a 512 MiB buffer, resident through the runs; a tiny model's
  // peak is far below it, and what is reported is the model's (it had read 971 MB for a 96 MB
  // model).
  const CausalLM model = CausalLM::from_pretrained(test::model_dir("qwen3-tiny"));
  BenchOptions o;
  o.prompt_len = 4;
  o.gen_len = 2;
  o.repeats = 1;
  const BenchResult r = run_bench(model, o);
  EXPECT_GT(r.peak_rss_bytes, 0);
  EXPECT_LT(r.peak_rss_bytes, int64_t{256} << 20);
}

TEST(Bench, RejectsEmptyRuns) {
  const CausalLM model = CausalLM::from_pretrained(test::model_dir("qwen3-tiny"));
  for (int64_t BenchOptions::*field :
       {&BenchOptions::batch, &BenchOptions::prompt_len, &BenchOptions::gen_len}) {
    BenchOptions o;
    o.*field = 0;
    try {
      run_bench(model, o);
      ADD_FAILURE() << "a zero count was accepted";
    } catch (const Error& e) {
      EXPECT_STREQ(e.what(),
                   "bench: batch, prompt length, generation length and repeats must be positive");
    }
  }
  BenchOptions o;
  o.repeats = 0;
  EXPECT_THROW(run_bench(model, o), Error);
}

}  // namespace
}  // namespace anvil
