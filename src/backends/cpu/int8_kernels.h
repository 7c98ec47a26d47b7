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
                       const float*, float*);

  /// Whether `packed_lanes` reads its lanes side by side (the 512-bit decode rows), so that a
  /// split should hand a thread lanes that continue from piece to piece; where it does not,
  /// contiguous pieces read better.
  bool decode_reads_lanes() const { return wide && wide_decode_rows(); }
};

inline constexpr Int8Kernels kInt8Avx512{&quantize_rows_q8_avx512, &gemm_quant_avx512,
                                         &gemm_packed_avx512, true, &packed_lanes_avx512};
inline constexpr Int8Kernels kInt8AvxVnni{&quantize_rows_q8_avx2, &gemm_quant_avxvnni,
                                          &gemm_packed_avxvnni, false, &packed_lanes_avxvnni};
inline constexpr Int8Kernels kInt8Avx2{&quantize_rows_q8_avx2, &gemm_quant_avx2, &gemm_packed_avx2,
                                       false, &packed_lanes_avx2};

/// The kernels of the CPU's level (isa() at least avx2).
inline const Int8Kernels& int8_kernels() {
  return isa() >= Isa::avx512 ? kInt8Avx512 : isa() >= Isa::avxvnni ? kInt8AvxVnni : kInt8Avx2;
}

}  // namespace anvil::cpu
