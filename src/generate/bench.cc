// Timings use a steady clock around whole steps. Every step's greedy pick is copied to the host,
// which waits for it (where steps are queued one ahead, as generate() queues them, the last
// wait covers the last step), so the clock measures finished work on every backend.
// Prompts are random ids (the speed of a step does not depend on which ids they are).
#include "generate/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "anvil/error.h"
#include "core/thread_pool.h"
#include "generate/generate.h"
#include "generate/step_chain.h"
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

// Starts the peak RSS over from the current RSS (Linux's clear_refs, value 5), so that a bench
// run reports its own peak and not an earlier one of the process (a previous bench's probe).
// Best effort: where /proc/self/clear_refs cannot be written the peak keeps its history.
void reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  if (out) out << "5";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

ReadBandwidthProbe::ReadBandwidthProbe(int64_t bytes)
    : buf_(Tensor::empty({bytes / static_cast<int64_t>(sizeof(uint64_t))}, DType::i64)),
      n_(buf_.numel()) {
  auto* words = static_cast<uint64_t*>(buf_.raw());
  parallel_for(n_, 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) words[i] = static_cast<uint64_t>(i);  // touch every page
  });
  words_ = words;
}

double ReadBandwidthProbe::measure(int passes) {
  const int64_t n = n_;
  constexpr int64_t kAheadWords = 4096 / sizeof(uint64_t);
  // Plain; requested ahead into L1; into L2; into L2 with each task's range read as four runs
  // side by side (the decode kernels' way: one core keeps more reads in flight with several
  // streams). The fastest is the floor's bandwidth.
  constexpr int kWays = 4;
  constexpr int kStreams = 4;
  std::vector<double> times[kWays];
  std::vector<uint64_t> sink(64, 0);
  for (int r = 0; r < kWays * passes; ++r) {
    const int way = r % kWays;  // the ways alternate, so all see the same moments
    const auto t = Clock::now();
    parallel_for(n, 1 << 16, [&](int64_t b, int64_t e) {
      uint64_t acc[8] = {};
      if (way == 3) {
        const int64_t run = (e - b) / kStreams / 8 * 8;
        for (int64_t i = 0; i < run; i += 8) {
          for (int s = 0; s < kStreams; ++s) {
            const uint64_t* at = words_ + b + s * run + i;
            if (i + kAheadWords < run) __builtin_prefetch(at + kAheadWords, 0, 2);
            for (int u = 0; u < 8; ++u) acc[u] += at[u];
          }
        }
        for (int64_t i = b + kStreams * run; i < e; ++i) acc[0] += words_[i];
      } else {
        int64_t i = b;
        for (; i + 8 <= e; i += 8) {
          if (way == 1 && i + kAheadWords < e) __builtin_prefetch(words_ + i + kAheadWords, 0, 3);
          if (way == 2 && i + kAheadWords < e) __builtin_prefetch(words_ + i + kAheadWords, 0, 2);
          for (int u = 0; u < 8; ++u) acc[u] += words_[i + u];
        }
        for (; i < e; ++i) acc[0] += words_[i];
      }
      sink[static_cast<size_t>(b) % sink.size()] +=
          acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];
    });
    times[way].push_back(seconds_since(t));
  }
  volatile uint64_t keep = sink[0];  // the sums must be computed
  (void)keep;
  const double bytes = static_cast<double>(n * static_cast<int64_t>(sizeof(uint64_t)));
  double best = median(times[0]);
  for (const auto& way : times) best = std::min(best, median(way));
  return bytes / best;
}

double measure_read_bandwidth(int64_t bytes) {
  return ReadBandwidthProbe(bytes).measure(5);
}

double measure_device_bandwidth(Device device, int64_t bytes) {
  Backend& be = backend_for(device);
  const auto a = be.allocate(device, static_cast<size_t>(bytes));
  const auto b = be.allocate(device, static_cast<size_t>(bytes));
  // Random contents: some devices move zeros faster than data.
  std::vector<uint64_t> host(static_cast<size_t>(bytes) / 8);
  std::mt19937_64 rng(1);
  for (auto& v : host) v = rng();
  be.copy_from_host(a->data(), host.data(), host.size() * 8, device);
  std::vector<double> times;
  for (int r = 0; r < 6; ++r) {
    be.synchronize(device);
    const auto t = Clock::now();
    for (int i = 0; i < 4; ++i) {
      be.copy_on_device(i % 2 ? a->data() : b->data(), i % 2 ? b->data() : a->data(),
                        static_cast<size_t>(bytes), device);
    }
    be.synchronize(device);
    if (r > 0) times.push_back(seconds_since(t) / 4);
  }
  return 2.0 * static_cast<double>(bytes) / median(times);  // bytes read + bytes written
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

  // On the CPU the floor's bandwidth is measured right before and right after every timed
  // decode, and each run is set against the mean of its two: a shared machine's bandwidth can
  // move by 2x from one second to the next, so one measurement at the end would judge a run by
  // a state it did not see. (A GPU's copy bandwidth is steady; it is measured once.)
  const bool cpu = dec.device().type == DeviceType::cpu;
  std::unique_ptr<ReadBandwidthProbe> probe;
  // The probe's buffer stays resident through the runs (every page touched); the peak RSS
  // reported is the model's: the peak before the probe, or the peak after it less its bytes.
  reset_peak_rss();
  const int64_t rss_before_probe = peak_rss();
  constexpr int64_t kProbeBytes = int64_t{512} << 20;
  if (cpu) probe = std::make_unique<ReadBandwidthProbe>(kProbeBytes);
  std::vector<double> prefill_s, decode_s, ttft_s, run_bw, run_fraction, run_fraction_kv,
      bw_samples;
  const double bytes_per_step = static_cast<double>(dec.decode_weight_bytes());
  // Step g attends to prompt_len + g + 1 positions: prompt_len + (gen_len + 1) / 2 on average.
  const double positions_per_step =
      static_cast<double>(o.prompt_len) + 0.5 * static_cast<double>(o.gen_len + 1);
  double kv_bytes_per_step = 0;
  // ANVIL_NO_GREEDY_CHAIN=1: one step at a time, the host reading each token before queueing
  // the next (for measuring the chain).
  const bool chained =
      StepChain::available(dec, o.batch, false) && std::getenv("ANVIL_NO_GREEDY_CHAIN") == nullptr;
  for (int r = 0; r < o.repeats + 1; ++r) {  // the first run warms caches and allocations
    KvCache cache = dec.new_cache(o.batch, o.prompt_len + o.gen_len);
    kv_bytes_per_step = static_cast<double>(cache.bytes_per_position()) * positions_per_step;
    const auto t0 = Clock::now();
    std::vector<int64_t> next = greedy_tokens(dec.forward(prefill, cache));
    const double t_first = seconds_since(t0);  // prefill and the first token's pick
    StepInput step;
    step.batch = o.batch;
    step.seq = 1;
    const double bw_before = probe && r > 0 ? probe->measure(3) : 0.0;
    const auto t1 = Clock::now();
    // ANVIL_BENCH_TRACE=1: where a decode step's time goes on the host (queueing the step vs
    // waiting for its token), for telling host-bound from device-bound decoding apart.
    static const bool trace = std::getenv("ANVIL_BENCH_TRACE") != nullptr;
    double t_queue = 0, t_pick = 0;
    const auto set_step = [&](int64_t g) {
      step.positions.assign(static_cast<size_t>(o.batch), static_cast<int32_t>(o.prompt_len + g));
      step.key_mask.assign(static_cast<size_t>(o.batch * (o.prompt_len + g + 1)), 1);
    };
    if (chained) {  // as generate() decodes greedily: each step queued before the last is read
      StepChain chain(dec, o.batch);
      step.ids = next;
      set_step(0);
      chain.queue(step, cache, false);
      for (int64_t g = 0; g < o.gen_len; ++g) {
        const auto ta = Clock::now();
        if (g + 1 < o.gen_len) {
          set_step(g + 1);
          chain.queue(step, cache, true);
        }
        const auto tb = Clock::now();
        next = chain.take().picks;
        t_queue += std::chrono::duration<double>(tb - ta).count();
        t_pick += seconds_since(tb);
      }
    } else {
      for (int64_t g = 0; g < o.gen_len; ++g) {
        step.ids = next;
        set_step(g);
        const auto ta = Clock::now();
        const Tensor logits = dec.forward(step, cache);
        const auto tb = Clock::now();
        next = greedy_tokens(logits);
        t_queue += std::chrono::duration<double>(tb - ta).count();
        t_pick += seconds_since(tb);
      }
    }
    const double t_decode = seconds_since(t1);
    if (trace && r > 0) {
      std::fprintf(stderr, "trace: per decode step %.1f us queueing the step, %.1f us picking\n",
                   1e6 * t_queue / static_cast<double>(o.gen_len),
                   1e6 * t_pick / static_cast<double>(o.gen_len));
    }
    if (r == 0) continue;
    prefill_s.push_back(t_first);
    decode_s.push_back(t_decode);
    ttft_s.push_back(t_first);
    if (probe) {
      const double bw_after = probe->measure(3);
      const double bw = 0.5 * (bw_before + bw_after);
      bw_samples.push_back(bw_before);
      bw_samples.push_back(bw_after);
      run_bw.push_back(bw);
      const double floor_tok_s = static_cast<double>(o.batch) * bw / bytes_per_step;
      const double floor_kv_tok_s =
          static_cast<double>(o.batch) * bw / (bytes_per_step + kv_bytes_per_step);
      const double rate = static_cast<double>(o.batch * o.gen_len) / t_decode;
      run_fraction.push_back(rate / floor_tok_s);
      run_fraction_kv.push_back(rate / floor_kv_tok_s);
    }
  }
  BenchResult res;
  res.decode_steps_queued = chained;
  res.prefill_tokens_per_s = static_cast<double>(o.batch * o.prompt_len) / median(prefill_s);
  res.decode_tokens_per_s = static_cast<double>(o.batch * o.gen_len) / median(decode_s);
  res.time_to_first_token_s = median(ttft_s);
  res.peak_rss_bytes = probe ? std::max(rss_before_probe, peak_rss() - kProbeBytes) : peak_rss();
  res.weight_bytes = dec.decode_weight_bytes();
  res.kv_bytes_per_step = static_cast<int64_t>(kv_bytes_per_step + 0.5);
  if (probe) {
    res.membw_bytes_per_s = median(run_bw);
    res.membw_min_bytes_per_s = *std::min_element(bw_samples.begin(), bw_samples.end());
    res.membw_max_bytes_per_s = *std::max_element(bw_samples.begin(), bw_samples.end());
    res.decode_fraction_of_floor = median(run_fraction);
    res.decode_fraction_of_floor_with_kv = median(run_fraction_kv);
  } else {
    res.membw_bytes_per_s = measure_device_bandwidth(dec.device());
    res.membw_min_bytes_per_s = res.membw_max_bytes_per_s = res.membw_bytes_per_s;
  }
  res.decode_floor_tokens_per_s =
      static_cast<double>(o.batch) * res.membw_bytes_per_s / static_cast<double>(res.weight_bytes);
  res.decode_floor_with_kv_tokens_per_s =
      static_cast<double>(o.batch) * res.membw_bytes_per_s /
      (static_cast<double>(res.weight_bytes) + kv_bytes_per_step);
  if (!probe) {
    res.decode_fraction_of_floor = res.decode_tokens_per_s / res.decode_floor_tokens_per_s;
    res.decode_fraction_of_floor_with_kv =
        res.decode_tokens_per_s / res.decode_floor_with_kv_tokens_per_s;
  }
  return res;
}

}  // namespace anvil
