// Greedy one-token steps queued one ahead of the host: each step after the first takes its ids
// from the device-side argmax of the one before, and the host reads every step's picks through
// an asynchronous copy. While the host waits for a step's tokens (and hands them to a streamer,
// checks for eos), the next step is already queued, so a device that runs behind the host
// (CUDA graph replay) never idles between tokens.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "anvil/backend.h"
#include "anvil/tensor.h"
#include "generate/kv_cache.h"
#include "models/decoder.h"

namespace anvil {

class GreedyChain {
 public:
  /// True when `decoder` queues one-token steps without the host waiting (graph replay) and its
  /// device picks the argmax itself; otherwise the picks are made one step at a time.
  static bool available(const Decoder& decoder);

  GreedyChain(const Decoder& decoder, int64_t batch);
  ~GreedyChain();
  GreedyChain(const GreedyChain&) = delete;
  GreedyChain& operator=(const GreedyChain&) = delete;

  /// Queues the one-token step `step` on `cache` (its ids from `step.ids`, or with `follow`
  /// the picks of the step queued last), the argmax of its logits and their copy to the host.
  void queue(StepInput step, KvCache& cache, bool follow);
  /// The picks of the oldest queued step not taken yet, once they have arrived.
  std::vector<int64_t> take();
  /// Queued steps whose picks have not been taken.
  size_t pending() const { return queued_.size(); }
  /// Forgets the steps whose picks were not taken (queued ahead of a stop): each leaves the
  /// cache, whose length goes back by one per step.
  void drop(KvCache& cache);

 private:
  struct Queued {
    std::vector<int64_t> picks;
    std::unique_ptr<PendingCopy> copy;
  };
  const Decoder& decoder_;
  int64_t batch_;
  Tensor picks_;  // i64 [batch] on the device: the argmax of the step queued last
  std::deque<Queued> queued_;
};

}  // namespace anvil
