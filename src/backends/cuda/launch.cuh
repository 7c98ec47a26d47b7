// Kernel launches with programmatic dependent launch (PDL, Hopper): a kernel may start while the
// one before it in the stream is still running, and waits for it only where it first needs its
// results. During graph replay of a decode step this hides most of each launch's ramp-up (block
// scheduling, weight prefetch) behind the previous kernel. Every kernel launched this way calls
// pdl_wait() before it reads anything an earlier kernel wrote or writes anything one still reads.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"

namespace anvil::cuda {

/// kernel<<<grid, block, smem, stream>>>(args...), allowed to overlap the previous kernel.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
            Args&&... args) {
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = pdl_enabled() ? 1 : 0;
  const cudaError_t err = cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
  if (err != cudaSuccess) {  // say which kernel and with what, not only that a launch failed
    const char* name = nullptr;
    if (cudaFuncGetName(&name, reinterpret_cast<const void*>(kernel)) != cudaSuccess) {
      name = "a kernel";
    }
    const std::string what = std::string("launching ") + name + " (grid " + std::to_string(grid.x) +
                             "x" + std::to_string(grid.y) + "x" + std::to_string(grid.z) +
                             ", block " + std::to_string(block.x) + ", dynamic shared memory " +
                             std::to_string(smem) + " bytes)";
    throw_cuda_error(err, what.c_str(), __FILE__, __LINE__);
  }
}

/// Waits until the kernels this one depends on have finished and their writes are visible (a
/// no-op when launched without PDL), then lets the next kernel in the stream start launching.
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Asks for the 128-byte lines of [p, p + bytes) to be brought into L2 (a hint; never faults on
/// the addresses given, which must lie in one allocation).
__device__ __forceinline__ void prefetch_l2(const void* p, long long bytes, int lane, int lanes) {
#if defined(__CUDA_ARCH__)
  const char* c = static_cast<const char*>(p);
  for (long long off = static_cast<long long>(lane) * 128; off < bytes;
       off += static_cast<long long>(lanes) * 128) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
  }
#endif
}

}  // namespace anvil::cuda
