// The int8-activation kernels of each ISA level (quant_int8_kernels.inc compiled for AVX-512
// VNNI, AVX-VNNI and AVX2) as one table per level, so the linear products and the team decode
// kernel pick them the same way.
#pragma once

#include <cstddef>
#include <cstdint>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels_avx2_int8.h"
#include "backends/cpu/kernels_avx512.h"
#include "backends/cpu/kernels_avxvnni_int8.h"
#include "backends/cpu/side_by_side.h"

namespace anvil::cpu {

struct Int8Kernels {
  void (*quantize)(const float*, int64_t, const Q8Rows&);
  void (*gemm)(QuantKind, const uint8_t*, size_t, int64_t, const Q8Rows&, int64_t, const float*,
               float*, int64_t);
  void (*packed)(QuantKind, const uint8_t*, size_t, int64_t, int64_t, int64_t, const Q8Rows&,
                 int64_t, const float*, float*, int64_t);
  bool wide;  // whether `packed` has the 512-bit prefill tiles (Q8Rows::tiles)
  void (*packed_lanes)(QuantKind, const uint8_t*, size_t, int64_t, const Lanes&, const Q8Rows&,
                       int64_t, const float*, float*, int64_t);
  /// Attaches Q8Rows::lane_words for a few rows (null at the levels without 512-bit rows).
  bool (*attach_lane_words)(QuantKind, int64_t, Q8Rows&);

  /// Whether `packed_lanes` reads its lanes side by side (the 512-bit decode rows), so that a
  /// split should hand a thread lanes that continue from piece to piece; where it does not,
  /// contiguous pieces read better.
  bool decode_reads_lanes() const { return wide && wide_decode_rows(); }

  /// Whether `packed_lanes` takes x's n rows side by side: one row where decode_reads_lanes(),
  /// 2 to kMaxLaneRows where the level's kernels take them for `kind` (attaching x.lane_words).
  bool lanes_take(QuantKind kind, int64_t n, Q8Rows& x) const {
    if (!decode_reads_lanes() || n > kMaxLaneRows) return false;
    return n == 1 || (attach_lane_words && attach_lane_words(kind, n, x));
  }
};

inline constexpr Int8Kernels kInt8Avx512{&quantize_rows_q8_avx512, &gemm_quant_avx512,
                                         &gemm_packed_avx512,      true,
                                         &packed_lanes_avx512,     &attach_lane_words_avx512};
inline constexpr Int8Kernels kInt8AvxVnni{&quantize_rows_q8_avx2, &gemm_quant_avxvnni,
                                          &gemm_packed_avxvnni,   false,
                                          &packed_lanes_avxvnni,  nullptr};
inline constexpr Int8Kernels kInt8Avx2{&quantize_rows_q8_avx2, &gemm_quant_avx2,
                                       &gemm_packed_avx2,      false,
                                       &packed_lanes_avx2,     nullptr};

/// The kernels of the CPU's level (isa() at least avx2).
inline const Int8Kernels& int8_kernels() {
  return isa() >= Isa::avx512 ? kInt8Avx512 : isa() >= Isa::avxvnni ? kInt8AvxVnni : kInt8Avx2;
}

}  // namespace anvil::cpu
