// Repacking is plain byte shuffling (no ISA-specific code); threads split the row groups.
#include "backends/cpu/repack.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "anvil/error.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/huge_pages.h"
#include "core/file_pages.h"
#include "formats/ggml_quants.h"

namespace anvil::cpu {
namespace {

// An entry stays valid while the allocation it was made from lives: a weight's bytes never
// change, and a different tensor at a reused address has a different owner. Checking that
// touches none of the weight's memory (the kernels read the packed copy, so the original's
// lines are cold: reading them on every call cost two DRAM misses per product).
struct Entry {
  size_t nbytes;
  DType type;
  Shape shape;
  std::weak_ptr<void> owner;
  std::shared_ptr<const PackedWeights> packed;
};

bool same_allocation(const std::weak_ptr<void>& a, const std::shared_ptr<void>& b) {
  return !a.expired() && !a.owner_before(b) && !b.owner_before(a);
}

std::mutex g_mu;
std::unordered_map<const void*, Entry> g_cache;

// Every (group, block) of the repacked layout, zeroed (padding rows stay zero), then each of its
// rows that exists: fn(out, r, blk) with `out` the packed block, r the row within the group and
// `blk` that row's source block (src_block bytes each). Threads split the groups.
template <class Fn>
void for_each_row_block(const uint8_t* src, size_t row_bytes, size_t src_block,
                        const PackedWeights& p, uint8_t* dst, const Fn& fn) {
  parallel_for(p.groups, 16, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      for (int64_t b = 0; b < p.kb; ++b) {
        uint8_t* out = dst + static_cast<size_t>(g * p.kb + b) * p.block_bytes;
        std::memset(out, 0, p.block_bytes);
        for (int r = 0; r < kPackRows; ++r) {
          const int64_t row = g * kPackRows + r;
          if (row >= p.rows) break;
          fn(out, r,
             src + static_cast<size_t>(row) * row_bytes + static_cast<size_t>(b) * src_block);
        }
      }
    }
  });
}

// One row's sub-block s (32 values) of a Q4_K / Q5_K super-block as unsigned values: the low
// (s even) or high (s odd) nibbles of qs[32 (s / 2) ..], for Q5_K plus bit s of qh[i] as 16.
void k_sub_block(const uint8_t* blk, bool five, int s, uint8_t vals[32]) {
  const uint8_t* qs = blk + (five ? 48 : 16);
  for (int i = 0; i < 32; ++i) {
    const uint8_t b = qs[32 * (s / 2) + i];
    vals[i] = s % 2 == 0 ? b & 0x0f : b >> 4;
    if (five) vals[i] |= static_cast<uint8_t>(((blk[16 + i] >> s) & 1u) << 4);
  }
}

// A row's 32-value block (values below 32) into the Q4 nibble layout at q (4 steps of 32
// bytes) and, with `fifth`, the values' fifth bits into the 32-byte word at fifth (repack.h).
void put_q5(int r, const uint8_t vals[32], uint8_t* q, uint8_t* fifth) {
  for (int e = 0; e < 4; ++e) {
    uint8_t bits = 0;
    for (int t = 0; t < 4; ++t) {
      const uint8_t lo = vals[4 * t + e], hi = vals[16 + 4 * t + e];
      q[t * 32 + r * 4 + e] = static_cast<uint8_t>((lo & 0x0f) | (hi & 0x0f) << 4);
      bits = static_cast<uint8_t>(bits | ((lo >> 4) & 1u) << t | ((hi >> 4) & 1u) << (4 + t));
    }
    if (fifth) fifth[r * 4 + e] = bits;
  }
}

// Q4_K / Q5_K: the layout of repack.h, super-block by super-block.
void repack_q45_k(const uint8_t* src, size_t row_bytes, PackedWeights& p, uint8_t* dst) {
  const bool five = p.type == DType::q5_k;
  const size_t sub_stride = five ? 160 : 128;
  for_each_row_block(src, row_bytes, five ? 176 : 144, p, dst,
                     [&](uint8_t* out, int r, const uint8_t* blk) {
                       std::memcpy(out + 2 * r, blk, 2);           // d
                       std::memcpy(out + 16 + 2 * r, blk + 2, 2);  // dmin
                       uint8_t sc[8], mn[8];
                       unpack_k_scale_min(blk + 4, sc, mn);
                       for (int sub = 0; sub < 8; ++sub) {
                         out[32 + 8 * sub + r] = sc[sub];
                         out[96 + 8 * sub + r] = mn[sub];
                         uint8_t vals[32];
                         k_sub_block(blk, five, sub, vals);
                         uint8_t* q = out + 160 + sub_stride * sub;
                         put_q5(r, vals, q, five ? q + 128 : nullptr);
                       }
                     });
}

// Q6_K: the layout of repack.h. A row's value v of a super-block: in its half (v / 128), the
// quarter u = (v % 128) / 32 takes the low (u < 2) or high nibble of ql[64 half + 32 (u % 2) +
// l] and bits 2u..2u+1 of qh[32 half + l], l = v % 32.
void repack_q6_k(const uint8_t* src, size_t row_bytes, PackedWeights& p, uint8_t* dst) {
  for_each_row_block(src, row_bytes, 210, p, dst, [&](uint8_t* out, int r, const uint8_t* blk) {
    std::memcpy(out + 2 * r, blk + 208, 2);  // d
    for (int s = 0; s < 16; ++s) out[16 + 8 * s + r] = blk[192 + s];
    for (int b = 0; b < 8; ++b) {
      // Block b is quarter u = b % 4 of half b / 4: its low bits are one nibble of 32
      // consecutive ql bytes, its top bits one bit pair of 32 consecutive qh bytes.
      const int half = b / 4, u = b % 4;
      const uint8_t* lo_src = blk + 64 * half + 32 * (u % 2);
      const uint8_t* hi_src = blk + 128 + 32 * half;
      const int nibble = u < 2 ? 0 : 4;
      uint8_t vals[32];
      for (int i = 0; i < 32; ++i) {
        vals[i] = static_cast<uint8_t>(((lo_src[i] >> nibble) & 0x0f) | ((hi_src[i] >> (2 * u)) & 3)
                                                                            << 4);
      }
      uint8_t* q = out + 144 + 192 * b;
      uint8_t* top = q + 128;
      for (int e = 0; e < 4; ++e) {
        uint8_t top_lo = 0, top_hi = 0;
        for (int t = 0; t < 4; ++t) {
          const uint8_t lo = vals[4 * t + e], hi = vals[16 + 4 * t + e];
          q[t * 32 + r * 4 + e] = static_cast<uint8_t>((lo & 0x0f) | (hi & 0x0f) << 4);
          top_lo = static_cast<uint8_t>(top_lo | (lo >> 4) << (2 * t));
          top_hi = static_cast<uint8_t>(top_hi | (hi >> 4) << (2 * t));
        }
        top[r * 4 + e] = top_lo;
        top[32 + r * 4 + e] = top_hi;
      }
    }
  });
}

// Decode streams the repacked rows from DRAM every step, so they live on huge pages
// (huge_pages.h). A matrix of its own rounded up to whole huge pages left most of its last one
// resident for nothing (Qwen2.5-0.5B Q4_0's 2.45 MB matrices: +129 MB of resident memory), and
// its tail on 4 KiB pages read 5-7% slower (gate/up), so matrices share 64 MiB arenas, each
// alive while a matrix in it is; a matrix of half an arena or more gets huge pages of its own.
std::shared_ptr<uint8_t> packed_storage(size_t bytes) {
  constexpr size_t kArenaBytes = size_t{64} << 20;
  const size_t need = (bytes + 63) / 64 * 64;
  if (need >= kArenaBytes / 2) {
    void* mem = allocate_huge_page_rounded(huge_page_rounded(need));
    if (!mem) throw Error("out of host memory repacking a weight matrix");
    return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(mem), [](uint8_t* q) { std::free(q); });
  }
  static std::mutex mu;
  static std::weak_ptr<uint8_t> current;  // the arena being filled, while a matrix holds it
  static size_t used = 0;
  const std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<uint8_t> arena = current.lock();
  if (!arena || used + need > kArenaBytes) {
    void* mem = allocate_huge_page_rounded(kArenaBytes);
    if (!mem) throw Error("out of host memory repacking a weight matrix");
    arena = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(mem), [](uint8_t* q) { std::free(q); });
    current = arena;
    used = 0;
  }
  std::shared_ptr<uint8_t> out(arena, arena.get() + used);  // keeps the arena alive
  used += need;
  return out;
}

std::shared_ptr<const PackedWeights> repack(const Tensor& w) {
  auto p = std::make_shared<PackedWeights>();
  p->type = w.dtype();
  p->rows = w.size(0);
  p->k = w.size(1);
  p->groups = (p->rows + kPackRows - 1) / kPackRows;
  const bool q8 = p->type == DType::q8_0, super = is_super_block(p->type);
  const bool q5 = p->type == DType::q5_0 || p->type == DType::q5_1;
  const bool with_min = p->type == DType::q4_1 || p->type == DType::q5_1;
  if (super && p->k % 256 != 0) {
    throw Error("internal error: repacking a " + std::string(dtype_name(p->type)) +
                " matrix whose rows (" + std::to_string(p->k) +
                ") are not whole 256-value super-blocks");
  }
  p->kb = p->k / (super ? 256 : 32);
  p->block_bytes = p->type == DType::q4_k   ? kPackedQ4kBytes
                   : p->type == DType::q5_k ? kPackedQ5kBytes
                   : p->type == DType::q6_k ? kPackedQ6kBytes
                   : q8                     ? 16 + 256
                                            : (with_min ? 32 : 16) + 128 + (q5 ? 32 : 0);
  const size_t total = static_cast<size_t>(p->groups * p->kb) * p->block_bytes;
  p->storage = packed_storage(total);
  p->data = p->storage.get();
  // Source blocks: d, [m], [32 fifth bits], the quants.
  const size_t row_bytes = dtype_nbytes(p->type, p->k);
  const auto* src = static_cast<const uint8_t*>(w.raw());
  uint8_t* dst = p->storage.get();
  if (p->type == DType::q6_k) {
    repack_q6_k(src, row_bytes, *p, dst);
    return p;
  }
  if (super) {
    repack_q45_k(src, row_bytes, *p, dst);
    return p;
  }
  const size_t src_block = q8 ? 34 : (with_min ? 4 : 2) + (q5 ? 4 : 0) + 16;
  for_each_row_block(
      src, row_bytes, src_block, *p, dst, [&](uint8_t* out, int r, const uint8_t* blk) {
        std::memcpy(out + 2 * r, blk, 2);                         // d
        if (with_min) std::memcpy(out + 16 + 2 * r, blk + 2, 2);  // m
        uint8_t* qs = out + (with_min ? 32 : 16);
        if (q8) {
          for (int t = 0; t < 8; ++t) {  // 4 values at a time, q + 128
            uint32_t word;
            std::memcpy(&word, blk + 2 + 4 * t, 4);
            word ^= 0x80808080u;
            std::memcpy(qs + t * 32 + r * 4, &word, 4);
          }
        } else if (q5) {
          // ggml's byte j holds value j (low nibble) and j + 16 (high): the Q4 layout as
          // stored; value j's fifth bit is bit j of qh.
          uint32_t qh;
          std::memcpy(&qh, blk + (with_min ? 4 : 2), 4);
          const uint8_t* nib = blk + (with_min ? 4 : 2) + 4;
          for (int t = 0; t < 4; ++t) std::memcpy(qs + t * 32 + r * 4, nib + 4 * t, 4);
          for (int e = 0; e < 4; ++e) {
            uint8_t bits = 0;
            for (int t = 0; t < 4; ++t) {
              bits = static_cast<uint8_t>(bits | ((qh >> (4 * t + e)) & 1u) << t |
                                          ((qh >> (16 + 4 * t + e)) & 1u) << (4 + t));
            }
            qs[128 + r * 4 + e] = bits;
          }
        } else {
          const uint8_t* nib = blk + (with_min ? 4 : 2);
          for (int t = 0; t < 4; ++t) std::memcpy(qs + t * 32 + r * 4, nib + 4 * t, 4);
        }
      });
  return p;
}

}  // namespace

std::shared_ptr<const PackedWeights> packed_weights(const Tensor& w) {
  if (!w.owner()) return repack(w);  // nothing identifies the memory: no caching
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_cache.find(w.raw());
  if (it != g_cache.end() && it->second.nbytes == w.nbytes() && it->second.type == w.dtype() &&
      it->second.shape == w.shape() && same_allocation(it->second.owner, w.owner())) {
    return it->second.packed;
  }
  // A miss (a model loading): drop the copies of weights whose memory is gone.
  std::erase_if(g_cache, [](const auto& kv) { return kv.second.owner.expired(); });
  Entry e{w.nbytes(), w.dtype(), w.shape(), w.owner(), repack(w)};
  auto packed = e.packed;
  // The kernels read the copy; the original, where it is a read-only file mapping (GGUF), is
  // given back to the page cache rather than kept resident twice (-96 MB for SmolLM2-135M Q4_1).
  drop_mapped_pages(w.raw(), w.nbytes());
  g_cache[w.raw()] = std::move(e);
  return packed;
}

}  // namespace anvil::cpu
