#include "generate/step_chain.h"

#include <utility>

#include "anvil/error.h"
#include "ops/ops.h"

namespace anvil {

bool StepChain::available(const Decoder& decoder, int64_t rows, bool sampling) {
  const DeviceType d = decoder.device().type;
  if (!decoder.queues_steps(rows)) return false;
  if (sampling) {
    return supports(ops::kTopK, d, DType::f32, DType::f32) &&
           supports(ops::kSampleCandidates, d, DType::f32, DType::f32);
  }
  return supports(ops::kArgmax, d, DType::f32, DType::f32);
}

StepChain::StepChain(const Decoder& decoder, int64_t batch, std::optional<ChainSampling> sampling)
    : decoder_(decoder),
      batch_(batch),
      sampling_(std::move(sampling)),
      out_(Tensor::empty({2, batch}, DType::i64, decoder.device())),
      picks_(out_.select(0, 0)) {
  if (sampling_) {
    const int64_t k = sampling_->candidates;
    values_ = Tensor::empty({batch, k}, DType::f32, decoder.device());
    indices_ = Tensor::empty({batch, k}, DType::i64, decoder.device());
    draws_ = Tensor::empty({batch}, DType::f64, decoder.device());
  }
}

StepChain::~StepChain() {
  for (Queued& q : queued_) q.copy->wait();  // the copies write into memory owned here
}

void StepChain::queue(StepInput step, KvCache& cache, bool follow, std::vector<double> draws) {
  if (step.batch != batch_ || step.seq != 1) {
    throw Error("step chain: steps are one token for each of the " + std::to_string(batch_) +
                " rows");
  }
  if (sampling_ && draws.size() != static_cast<size_t>(batch_)) {
    throw Error("step chain: a sampled step needs one draw per row");
  }
  if (follow) {
    if (queued_.empty()) throw Error("step chain: no queued step to follow");
    step.ids.clear();
    step.device_ids = picks_;
  }
  const Tensor logits = decoder_.forward(step, cache);
  const Tensor rows = logits.view({batch_, logits.size(-1)});
  // The picks overwrite picks_ after this step's copy of them into its inputs (both queued in
  // order on the device's stream), and the copy to the host is queued behind them.
  Backend& backend = backend_for(out_.device());
  const int64_t words = sampling_ ? 2 * batch_ : batch_;
  if (sampling_) {
    const SamplingParams& p = sampling_->params;
    ops::top_k(rows, values_, indices_);
    backend.copy_from_host_queued(draws_.raw(), draws.data(), draws.size() * sizeof(double),
                                  draws_.device());
    ops::sample_candidates(values_, indices_, draws_, p.temperature, p.top_k, p.top_p, p.min_p,
                           picks_, out_.select(0, 1));
  } else {
    ops::argmax(rows, picks_);
  }
  Queued q;
  q.out.resize(static_cast<size_t>(words));
  q.draws = std::move(draws);
  q.copy = backend.copy_to_host_async(q.out.data(), out_.raw(),
                                      static_cast<size_t>(words) * sizeof(int64_t), out_.device());
  queued_.push_back(std::move(q));
}

StepChain::Taken StepChain::take() {
  if (queued_.empty()) throw Error("step chain: no queued step to take");
  Queued q = std::move(queued_.front());
  queued_.pop_front();
  q.copy->wait();
  Taken t;
  const auto b = static_cast<size_t>(batch_);
  t.picks.assign(q.out.begin(), q.out.begin() + static_cast<std::ptrdiff_t>(b));
  if (sampling_) t.decided.assign(q.out.begin() + static_cast<std::ptrdiff_t>(b), q.out.end());
  t.draws = std::move(q.draws);
  return t;
}

std::vector<std::vector<double>> StepChain::drop(KvCache& cache) {
  std::vector<std::vector<double>> draws;
  while (!queued_.empty()) {
    queued_.back().copy->wait();
    draws.insert(draws.begin(), std::move(queued_.back().draws));
    queued_.pop_back();
    --cache.length;
  }
  return draws;
}

}  // namespace anvil
