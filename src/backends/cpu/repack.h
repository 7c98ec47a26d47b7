// Quantized weights repacked for the AVX-512 VNNI kernels: 8 rows interleaved per 32-value block
// so one vpdpbusd multiplies 4 values of 8 rows at once and the 8 block sums come out already
// reduced, one per lane (3x fewer instructions per weight byte than one row at a time, which left
// Q4 decode compute-bound at ~15 GB/s per core). Repacked once, on first use, and cached.
//
// The cache is keyed by the weight's address, size, type, shape and owning allocation: weights
// must not be modified in place once a CPU kernel has read them (model weights never are). An
// original in a read-only file mapping (GGUF) gives its pages back once repacked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "anvil/tensor.h"
#include "backends/cpu/kernels_avx512.h"

namespace anvil::cpu {

/// Rows per group of the repacked layout.
constexpr int64_t kPackRows = 8;

/// Layout: groups of 8 rows (the last padded with zero scales), each group kb = k / 32 blocks
/// of `block_bytes`: the 8 rows' f16 scales d (16 bytes), for Q4_1 their f16 minimums (16
/// bytes), then the quants in steps of 32 bytes, each step 4 bytes of each of the 8 rows:
/// Q8_0 8 steps of values 4t..4t+3 stored as q + 128 (unsigned for vpdpbusd); Q4_0/Q4_1 4 steps
/// of the packed bytes 4t..4t+3 (low nibbles values 4t.., high nibbles 16 + 4t..). Q5_0/Q5_1: as
/// Q4_0/Q4_1, then the fifth bits in one 32-byte word laid out as a step: bit t of byte 4r + e is
/// that of row r's value 4t + e, bit 4 + t that of 16 + 4t + e, so each step's fifth bits come
/// out with a shift and a mask; the block keeps the rows' own size (176 / 192 bytes for 8 rows).
/// Q4_K (256-value super-blocks): per super-block, the 8 rows' f16 d (16 bytes) and dmin (16
/// bytes), the six-bit scales unpacked to bytes [sub-block][row] (64 bytes), the mins likewise
/// (64 bytes), then each of the 8 sub-blocks of 32 values laid out as a Q4_0 block's quants
/// (4 steps of 32 bytes; in each byte value i in the low nibble, value 16 + i in the high one):
/// 1,184 bytes per super-block and group, 2.8% more than the 8 rows' own 1,152.
/// Q5_K: as Q4_K, each sub-block's quants followed by its fifth bits as Q5_0's (32 bytes):
/// 1,440 bytes against the rows' own 1,408.
/// Q6_K (scales per 16 values): per super-block, the 8 rows' f16 d (16 bytes), the signed
/// scales [sub-block of 16][row] (128 bytes), then per 32-value block the low four bits of each
/// value laid out as a Q4_0 block's quants (128 bytes; values 0-15 in the low nibbles, so each
/// nibble half has one scale) and the top two bits in two 32-byte words, the low nibbles' and
/// the high nibbles': bits 2t..2t+1 of byte 4r + e belong to step t's value of row r, e. Each
/// step's top bits come out with one shift and one mask. 1,680 bytes: the rows' own size.
constexpr size_t kPackedQ4kBytes = 16 + 16 + 64 + 64 + 8 * 128;
constexpr size_t kPackedQ5kBytes = kPackedQ4kBytes + 8 * 32;
constexpr size_t kPackedQ6kBytes = 16 + 128 + 8 * (128 + 64);

struct PackedWeights {
  DType type;
  int64_t rows, k, groups, kb;  // kb: blocks of `block_bytes` per group (k / 32; K types k / 256)
  size_t block_bytes;
  const uint8_t* data;
  std::shared_ptr<uint8_t> storage;
};

/// The kernel kind of any block type the int8 kernels multiply with rows of k values (the
/// 256-value types need k a multiple of 256); false for any other.
inline bool int8_kind(DType t, int64_t k, QuantKind* kind) {
  const bool super = k % 256 == 0;
  switch (t) {
    case DType::q8_0:
      *kind = QuantKind::q8_0;
      return true;
    case DType::q4_0:
      *kind = QuantKind::q4_0;
      return true;
    case DType::q4_1:
      *kind = QuantKind::q4_1;
      return true;
    case DType::q5_0:
      *kind = QuantKind::q5_0;
      return true;
    case DType::q5_1:
      *kind = QuantKind::q5_1;
      return true;
    case DType::iq4_nl:
      *kind = QuantKind::iq4_nl;
      return true;
    case DType::q2_k:
      *kind = QuantKind::q2_k;
      return super;
    case DType::q3_k:
      *kind = QuantKind::q3_k;
      return super;
    case DType::q4_k:
      *kind = QuantKind::q4_k;
      return super;
    case DType::q5_k:
      *kind = QuantKind::q5_k;
      return super;
    case DType::q6_k:
      *kind = QuantKind::q6_k;
      return super;
    case DType::iq4_xs:
      *kind = QuantKind::iq4_xs;
      return super;
    default:
      return false;
  }
}

/// True for the types that are repacked (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K); the
/// others are read as stored.
inline bool is_repacked(DType t) {
  return t == DType::q8_0 || t == DType::q4_0 || t == DType::q4_1 || t == DType::q5_0 ||
         t == DType::q5_1 || t == DType::q4_k || t == DType::q5_k || t == DType::q6_k;
}

/// True for the repacked types of 256-value super-blocks.
inline bool is_super_block(DType t) {
  return t == DType::q4_k || t == DType::q5_k || t == DType::q6_k;
}

/// The kernel kind of a type that is repacked, for rows of k values; false for any other.
inline bool repacked_kind(DType t, int64_t k, QuantKind* kind) {
  return is_repacked(t) && int8_kind(t, k, kind);
}

/// The repacked form of a weight matrix [rows, k] of a repacked type, made on first use.
std::shared_ptr<const PackedWeights> packed_weights(const Tensor& w);

}  // namespace anvil::cpu
