#include "generate/greedy_chain.h"

#include <utility>

#include "anvil/error.h"
#include "ops/ops.h"

namespace anvil {

bool GreedyChain::available(const Decoder& decoder) {
  return decoder.queues_steps() &&
         supports(ops::kArgmax, decoder.device().type, DType::f32, DType::f32);
}

GreedyChain::GreedyChain(const Decoder& decoder, int64_t batch)
    : decoder_(decoder),
      batch_(batch),
      picks_(Tensor::empty({batch}, DType::i64, decoder.device())) {}

GreedyChain::~GreedyChain() {
  for (Queued& q : queued_) q.copy->wait();  // the copies write into memory owned here
}

void GreedyChain::queue(StepInput step, KvCache& cache, bool follow) {
  if (step.batch != batch_ || step.seq != 1) {
    throw Error("greedy chain: steps are one token for each of the " + std::to_string(batch_) +
                " rows");
  }
  if (follow) {
    if (queued_.empty()) throw Error("greedy chain: no queued step to follow");
    step.ids.clear();
    step.device_ids = picks_;
  }
  const Tensor logits = decoder_.forward(step, cache);
  // The argmax overwrites picks_ after this step's copy of them into its inputs (both queued
  // in order on the device's stream), and the copy to the host is queued behind the argmax.
  ops::argmax(logits.view({batch_, logits.size(-1)}), picks_);
  Queued q;
  q.picks.resize(static_cast<size_t>(batch_));
  q.copy = backend_for(picks_.device())
               .copy_to_host_async(q.picks.data(), picks_.raw(), picks_.nbytes(), picks_.device());
  queued_.push_back(std::move(q));
}

std::vector<int64_t> GreedyChain::take() {
  if (queued_.empty()) throw Error("greedy chain: no queued step to take");
  Queued q = std::move(queued_.front());
  queued_.pop_front();
  q.copy->wait();
  return std::move(q.picks);
}

void GreedyChain::drop(KvCache& cache) {
  while (!queued_.empty()) {
    queued_.back().copy->wait();
    queued_.pop_back();
    --cache.length;
  }
}

}  // namespace anvil
