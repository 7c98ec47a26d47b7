// kernels_avxvnni_int8.h: quant_int8_kernels.inc compiled for AVX2 + FMA + F16C + AVX-VNNI.
#include "backends/cpu/kernels_avxvnni_int8.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backends/cpu/aligned_vector.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/repack.h"
#include "backends/cpu/side_by_side.h"
#include "backends/cpu/with_count.h"

namespace anvil::cpu {
namespace {

// vpdpbusd (VEX-encoded): four u8 x s8 products summed into each int32 lane, exact.
inline __m256i dot_u8s8(__m256i acc, __m256i u, __m256i s) {
  return _mm256_dpbusd_avx_epi32(acc, u, s);
}
#include "backends/cpu/int8_avx2_primitives.inc"

constexpr bool kSignedQ8 = false;    // vpdpbusd takes Q8_0's q + 128 as it is
constexpr bool kInt16Pairs = false;  // one vpdpbusd per step already

#include "backends/cpu/quant_int8_kernels.inc"

}  // namespace

void gemm_quant_avxvnni(QuantKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                        const Q8Rows& x, int64_t nx, const float* bias, float* out, int64_t ldo) {
  gemm_quant_impl(kind, w, row_bytes, rows, x, nx, bias, out, ldo);
}

void gemm_packed_avxvnni(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                         int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                         float* out, int64_t ldo) {
  gemm_packed_impl(kind, packed, block_bytes, rows, g0, g1, x, nx, bias, out, ldo);
}

void packed_lanes_avxvnni(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                          const Lanes& lanes, const Q8Rows& x, int64_t nx, const float* bias,
                          float* out, int64_t ldo) {
  packed_lanes_impl(kind, packed, block_bytes, rows, lanes, x, nx, bias, out, ldo);
}

}  // namespace anvil::cpu
