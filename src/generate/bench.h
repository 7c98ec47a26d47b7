// `anvil bench`: prefill and decode throughput, time to first token, peak memory, and the
// memory-bandwidth floor of decoding (the bytes one step must read over a bandwidth measured on
// this machine), so every figure comes with the limit it is measured against.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/model.h"
#include "anvil/tensor.h"

namespace anvil {

struct BenchOptions {
  int64_t batch = 1;
  int64_t prompt_len = 128;
  int64_t gen_len = 32;
  int repeats = 3;  ///< the median of this many runs is reported
  uint64_t seed = 0;
};

struct BenchResult {
  double prefill_tokens_per_s = 0;  ///< batch * prompt_len / prefill time
  double decode_tokens_per_s = 0;   ///< batch * gen_len / decode time (all rows)
  double time_to_first_token_s = 0;
  /// The process's peak resident memory over the runs (the model, its caches and workspaces;
  /// not loading, not the CPU's bandwidth probe).
  int64_t peak_rss_bytes = 0;
  int64_t weight_bytes = 0;  ///< bytes a decode step reads from weights
  /// Bytes a decode step reads from the KV cache, on average over the timed steps: the keys
  /// and values of every position up to and including the step's own, every layer and row.
  int64_t kv_bytes_per_step = 0;
  /// Measured: CPU streaming read (the median over the timed runs of the mean of the
  /// measurements right before and after each run's decode), device copy (read + write).
  double membw_bytes_per_s = 0;
  double membw_min_bytes_per_s = 0, membw_max_bytes_per_s = 0;  ///< the spread of the samples
  double decode_floor_tokens_per_s = 0;                         ///< batch * membw / bytes per step
  /// Decode as a share of the floor: on the CPU the median over the runs of each run's rate
  /// against the bandwidth measured around it.
  double decode_fraction_of_floor = 0;
  /// The same two with the KV cache's bytes added to the weights' (what a step must read; the
  /// floor above counts the weights alone, as the table does).
  double decode_floor_with_kv_tokens_per_s = 0;
  double decode_fraction_of_floor_with_kv = 0;
  /// Whether decode steps were queued ahead, each replaying a recorded device graph
  /// (StepChain), rather than taken one at a time with the host waiting for each (the CPU, a
  /// device without graphs, a MoE step whose picks go through the host).
  bool decode_steps_queued = false;
};

/// A streaming read of a buffer larger than the caches, allocated and touched once, measured as
/// often as needed. The buffer comes from the CPU backend's allocator, as the weights and caches
/// a decode step reads do: on huge pages where the machine grants them (a Xeon guest read 1 GiB
/// at 34-38 GB/s on huge pages against 29-34 on 4 KiB pages; docs/perf.md, thirtieth session).
class ReadBandwidthProbe {
 public:
  explicit ReadBandwidthProbe(int64_t bytes);
  /// Bytes per second: the fastest of four ways of reading the whole buffer, each the median
  /// of `passes` reads: the loads alone (the hardware prefetcher's pace), the loads with each
  /// line requested 4 KB ahead into L1 or into L2 (on two Xeons the decode rows that read
  /// ahead streamed faster than the loads alone, and on the second those requesting into L2
  /// faster than those requesting into L1, so a floor from the slower ways was below what
  /// decode reached), and the last with each thread's half read as four runs side by side (as
  /// the decode rows read since they streamed faster so: 32.1-32.5 GB/s against 26.6-30.7
  /// for one run per thread, on a Xeon with AMX).
  double measure(int passes);

 private:
  Tensor buf_;
  const uint64_t* words_ = nullptr;
  int64_t n_ = 0;
};

/// Streaming-read bandwidth of this machine with the configured threads (bytes/s), over a
/// buffer larger than the caches.
double measure_read_bandwidth(int64_t bytes = int64_t{1} << 30);

/// Copy bandwidth of a device (bytes read + written per second), over two buffers of `bytes`.
double measure_device_bandwidth(Device device, int64_t bytes = int64_t{1} << 30);

BenchResult run_bench(const CausalLM& model, const BenchOptions& options);

}  // namespace anvil
