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

// Q4_K: the layout of repack.h, super-block by super-block.
void repack_q4_k(const uint8_t* src, size_t row_bytes, PackedWeights& p, uint8_t* dst) {
  parallel_for(p.groups, 16, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      for (int64_t sb = 0; sb < p.kb; ++sb) {
        uint8_t* out = dst + static_cast<size_t>(g * p.kb + sb) * p.block_bytes;
        std::memset(out, 0, p.block_bytes);
        for (int r = 0; r < kPackRows; ++r) {
          const int64_t row = g * kPackRows + r;
          if (row >= p.rows) break;
          const uint8_t* blk = src + static_cast<size_t>(row) * row_bytes + sb * 144;
          std::memcpy(out + 2 * r, blk, 2);           // d
          std::memcpy(out + 16 + 2 * r, blk + 2, 2);  // dmin
          uint8_t sc[8], mn[8];
          unpack_k_scale_min(blk + 4, sc, mn);
          for (int s = 0; s < 8; ++s) {
            out[32 + 8 * s + r] = sc[s];
            out[96 + 8 * s + r] = mn[s];
          }
          // Sub-block s: the low (s even) or high (s odd) nibbles of qs[32 (s / 2) ..][0, 32).
          const uint8_t* qs = blk + 16;
          for (int s = 0; s < 8; ++s) {
            uint8_t vals[32];
            for (int i = 0; i < 32; ++i) {
              const uint8_t b = qs[32 * (s / 2) + i];
              vals[i] = s % 2 == 0 ? b & 0x0f : b >> 4;
            }
            uint8_t* q = out + 160 + 128 * s;
            for (int t = 0; t < 4; ++t) {
              for (int e = 0; e < 4; ++e) {
                q[t * 32 + r * 4 + e] =
                    static_cast<uint8_t>(vals[4 * t + e] | (vals[16 + 4 * t + e] << 4));
              }
            }
          }
        }
      }
    }
  });
}

std::shared_ptr<const PackedWeights> repack(const Tensor& w) {
  auto p = std::make_shared<PackedWeights>();
  p->type = w.dtype();
  p->rows = w.size(0);
  p->k = w.size(1);
  p->groups = (p->rows + kPackRows - 1) / kPackRows;
  const bool q8 = p->type == DType::q8_0, q4k = p->type == DType::q4_k;
  const bool q5 = p->type == DType::q5_0 || p->type == DType::q5_1;
  const bool with_min = p->type == DType::q4_1 || p->type == DType::q5_1;
  if (q4k && p->k % 256 != 0) {
    throw Error("internal error: repacking a Q4_K matrix whose rows (" + std::to_string(p->k) +
                ") are not whole 256-value super-blocks");
  }
  p->kb = p->k / (q4k ? 256 : 32);
  p->block_bytes = q4k  ? kPackedQ4kBytes
                   : q8 ? 16 + 256
                        : (with_min ? 32 : 16) + 128 + (q5 ? 32 : 0);
  const size_t total = static_cast<size_t>(p->groups * p->kb) * p->block_bytes;
  void* mem = std::aligned_alloc(64, (total + 63) / 64 * 64);
  if (!mem) throw Error("out of host memory repacking a weight matrix");
  p->storage =
      std::shared_ptr<uint8_t>(static_cast<uint8_t*>(mem), [](uint8_t* q) { std::free(q); });
  p->data = p->storage.get();
  // Source blocks: d, [m], [32 fifth bits], the quants.
  const size_t src_block = q4k ? 144 : q8 ? 34 : (with_min ? 4 : 2) + (q5 ? 4 : 0) + 16;
  const size_t row_bytes = static_cast<size_t>(p->kb) * src_block;
  const auto* src = static_cast<const uint8_t*>(w.raw());
  uint8_t* dst = p->storage.get();
  if (q4k) {
    repack_q4_k(src, row_bytes, *p, dst);
    return p;
  }
  parallel_for(p->groups, 16, [&](int64_t g0, int64_t g1) {
    for (int64_t g = g0; g < g1; ++g) {
      for (int64_t b = 0; b < p->kb; ++b) {
        uint8_t* out = dst + static_cast<size_t>(g * p->kb + b) * p->block_bytes;
        std::memset(out, 0, p->block_bytes);
        for (int r = 0; r < kPackRows; ++r) {
          const int64_t row = g * kPackRows + r;
          if (row >= p->rows) break;
          const uint8_t* blk = src + static_cast<size_t>(row) * row_bytes + b * src_block;
          std::memcpy(out + 2 * r, blk, 2);                         // d
          if (with_min) std::memcpy(out + 16 + 2 * r, blk + 2, 2);  // m
          uint8_t* qs = out + (with_min ? 32 : 16);
          if (q8) {
            for (int t = 0; t < 8; ++t) {
              for (int e = 0; e < 4; ++e) {
                qs[t * 32 + r * 4 + e] = static_cast<uint8_t>(blk[2 + 4 * t + e] ^ 0x80);
              }
            }
          } else {
            const uint8_t* nib = blk + (with_min ? 4 : 2) + (q5 ? 4 : 0);
            for (int t = 0; t < 4; ++t) std::memcpy(qs + t * 32 + r * 4, nib + 4 * t, 4);
            if (q5) {  // bit j of qh: value j's fifth bit
              uint32_t qh;
              std::memcpy(&qh, blk + (with_min ? 4 : 2), 4);
              uint8_t* bits = qs + 128;
              for (int t = 0; t < 4; ++t) {
                for (int e = 0; e < 4; ++e) {
                  const int bit = r * 4 + e;
                  if ((qh >> (4 * t + e)) & 1u) bits[8 * t + bit / 8] |= uint8_t(1u << (bit % 8));
                  if ((qh >> (16 + 4 * t + e)) & 1u) {
                    bits[8 * t + 4 + bit / 8] |= uint8_t(1u << (bit % 8));
                  }
                }
              }
            }
          }
        }
      }
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
  g_cache[w.raw()] = std::move(e);
  return packed;
}

}  // namespace anvil::cpu
