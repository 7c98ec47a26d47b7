#include "backends/cuda/small_copy.h"

#include <cstdint>

#include "anvil/error.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/launch.cuh"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 256;

// One block: words of 8 bytes where both ends and the size allow, else bytes. The writes to
// host memory are made visible to the host before the kernel ends (the event recorded behind
// it is what the host waits for).
__global__ void small_copy_kernel(void* dst, const void* src, unsigned n, bool words) {
  pdl_wait();
  if (words) {
    auto* d = static_cast<unsigned long long*>(dst);
    const auto* s = static_cast<const unsigned long long*>(src);
    for (unsigned i = threadIdx.x; i < n / 8; i += blockDim.x) d[i] = s[i];
  } else {
    auto* d = static_cast<unsigned char*>(dst);
    const auto* s = static_cast<const unsigned char*>(src);
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) d[i] = s[i];
  }
  __threadfence_system();
}

}  // namespace

void small_copy(void* dst, const void* src, size_t n, cudaStream_t stream) {
  if (n > kSmallCopyBytes) {
    throw Error("small_copy: " + std::to_string(n) + " bytes is over its " +
                std::to_string(kSmallCopyBytes) + "-byte limit");
  }
  if (n == 0) return;
  const bool words =
      (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src) | n) % 8 == 0;
  launch(small_copy_kernel, 1, kThreads, 0, stream, dst, src, static_cast<unsigned>(n), words);
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace anvil::cuda
