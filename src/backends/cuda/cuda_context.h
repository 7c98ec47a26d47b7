// Per-device state of the CUDA backend: the stream every kernel of anvil runs on (so work is
// ordered without host synchronisation), the cuBLASLt handle and its workspace.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>

#include "anvil/device.h"
#include "anvil/dtype.h"

namespace anvil::cuda {

/// The activation (and weight) types the CUDA kernels are registered for.
inline constexpr DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

struct Context {
  int ordinal = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void* workspace = nullptr;  ///< cuBLASLt scratch, allocated once
  size_t workspace_bytes = 0;
  int sm_count = 0;
  bool capturing = false;  ///< a graph is being captured on `stream`
};

/// The context of `device` (created on first use), with that device made current.
Context& context(Device device);
/// The context of the device an op's tensors live on; shorthand for kernels.
inline cudaStream_t stream_of(Device device) {
  return context(device).stream;
}

/// Whether kernels of the current device are launched with programmatic dependent launch:
/// Hopper and later, unless ANVIL_CUDA_NO_PDL is set (for measuring with and without).
bool pdl_enabled();

/// Number of visible CUDA devices (0 when there is no driver or no GPU).
int visible_device_count();
/// Why no device is usable, when visible_device_count() is 0.
const char* unavailable_reason();

}  // namespace anvil::cuda
