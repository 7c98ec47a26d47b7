#include "backends/cuda/pinned_staging.h"

#include "backends/cuda/cuda_check.h"

namespace anvil::cuda {

PinnedStaging::PinnedStaging() : slots_(kSlots) {
  for (Slot& s : slots_) {
    ANVIL_CUDA_CHECK(
        cudaHostAlloc(&s.host, kSlotBytes, cudaHostAllocMapped | cudaHostAllocPortable));
    ANVIL_CUDA_CHECK(cudaHostGetDevicePointer(&s.device, s.host, 0));
    ANVIL_CUDA_CHECK(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming));
  }
}

PinnedStaging::~PinnedStaging() {
  for (Slot& s : slots_) {
    if (s.done) (void)cudaEventSynchronize(s.done);
    if (s.done) (void)cudaEventDestroy(s.done);
    if (s.host) (void)cudaFreeHost(s.host);
  }
}

PinnedStaging::Slot* PinnedStaging::take() {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t tried = 0; tried < slots_.size(); ++tried) {
    Slot& s = slots_[next_];
    next_ = (next_ + 1) % slots_.size();
    if (s.held) continue;
    ANVIL_CUDA_CHECK(cudaEventSynchronize(s.done));  // its previous copy has left the slot
    s.held = true;
    return &s;
  }
  return nullptr;
}

void PinnedStaging::release(Slot* slot) {
  std::lock_guard<std::mutex> lock(mu_);
  slot->held = false;
}

}  // namespace anvil::cuda
