// A device's decode steps against the CPU's, step by step: the prefill, then one-token steps
// (recorded once and replayed as a graph where the backend has graphs), for one prompt and for a
// left-padded batch. float32 logits must agree within the parity tolerance at every step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include "anvil/backend.h"
#include "anvil/error.h"
#include "anvil/model.h"
#include "backends/cpu/cpu_isa.h"
#include "expect_error.h"
#include "generate/generate.h"
#include "generate/prompt_cache.h"
#include "generate/step_chain.h"
#include "models/decoder.h"
#include "models/init_model.h"
#include "ops/ops.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

constexpr float kTolerance = 1e-4f;

class DeviceDecode : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {
 protected:
  void SetUp() override {
    device_ = Device::parse(test::device_name(std::get<1>(GetParam())));
    if (const std::string why = test::unavailable_reason(device_.type); !why.empty()) {
      GTEST_SKIP() << device_type_name(device_.type) << " tests skipped: " << why;
    }
  }
  CausalLM load(const std::string& device) const {
    ModelOptions o;
    o.dtype = DType::f32;
    o.device_map = device;
    return CausalLM::from_pretrained(test::model_dir(std::get<0>(GetParam())), o);
  }
  Device device_;
};

float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float m = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// The golden's left-padded batch.
Batch padded_batch(const SafetensorsFile& golden) {
  Batch b;
  b.input_ids = test::id_rows(golden, "input_ids_b");
  b.attention_mask = test::id_rows(golden, "attention_mask_b");
  return b;
}

void decode_and_compare(const Decoder& cpu, const Decoder& dev, const Batch& batch, int steps) {
  const auto rows = static_cast<int64_t>(batch.input_ids.size());
  const auto len = static_cast<int64_t>(batch.input_ids[0].size());
  std::vector<std::vector<int64_t>> mask = checked_mask(batch);
  StepInput step;
  step.batch = rows;
  step.seq = len;
  for (int64_t r = 0; r < rows; ++r) {
    step.ids.insert(step.ids.end(), batch.input_ids[r].begin(), batch.input_ids[r].end());
    const auto pos = positions_from_mask(mask[r]);
    step.positions.insert(step.positions.end(), pos.begin(), pos.end());
    for (int64_t m : mask[r]) step.key_mask.push_back(static_cast<int32_t>(m));
  }
  KvCache cpu_cache = cpu.new_cache(rows, len + steps);
  KvCache dev_cache = dev.new_cache(rows, len + steps);
  for (int t = 0; t < steps; ++t) {
    const Tensor want_t = cpu.forward(step, cpu_cache);
    const std::vector<float> want = want_t.to_f32_vector();
    const std::vector<float> got = dev.forward(step, dev_cache).to_f32_vector();
    ASSERT_LE(max_diff(got, want), kTolerance) << "step " << t;
    // Both continue with the CPU's greedy choice, so a near-tie cannot make them diverge.
    const std::vector<int64_t> next = greedy_tokens(want_t);
    step.seq = 1;
    step.ids = next;
    step.positions.assign(static_cast<size_t>(rows), 0);
    step.key_mask.clear();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t real = 0;
      for (int64_t m : mask[r]) real += m;
      step.positions[r] = static_cast<int32_t>(real);
      mask[r].push_back(1);
      for (int64_t m : mask[r]) step.key_mask.push_back(static_cast<int32_t>(m));
    }
  }
}

// On CUDA every fixture's one-token steps are recorded as graphs, the mixtures of experts' too
// (their picks made on the device) for up to ops::kMoeDeviceMaxRows rows; more rows of a MoE
// take the host's picks, one step at a time.
TEST_P(DeviceDecode, CudaRecordsOneTokenSteps) {
  if (device_.type != DeviceType::cuda) GTEST_SKIP() << "graphs are checked on cuda";
  const CausalLM dev = load(test::device_name(std::get<1>(GetParam())));
  const Decoder& d = dev.decoder();
  const bool moe = d.config().num_experts > 0;
  EXPECT_TRUE(d.queues_steps(1));
  EXPECT_TRUE(d.queues_steps(ops::kMoeDeviceMaxRows));
  EXPECT_EQ(d.queues_steps(ops::kMoeDeviceMaxRows + 1), !moe);
  EXPECT_EQ(d.moe_on_device(1), moe);
}

// The last hidden states (CausalLM::hidden_states: the final norm of every position, no head)
// of the left-padded batch: the CPU's at every real position.
TEST_P(DeviceDecode, HiddenStatesMatchTheCpu) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM cpu = load("cpu"), dev = load(test::device_name(std::get<1>(GetParam())));
  const Batch b = padded_batch(golden);
  const std::vector<float> want = cpu.hidden_states(b).to_f32_vector();
  const std::vector<float> got = dev.hidden_states(b).to_f32_vector();
  ASSERT_EQ(got.size(), want.size());
  const size_t seq = b.input_ids[0].size(), hidden = want.size() / (b.input_ids.size() * seq);
  for (size_t r = 0; r < b.input_ids.size(); ++r) {
    for (size_t t = 0; t < seq; ++t) {
      if (!b.attention_mask[r][t]) continue;
      for (size_t i = 0; i < hidden; ++i) {
        const size_t at = (r * seq + t) * hidden + i;
        ASSERT_NEAR(got[at], want[at], kTolerance) << "row " << r << " position " << t;
      }
    }
  }
}

TEST_P(DeviceDecode, OnePromptStepByStep) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM cpu = load("cpu"), dev = load(test::device_name(std::get<1>(GetParam())));
  Batch b;
  b.input_ids = test::id_rows(golden, "input_ids_a");
  decode_and_compare(cpu.decoder(), dev.decoder(), b, 12);
}

TEST_P(DeviceDecode, LeftPaddedBatchStepByStep) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM cpu = load("cpu"), dev = load(test::device_name(std::get<1>(GetParam())));
  const Batch b = padded_batch(golden);
  decode_and_compare(cpu.decoder(), dev.decoder(), b, 12);
}

// The same cache decoded twice from a fresh prefill: a recorded step must not keep stale state.
TEST_P(DeviceDecode, SecondGenerationOnSameModelMatches) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM dev = load(test::device_name(std::get<1>(GetParam())));
  Batch b;
  b.input_ids = test::id_rows(golden, "input_ids_a");
  GenerateOptions o;
  o.max_new_tokens = 16;
  o.do_sample = false;
  EXPECT_EQ(dev.generate(b, o), test::id_rows(golden, "gen_a"));
  EXPECT_EQ(dev.generate(b, o), test::id_rows(golden, "gen_a"));
}

// A prompt cache on a device: the second call replays the steps recorded on the first call's
// cache and continues as one generate does; a prompt that parts from the cached tokens runs
// from their common prefix and gives what the device gives without the cache.
TEST_P(DeviceDecode, PromptCacheCallsContinueAsOneGenerate) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM dev = load(test::device_name(std::get<1>(GetParam())));
  const auto a = test::id_rows(golden, "input_ids_a")[0];
  const auto whole = test::id_rows(golden, "gen_a")[0];
  ASSERT_EQ(whole.size(), a.size() + 16);
  // Longrope runs every prompt whole (PromptCache), and still continues exactly.
  const bool reuses = reusable_prefix(dev.config(), a, a) > 0;
  PromptCache cache;
  GenerateOptions o;
  o.do_sample = false;
  o.max_new_tokens = 6;
  o.prompt_cache = &cache;
  const auto out1 = dev.generate(a, o);
  o.max_new_tokens = 10;
  EXPECT_EQ(dev.generate(out1, o), whole);
  EXPECT_EQ(cache.reused(), reuses ? static_cast<int64_t>(out1.size()) - 1 : 0);
  std::vector<int64_t> parted(whole.begin(), whole.begin() + 10);
  parted.insert(parted.end(), a.begin(), a.end());
  GenerateOptions fresh = o;
  fresh.prompt_cache = nullptr;
  EXPECT_EQ(dev.generate(parted, o), dev.generate(parted, fresh));
  EXPECT_EQ(cache.reused(), reuses ? 10 : 0);
}

// Repeated rows take one prompt step on a device too (their keys, values and logits copied
// there): every copy continues as transformers continues the prompt.
TEST_P(DeviceDecode, RepeatedRowsShareOnePromptStep) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM dev = load(test::device_name(std::get<1>(GetParam())));
  Batch b;
  const auto a = test::id_rows(golden, "input_ids_a")[0];
  b.input_ids = {a, a, a};
  GenerateOptions o;
  o.max_new_tokens = 16;
  o.do_sample = false;
  const auto want = test::id_rows(golden, "gen_a")[0];
  EXPECT_EQ(dev.generate(b, o), (std::vector<std::vector<int64_t>>{want, want, want}));
}

// Prompt lookup, an assistant model and the model's own first layer on a device: steps of
// several tokens over the cache, the rejected drafts' keys dropped, give transformers' greedy
// tokens (n-grams of one, so that drafts come often).
TEST_P(DeviceDecode, PromptLookupGivesTheGreedyTokens) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM dev = load(test::device_name(std::get<1>(GetParam())));
  const auto a = test::id_rows(golden, "input_ids_a")[0];
  GenerateOptions o;
  o.max_new_tokens = 16;
  o.do_sample = false;
  o.prompt_lookup_num_tokens = 4;
  o.max_matching_ngram_size = 1;
  if (dev.config().recompute_cache_past) {
    test::expect_error([&] { dev.generate(a, o); }, "prompt_lookup_num_tokens: not with");
    return;
  }
  EXPECT_EQ(dev.generate(a, o), test::id_rows(golden, "gen_a")[0]);
  // The model as its own assistant: drafts of four made by one-token steps on the device.
  GenerateOptions assisted;
  assisted.max_new_tokens = 16;
  assisted.do_sample = false;
  assisted.assistant_model = &dev;
  assisted.num_assistant_tokens = 4;
  assisted.assistant_confidence_threshold = 0.0f;
  EXPECT_EQ(dev.generate(a, assisted), test::id_rows(golden, "gen_a")[0]);
  // Its own first layer drafting (assistant_early_exit): a second decoder over the device's
  // weights, with its own cache and recorded steps.
  GenerateOptions early = assisted;
  early.assistant_model = nullptr;
  early.assistant_early_exit = 1;
  EXPECT_EQ(dev.generate(a, early), test::id_rows(golden, "gen_a")[0]);
}

// Beam search on a device: the prompt's cache copied to every beam, rows gathered on the device
// as the beams move, recorded steps replayed on the gathered cache: the CPU's rows.
TEST_P(DeviceDecode, BeamSearchMatchesTheCpu) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM cpu = load("cpu"), dev = load(test::device_name(std::get<1>(GetParam())));
  const Batch b = padded_batch(golden);
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.do_sample = false;
  o.pad_token_id = 0;
  o.num_beams = 3;
  o.num_return_sequences = 2;
  o.eos_token_ids.emplace();  // none (emplace: GCC 12 misreads an assigned empty vector)
  const auto free_run = cpu.generate(b, o);
  EXPECT_EQ(dev.generate(b, o), free_run);
  o.eos_token_ids->push_back(free_run[0][b.input_ids[0].size() + 2]);
  EXPECT_EQ(dev.generate(b, o), cpu.generate(b, o));
}

// Greedy decoding on a device queues each step before the host has read the previous one's
// tokens (step_chain.h). Stops must still come exactly where the CPU stops: at an eos reached
// by one row of a batch while the other goes on (then by both), at max_new_tokens, and where a
// streamer says stop; and a generation that stopped with a step queued ahead must leave the
// model ready for the next. The eos ids are tokens the fixture's own greedy run produces.
TEST_P(DeviceDecode, GreedyStopsWhereTheCpuStops) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM cpu = load("cpu"), dev = load(test::device_name(std::get<1>(GetParam())));
  const Batch b = padded_batch(golden);
  // Greedy, 12 new tokens, stopping on `eos` (none when negative).
  const auto options = [](int64_t eos) {
    GenerateOptions o;
    o.max_new_tokens = 12;
    o.do_sample = false;
    o.pad_token_id = 0;
    o.eos_token_ids.emplace();
    if (eos >= 0) o.eos_token_ids->push_back(eos);
    return o;
  };
  const auto free_run = cpu.generate(b, options(-1));
  ASSERT_EQ(free_run, dev.generate(b, options(-1)));
  const auto prompt = static_cast<size_t>(b.input_ids[0].size());
  ASSERT_GE(free_run[0].size(), prompt + 8);
  for (const size_t at : {size_t{1}, size_t{4}}) {
    const GenerateOptions o = options(free_run[0][prompt + at]);
    EXPECT_EQ(dev.generate(b, o), cpu.generate(b, o)) << "eos = the token at " << at;
  }
  GenerateOptions streamed = options(-1);
  int calls = 0;
  streamed.streamer = [&](const std::vector<int64_t>&) { return ++calls < 3; };
  const auto want_streamed = cpu.generate(b, streamed);
  calls = 0;
  EXPECT_EQ(dev.generate(b, streamed), want_streamed);
  EXPECT_EQ(want_streamed[0].size(), prompt + 3);
  EXPECT_EQ(dev.generate(b, options(-1)), free_run);  // after stops with steps queued ahead
}

// The chain's picks are the greedy tokens, a step follows the one queued before it, and steps
// dropped after a stop leave the cache as it was before them.
TEST_P(DeviceDecode, GreedyChainFollowsAndDrops) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM dev = load(test::device_name(std::get<1>(GetParam())));
  const Decoder& d = dev.decoder();
  if (!StepChain::available(d, 1, false)) GTEST_SKIP() << "this device takes one step at a time";
  const auto prompt = test::id_rows(golden, "input_ids_a")[0];
  const auto want = test::id_rows(golden, "gen_a")[0];
  const auto len = static_cast<int64_t>(prompt.size());
  KvCache cache = d.new_cache(1, len + 8);
  StepInput step;
  step.batch = 1;
  step.seq = len;
  step.ids = prompt;
  for (int64_t i = 0; i < len; ++i) step.positions.push_back(static_cast<int32_t>(i));
  step.key_mask.assign(static_cast<size_t>(len), 1);
  std::vector<int64_t> first = greedy_tokens(d.forward(step, cache));
  ASSERT_EQ(first[0], want[static_cast<size_t>(len)]);
  StepChain chain(d, 1);
  step.seq = 1;
  step.ids = first;
  for (int64_t g = 0; g < 4; ++g) {
    step.positions = {static_cast<int32_t>(len + g)};
    step.key_mask.assign(static_cast<size_t>(len + g + 1), 1);
    chain.queue(step, cache, g > 0);
  }
  EXPECT_EQ(cache.length, len + 4);
  for (int64_t g = 0; g < 2; ++g) {
    EXPECT_EQ(chain.take().picks[0], want[static_cast<size_t>(len + 1 + g)]) << "step " << g;
  }
  chain.drop(cache);
  EXPECT_EQ(chain.pending(), 0u);
  EXPECT_EQ(cache.length, len + 2);
}

// generate() with every step's scores edited and picked on the host from the whole rows
// (ANVIL_SAMPLE_ON_HOST=1), the definition the device-side paths are compared with.
std::vector<std::vector<int64_t>> generate_from_whole_rows(const CausalLM& m, const Batch& b,
                                                           const GenerateOptions& o) {
  setenv("ANVIL_SAMPLE_ON_HOST", "1", 1);
  auto out = m.generate(b, o);
  unsetenv("ANVIL_SAMPLE_ON_HOST");
  return out;
}

// Sampling with top-k from each row's candidates on the device (ops::top_k, the default where a
// device has the kernel) gives the same tokens, draw for draw, as the whole rows on the host
// (ANVIL_SAMPLE_ON_HOST=1).
TEST_P(DeviceDecode, TopKSamplingFromCandidatesMatchesWholeRows) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM dev = load(test::device_name(std::get<1>(GetParam())));
  if (!supports(ops::kTopK, dev.device().type, DType::f32, DType::f32)) {
    GTEST_SKIP() << "no top_k kernel on " << std::get<1>(GetParam()) << ": sampling reads rows";
  }
  Batch b;
  b.input_ids = test::id_rows(golden, "input_ids_a");
  GenerateOptions o;
  o.max_new_tokens = 24;
  o.do_sample = true;
  o.temperature = 0.7f;
  o.top_k = 20;
  o.top_p = 0.9f;
  o.seed = 7;
  const auto want = generate_from_whole_rows(dev, b, o);
  EXPECT_EQ(dev.generate(b, o), want);
  // Where sampled steps are queued ahead (step_chain.h), a step taken again from its whole rows
  // (as one with an undecided row is): the step queued ahead of it dropped, its draws reused.
  setenv("ANVIL_CHAIN_RETAKE_EVERY", "3", 1);
  EXPECT_EQ(dev.generate(b, o), want) << "every third step taken again";
  unsetenv("ANVIL_CHAIN_RETAKE_EVERY");
  // And a left-padded batch, with and without steps taken again.
  Batch padded;
  padded.input_ids = test::id_rows(golden, "input_ids_b");
  padded.attention_mask = test::id_rows(golden, "attention_mask_b");
  const auto want_padded = generate_from_whole_rows(dev, padded, o);
  EXPECT_EQ(dev.generate(padded, o), want_padded);
  setenv("ANVIL_CHAIN_RETAKE_EVERY", "2", 1);
  EXPECT_EQ(dev.generate(padded, o), want_padded) << "every second step taken again";
  unsetenv("ANVIL_CHAIN_RETAKE_EVERY");
}

// A repetition penalty applied on the device (ops::repetition_penalty, where a device has the
// kernel) before its argmax or its top-k candidates gives the same tokens, draw for draw, as
// the whole rows penalised on the host (ANVIL_SAMPLE_ON_HOST=1): greedy and sampling, a
// penalty above 1 and one below, the first steps under min_new_tokens on the host either way;
// one prompt, then a left-padded batch (rows with distinct context lists of different lengths).
TEST_P(DeviceDecode, RepetitionPenaltyOnTheDeviceMatchesWholeRows) {
  const auto golden = SafetensorsFile::open(test::golden_path(std::get<0>(GetParam())));
  const CausalLM dev = load(test::device_name(std::get<1>(GetParam())));
  if (!supports(ops::kRepetitionPenalty, dev.device().type, DType::f32, DType::f32)) {
    GTEST_SKIP() << "no repetition_penalty kernel on " << std::get<1>(GetParam())
                 << ": penalised steps read rows";
  }
  Batch one, padded;
  one.input_ids = test::id_rows(golden, "input_ids_a");
  padded.input_ids = test::id_rows(golden, "input_ids_b");
  padded.attention_mask = test::id_rows(golden, "attention_mask_b");
  for (const Batch* batch : {&one, &padded}) {
    const Batch& b = *batch;
    for (bool sample : {false, true}) {
      if (sample && !supports(ops::kTopK, dev.device().type, DType::f32, DType::f32)) continue;
      for (float penalty : {1.3f, 0.7f}) {
        GenerateOptions o;
        o.max_new_tokens = 20;
        o.min_new_tokens = 3;
        o.repetition_penalty = penalty;
        if (sample) {
          o.do_sample = true;
          o.temperature = 0.8f;
          o.top_k = 20;
          o.seed = 11;
        }
        EXPECT_EQ(dev.generate(b, o), generate_from_whole_rows(dev, b, o))
            << (sample ? "sampling" : "greedy") << " penalty " << penalty << " rows "
            << b.input_ids.size();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Fixtures, DeviceDecode,
    ::testing::Combine(
        ::testing::Values("qwen3-tiny", "llama-tiny", "qwen2-tiny", "extra/qwen2-yarn-tiny",
                          "extra/mistral-window-tiny", "extra/phi3-longrope-window-tiny",
                          "extra/phi3-partial-tiny", "extra/qwen2-window-layers-tiny",
                          "extra/gemma-tiny", "extra/gemma3-text-tiny", "extra/smollm3-window-tiny",
                          "extra/olmo2-tiny", "extra/qwen3-moe-tiny", "extra/qwen2-moe-tiny",
                          "extra/mixtral-tiny", "extra/olmoe-tiny", "extra/granite-tiny",
                          "extra/granitemoeshared-tiny"),
        ::testing::Values("cuda", "opencl")),
    [](const auto& param_info) {
      std::string n = std::get<0>(param_info.param) + "_" + std::get<1>(param_info.param);
      for (char& ch : n) {
        if (ch == '-' || ch == '/') ch = '_';
      }
      return n;
    });

}  // namespace
}  // namespace anvil

namespace anvil {
namespace {

// Whether `dev` ("cuda", "opencl") has a usable device here; prints the skip where not.
bool device_here(const char* dev) {
  const Device d = Device::parse(test::device_name(dev));
  bool available = false;
  for (const auto& r : report_backends()) available |= r.type == d.type && r.available;
  if (!available) std::printf("[ skipped ] %s: no %s device here\n", dev, dev);
  return available;
}

// A quantized GGUF on a device that has no kernels for its block types is dequantized at load
// (bf16 where the device reads bf16) and gives the CPU's logits for the same dequantized weights.
TEST(DeviceGguf, QuantizedCheckpointIsDequantizedAtLoad) {
  for (const char* dev : {"cuda", "opencl"}) {
    if (!device_here(dev)) continue;
    const Device d = Device::parse(test::device_name(dev));
    test::TempDir dir;
    init_model(test::model_dir("qwen2-tiny") + "/config.json", dir.path(), 7, DType::q8_0);
    ModelOptions on_device;
    on_device.device_map = test::device_name(dev);
    const CausalLM model = CausalLM::from_pretrained(dir.file("model.gguf"), on_device);
    EXPECT_FALSE(is_quantized(model.dtype())) << dev;
    ModelOptions cpu;
    cpu.dtype = model.dtype();
    const CausalLM reference = CausalLM::from_pretrained(dir.file("model.gguf"), cpu);
    Batch b;
    b.input_ids = {{1, 5, 9, 14, 3, 7}};
    const auto got = model.logits(b).to_f32_vector(), want = reference.logits(b).to_f32_vector();
    ASSERT_EQ(got.size(), want.size());
    float diff = 0;
    for (size_t i = 0; i < got.size(); ++i) diff = std::max(diff, std::fabs(got[i] - want[i]));
    // bf16 activations on a GPU round where the CPU keeps float32; a CPU with AVX512_BF16 rounds
    // the activations of bf16 products where the OpenCL device keeps float32.
    const bool rounded = model.dtype() == DType::bf16 &&
                         (d.type == DeviceType::cuda || cpu::isa() >= cpu::Isa::avx512bf16);
    EXPECT_LE(diff, rounded ? 0.1f : 1e-4f) << dev;
  }
}

// A fixture's float32 model on device `dev` ("cuda", "opencl").
CausalLM load_f32_on(const std::string& name, const char* dev) {
  ModelOptions o;
  o.dtype = DType::f32;
  o.device_map = test::device_name(dev);
  return CausalLM::from_pretrained(test::model_dir(name), o);
}

// Dynamic NTK and longrope RoPE on a device: the frequencies rewritten in place, queued behind
// the steps already queued, so that recorded (replayed) steps read each step's own. A greedy
// generation past the original context (every step past it grows dynamic's base; longrope
// switches to its long factors and recomputes the sequence) gives transformers' tokens.
TEST(DeviceDynamicRope, FrequenciesFollowEveryReplayedStep) {
  for (const char* dev : {"cuda", "opencl"}) {
    if (!device_here(dev)) continue;
    for (const std::string name : {"extra/llama-dynamic-tiny", "extra/phi3-longrope-window-tiny"}) {
      const auto golden = SafetensorsFile::open(test::golden_path(name));
      const CausalLM model = load_f32_on(name, dev);
      Batch a;
      a.input_ids = test::id_rows(golden, "input_ids_a");
      EXPECT_EQ(model.generate(a, test::greedy_exactly(40)), test::id_rows(golden, "gen_long_a"))
          << name << " on " << dev;
    }
  }
}

// Gemma 2 on a device: transformers' 40 greedy tokens where the device's attention takes logit
// softcapping (and its final logits' softcap), else an error that names what is missing,
// never uncapped scores.
TEST(DeviceGemma2, SoftcappedOrSaysSo) {
  const std::string name = "extra/gemma2-tiny";
  for (const char* dev : {"cuda", "opencl"}) {
    if (!device_here(dev)) continue;
    const auto golden = SafetensorsFile::open(test::golden_path(name));
    const CausalLM model = load_f32_on(name, dev);
    Batch a;
    a.input_ids = test::id_rows(golden, "input_ids_a");
    const Device d = model.device();
    if (supports(ops::kAttentionSoftcap, d.type, DType::f32, DType::f32) &&
        supports(ops::kSoftcap, d.type, DType::f32, DType::f32)) {
      EXPECT_EQ(model.generate(a, test::greedy_exactly(40)), test::id_rows(golden, "gen_long_a"))
          << dev;
      continue;
    }
    try {
      model.generate(a, test::greedy_exactly(40));
      ADD_FAILURE() << dev << ": generated without softcapping";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("softcapping"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace anvil
