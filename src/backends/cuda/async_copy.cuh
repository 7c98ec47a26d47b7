// Asynchronous 16-byte copies from global into shared memory (cp.async, sm_80 and later): the
// bytes land without passing through registers, so a block can ask for a whole tile (or a
// whole cached head) and compute or wait meanwhile. Used by the flash prefill kernel's
// double-buffered tiles and by the one-pass decode attention's staged keys and values.
#pragma once

namespace anvil::cuda {

__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

/// 16 bytes global -> shared; zero-fills when !valid (then nothing is read from `src`).
__device__ __forceinline__ void copy_async16(void* dst, const void* src, bool valid = true) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void copy_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
/// Waits until at most `Pending` of this thread's committed groups are still in flight.
template <int Pending>
__device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending) : "memory");
}

}  // namespace anvil::cuda
