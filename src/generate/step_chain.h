// One-token steps queued one ahead of the host: each step after the first takes its ids from
// the device's picks of the one before (the argmax when greedy; when sampling, the warpers and
// the draw over the step's top-k candidates, ops::sample_candidates, with the draws the host
// took for it), and the host reads every step's picks through an asynchronous copy. While the
// host waits for a step's tokens (and hands them to a streamer, checks for eos), the next step
// is already queued, so a device that runs behind the host (CUDA graph replay) never idles
// between tokens.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "anvil/backend.h"
#include "anvil/tensor.h"
#include "generate/kv_cache.h"
#include "generate/logits_processor.h"
#include "models/decoder.h"

namespace anvil {

/// How a sampling chain picks: the warpers, and how many candidates each row reads.
struct ChainSampling {
  SamplingParams params;
  int64_t candidates = 0;
};

class StepChain {
 public:
  /// True when `decoder` queues one-token steps of `rows` rows without the host waiting (graph
  /// replay) and its device picks (the argmax, or with `sampling` top-k candidates and the draw)
  /// itself; otherwise the picks are made one step at a time.
  static bool available(const Decoder& decoder, int64_t rows, bool sampling);

  StepChain(const Decoder& decoder, int64_t batch, std::optional<ChainSampling> sampling = {});
  ~StepChain();
  StepChain(const StepChain&) = delete;
  StepChain& operator=(const StepChain&) = delete;

  /// Queues the one-token step `step` on `cache` (its ids from `step.ids`, or with `follow`
  /// the picks of the step queued last), its picks and their copy to the host. Sampling: one
  /// uniform draw per row in `draws`.
  void queue(StepInput step, KvCache& cache, bool follow, std::vector<double> draws = {});

  struct Taken {
    std::vector<int64_t> picks;    // one token a row
    std::vector<int64_t> decided;  // sampling: 1 where the candidates decided the row's pick
    std::vector<double> draws;     // sampling: the draws the step was queued with
  };
  /// The picks of the oldest queued step not taken yet, once they have arrived.
  Taken take();
  /// Queued steps whose picks have not been taken.
  size_t pending() const { return queued_.size(); }
  /// Forgets the steps whose picks were not taken (queued ahead of a stop, or of a step taken
  /// again): each leaves the cache, whose length goes back by one per step. Returns their draws,
  /// oldest first, for the steps that take their place.
  std::vector<std::vector<double>> drop(KvCache& cache);

 private:
  struct Queued {
    std::vector<int64_t> out;  // picks, then (sampling) the decided flags
    std::vector<double> draws;
    std::unique_ptr<PendingCopy> copy;
  };
  const Decoder& decoder_;
  int64_t batch_;
  std::optional<ChainSampling> sampling_;
  Tensor out_;    // i64 [2, batch] on the device: the picks of the step queued last, then flags
  Tensor picks_;  // out_'s first row
  Tensor values_, indices_;         // sampling: the candidates
  Tensor draws_;                    // sampling: f64 [batch], the step's draws
  std::vector<double> draw_bytes_;  // the host side of the draws' queued copy
  std::deque<Queued> queued_;
};

}  // namespace anvil
