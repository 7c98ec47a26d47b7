// Copies of a few bytes as kernels instead of copy-engine transfers. In a decode step's stream
// (the picked token to the host, the next step's inputs from it), each hand-over between a
// kernel and the copy engine cost 2.4-5.7 us on the H200 (CUPTI timeline), against ~1.3 us
// between two kernels; a copy of a few bytes takes ~1 us either way. The host side must be
// page-locked memory that the device can address (cudaHostAllocMapped).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace anvil::cuda {

/// The largest copy that goes through small_copy; larger ones stay on the copy engine.
constexpr size_t kSmallCopyBytes = 4096;

/// Queues a copy of n <= kSmallCopyBytes bytes from src to dst on `stream`, either side in
/// device memory or in mapped page-locked host memory (device-addressable pointers).
void small_copy(void* dst, const void* src, size_t n, cudaStream_t stream);

}  // namespace anvil::cuda
