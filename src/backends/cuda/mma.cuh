// The warp-level tensor-core product (PTX's mma.sync m16n8k16) and the packed operand pairs it
// takes, shared by the kernels that use it (flash prefill, the decode layers' products).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace anvil::cuda {

// c += a (16x16, row-major) * b (16x8, column-major), float accumulators. Register layout
// (lane = 4 * group + quad): a[0] row group, columns 2 quad + {0, 1}; a[1] row group + 8, the
// same columns; a[2] and a[3] the same rows, columns 8 + 2 quad + {0, 1}; b0 rows 2 quad + {0,
// 1} of column group, b1 rows 8 + 2 quad + {0, 1}; c[0..1] row group, columns 2 quad + {0, 1},
// c[2..3] row group + 8.
template <class T>
__device__ __forceinline__ void mma_16x8x16(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                            unsigned b1) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// Two floats rounded to T in one 32-bit word, the first (the lower column) in the low half.
template <class T>
__device__ __forceinline__ unsigned pack_pair(float lo, float hi) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned*>(&v);
  }
}

}  // namespace anvil::cuda
