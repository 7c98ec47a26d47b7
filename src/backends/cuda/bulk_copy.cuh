// Hopper's bulk copies (the 1-D form of the tensor memory accelerator): one thread asks for a
// contiguous range of global memory to be copied into shared memory, and an mbarrier in shared
// memory completes when its bytes have landed. The copy engine streams while the block's
// threads compute or wait, which is how the persistent decode kernel keeps HBM busy across its
// grid barriers. sm_90 only; callers check the device before launching such a kernel.
#pragma once

#include <cstdint>

#include "backends/cuda/async_copy.cuh"

namespace anvil::cuda {

/// Makes `bar` an mbarrier expecting one arrival per phase (the thread that issues the copies).
__device__ __forceinline__ void mbarrier_init(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(shared_address(bar)) : "memory");
#endif
}

/// Orders the mbarrier initialisations before their use by the copy engine (async proxy).
__device__ __forceinline__ void mbarrier_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/// Orders this block's earlier reads of shared memory before copies issued after it overwrite
/// the same bytes (generic proxy, then async proxy).
__device__ __forceinline__ void async_proxy_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/// Arrives on `bar` announcing `bytes` of copies that will complete its current phase.
__device__ __forceinline__ void mbarrier_expect_bytes(uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(shared_address(bar)),
               "r"(bytes)
               : "memory");
#endif
}

/// Copies `bytes` (a multiple of 16, both addresses 16-byte aligned) from global to shared
/// memory, completing on `bar`; the lines it brings into L2 take `l2_policy` (createpolicy).
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, unsigned bytes,
                                                    uint64_t* bar, uint64_t l2_policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], "
      "[%1], %2, [%3], %4;" ::"r"(shared_address(dst)),
      "l"(src), "r"(bytes), "r"(shared_address(bar)), "l"(l2_policy)
      : "memory");
#endif
}

/// Starts copying 16 bytes from global to shared memory (both 16-byte aligned) without holding
/// registers; async_copy_commit closes a group of them, async_copy_wait waits for this thread's.
__device__ __forceinline__ void async_copy_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared_address(dst)), "l"(src)
               : "memory");
}
__device__ __forceinline__ void async_copy_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
__device__ __forceinline__ void async_copy_wait() {
  asm volatile("cp.async.wait_all;" ::: "memory");
}

/// Arrives on `bar` (its one expected arrival): the slot it guards may be refilled.
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
#endif
}

/// A barrier among the first `threads` threads of the block (a multiple of 32), on hardware
/// barrier 1, leaving the rest (a producer warp) free to run on.
__device__ __forceinline__ void threads_sync(int threads) {
  asm volatile("bar.sync 1, %0;" ::"r"(threads) : "memory");
}

/// Waits until the phase of `bar` with the given parity (0, 1, 0, ... per reuse) has completed.
__device__ __forceinline__ void mbarrier_wait(uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
        "selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(shared_address(bar)), "r"(parity)
        : "memory");
  } while (!done);
#endif
}

/// A barrier across every block of a grid whose blocks are all resident (a cooperative
/// launch), on one 64-bit counter in device memory that only ever grows: each block adds one,
/// which tells it how many barriers came before (the count divided by the grid size, the same
/// for every launch of the same grid), and waits for the count to reach the end of its own.
/// Nothing is reset, so back-to-back launches (graph replays) need no clearing step.
/// `threads`: the block's threads that take part (the first ones), as threads_sync.
__device__ __forceinline__ void grid_barrier(unsigned long long* counter, unsigned blocks,
                                             int threads) {
  threads_sync(threads);
  if (threadIdx.x == 0) {
    unsigned long long before;
    asm volatile("atom.add.release.gpu.global.u64 %0, [%1], 1;"
                 : "=l"(before)
                 : "l"(counter)
                 : "memory");
    const unsigned long long target = (before / blocks + 1) * blocks;
    unsigned long long now;
    do {
      asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(now) : "l"(counter) : "memory");
    } while (now < target);
  }
  threads_sync(threads);
}

}  // namespace anvil::cuda
