// Small copies between host and device memory that leave the host free. A copy from pageable
// host memory may wait for the stream, and one to pageable memory always does; through
// page-locked memory both are queued like kernels. So the bytes pass through page-locked slots,
// each with an event recorded behind its last copy and reused only once that event has
// completed (normally long before: there are several slots). The slots are mapped into the
// device's address space, so that small copies can be kernels (small_copy.h).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace anvil::cuda {

class PinnedStaging {
 public:
  static constexpr size_t kSlotBytes = 64 * 1024;
  static constexpr int kSlots = 8;

  PinnedStaging();
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  struct Slot {
    void* host = nullptr;
    void* device = nullptr;  // the same bytes as the device addresses them (mapped)
    cudaEvent_t done = nullptr;
    bool held = false;  // a pending copy to the host still reads it
  };
  /// A free slot whose last copy has completed, held until release(); nullptr when every slot
  /// is held (the caller then copies synchronously).
  Slot* take();
  void release(Slot* slot);

 private:
  std::mutex mu_;
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

}  // namespace anvil::cuda
