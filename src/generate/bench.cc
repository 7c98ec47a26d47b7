// Timings use a steady clock around whole steps; the decoder's work is synchronous on the CPU.
// Prompts are random ids (the speed of a step does not depend on which ids they are).
#include "generate/bench.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "anvil/error.h"
#include "core/thread_pool.h"
#include "models/decoder.h"

namespace anvil {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int64_t peak_rss() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

double measure_read_bandwidth(int64_t bytes) {
  const int64_t n = bytes / static_cast<int64_t>(sizeof(uint64_t));
  std::vector<uint64_t> buf(static_cast<size_t>(n));
  parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) buf[i] = static_cast<uint64_t>(i);  // touch every page
  });
  std::vector<double> times;
  std::vector<uint64_t> sink(64, 0);
  for (int r = 0; r < 5; ++r) {
    const auto t = Clock::now();
    parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
      uint64_t acc[8] = {};
      int64_t i = b;
      for (; i + 8 <= e; i += 8) {
        for (int u = 0; u < 8; ++u) acc[u] += buf[i + u];
      }
      for (; i < e; ++i) acc[0] += buf[i];
      sink[static_cast<size_t>(b) % sink.size()] +=
          acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
    });
    times.push_back(seconds_since(t));
  }
  volatile uint64_t keep = sink[0];  // the sums must be computed
  (void)keep;
  return static_cast<double>(n * static_cast<int64_t>(sizeof(uint64_t))) / median(times);
}

BenchResult run_bench(const CausalLM& model, const BenchOptions& o) {
  if (o.batch <= 0 || o.prompt_len <= 0 || o.gen_len <= 0 || o.repeats <= 0) {
    throw Error("bench: batch, prompt length, generation length and repeats must be positive");
  }
  const Decoder& dec = model.decoder();
  const ModelConfig& c = dec.config();
  std::mt19937_64 rng(o.seed);
  std::uniform_int_distribution<int64_t> id(0, c.vocab_size - 1);

  StepInput prefill;
  prefill.batch = o.batch;
  prefill.seq = o.prompt_len;
  for (int64_t i = 0; i < o.batch * o.prompt_len; ++i) prefill.ids.push_back(id(rng));
  for (int64_t b = 0; b < o.batch; ++b) {
    for (int64_t s = 0; s < o.prompt_len; ++s) prefill.positions.push_back(static_cast<int32_t>(s));
  }
  prefill.key_mask.assign(static_cast<size_t>(o.batch * o.prompt_len), 1);

  std::vector<double> prefill_s, decode_s, ttft_s;
  for (int r = 0; r < o.repeats + 1; ++r) {  // the first run warms caches and allocations
    KvCache cache = dec.new_cache(o.batch, o.prompt_len + o.gen_len);
    const auto t0 = Clock::now();
    Tensor logits = dec.forward(prefill, cache);
    std::vector<float> host = logits.to_f32_vector();
    const double t_prefill = seconds_since(t0);
    StepInput step;
    step.batch = o.batch;
    step.seq = 1;
    step.ids.assign(static_cast<size_t>(o.batch), 0);
    std::vector<int32_t> mask(static_cast<size_t>(o.batch * o.prompt_len), 1);
    const auto t1 = Clock::now();
    double t_first = 0;
    for (int64_t g = 0; g < o.gen_len; ++g) {
      for (int64_t b = 0; b < o.batch; ++b) {  // greedy pick, as generate() does
        const float* row = host.data() + b * c.vocab_size;
        step.ids[b] = std::max_element(row, row + c.vocab_size) - row;
      }
      if (g == 0) t_first = t_prefill + seconds_since(t1);
      step.positions.assign(static_cast<size_t>(o.batch), static_cast<int32_t>(o.prompt_len + g));
      step.key_mask.clear();
      for (int64_t b = 0; b < o.batch; ++b) {
        step.key_mask.insert(step.key_mask.end(), static_cast<size_t>(o.prompt_len + g + 1), 1);
      }
      host = dec.forward(step, cache).to_f32_vector();
    }
    if (r == 0) continue;
    prefill_s.push_back(t_prefill);
    decode_s.push_back(seconds_since(t1));
    ttft_s.push_back(t_first);
  }
  BenchResult res;
  res.prefill_tokens_per_s = static_cast<double>(o.batch * o.prompt_len) / median(prefill_s);
  res.decode_tokens_per_s = static_cast<double>(o.batch * o.gen_len) / median(decode_s);
  res.time_to_first_token_s = median(ttft_s);
  res.peak_rss_bytes = peak_rss();
  res.weight_bytes = dec.decode_weight_bytes();
  res.membw_bytes_per_s = measure_read_bandwidth();
  res.decode_floor_tokens_per_s =
      static_cast<double>(o.batch) * res.membw_bytes_per_s / static_cast<double>(res.weight_bytes);
  return res;
}

}  // namespace anvil
