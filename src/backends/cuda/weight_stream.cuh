// Reading a decode step's weights without pushing the rest out of L2. A step streams every
// weight once (a 0.5B model: ~1 GB through a 50-60 MB L2) and reads none of it again before
// the next step has streamed everything else, so LRU alone evicts what a step does re-read:
// the KV cache, the norms' weights, the biases, the activations. Weight reads therefore carry
// an evict-first L2 policy (`createpolicy`, sm_80 and later): the lines they bring in are the
// first to go, and the small data stays resident from one step to the next.
#pragma once

#include <cstdint>

namespace anvil::cuda {

/// An L2 policy marking every line an access brings in as first to evict.
__device__ __forceinline__ uint64_t weight_stream_policy() {
  uint64_t policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

/// 16 bytes of weights through the read-only path, under `policy`. Volatile: a plain asm is
/// free of side effects to the compiler, which may then issue it where the source guards it
/// (`c < end ? load_weight(...) : 0` as an unconditional load and a select), reading past the
/// end of the weights (an illegal address the CUDA tests caught).
__device__ __forceinline__ uint4 load_weight(const uint4* at, uint64_t policy) {
  uint4 v;
  asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(at), "l"(policy));
  return v;
}

/// Asks for [p, p + bytes) to be brought into L2 under `policy` (one bulk request; `p` and
/// `bytes` multiples of 16). A hint: it never faults on the addresses of one allocation.
__device__ __forceinline__ void prefetch_weights_l2(const void* p, unsigned bytes,
                                                    uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;" ::"l"(p), "r"(bytes),
               "l"(policy)
               : "memory");
#endif
}

}  // namespace anvil::cuda
