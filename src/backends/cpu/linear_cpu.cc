// CPU matrix product out = x @ W^T + b with float32 activations and f32/bf16/f16 or
// block-quantized (GGUF) weights. Threads split the output features; each thread widens a block
// of weight rows to float32 once and reuses it for every activation row, so quantized weights
// are read in their compact form (a Q4 model streams Q4 bytes) and decoded in cache. The CPU
// performance issue replaces the inner loops with ISA-specific kernels.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "backends/cpu/aligned_vector.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/dense_panels_avx2.h"
#include "backends/cpu/int8_kernels.h"
#include "backends/cpu/kernels_amx.h"
#include "backends/cpu/kernels_avx512.h"
#include "backends/cpu/kernels_bf16dot.h"
#include "backends/cpu/quant_dot.h"
#include "backends/cpu/repack.h"
#include "backends/cpu/stream_split.h"
#include "backends/cpu/swiglu_rows.h"
#include "backends/cpu/weight_load.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

constexpr int64_t kRowBlock = 16;  // weight rows widened together (fits L1 for K up to ~512)

inline float dot(const float* a, const float* b, int64_t k) {
  float acc[16] = {};
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    for (int u = 0; u < 16; ++u) acc[u] += a[j + u] * b[j + u];
  }
  float s = 0;
  for (int u = 0; u < 16; ++u) s += acc[u];
  for (; j < k; ++j) s += a[j] * b[j];
  return s;
}

// Widens weight rows [r0, r1) into `dst` (row-major, k floats per row).
template <class W>
const float* widen_rows(const ops::LinearArgs& a, int64_t r0, int64_t r1, std::vector<float>& dst) {
  const int64_t k = a.weight.size(1);
  if constexpr (std::is_same_v<W, float>) {
    return a.weight.data<float>() + r0 * k;
  } else if constexpr (std::is_same_v<W, void>) {  // block-quantized
    const size_t row_bytes = dtype_nbytes(a.weight.dtype(), k);
    const auto* base = static_cast<const uint8_t*>(a.weight.raw());
    for (int64_t r = r0; r < r1; ++r) {
      convert_to_f32(base + static_cast<size_t>(r) * row_bytes, a.weight.dtype(),
                     dst.data() + (r - r0) * k, static_cast<size_t>(k));
    }
    return dst.data();
  } else {
    const W* w = a.weight.data<W>();
    for (int64_t i = 0; i < (r1 - r0) * k; ++i) dst[i] = widen(w[r0 * k + i]);
    return dst.data();
  }
}

// The loop shared by the register-decoding kernels: threads take blocks of kRowBlock output
// features; `dot(r0, r1, row, tmp)` fills tmp with the dot products of activation row `row` with
// weight rows [r0, r1), which stay in L1 while every activation row uses them.
template <class Dot>
void for_row_blocks(const ops::LinearArgs& a, const std::vector<float>& bias, Dot&& dot) {
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  float* out = a.out.data<float>();
  const int64_t blocks = (o + kRowBlock - 1) / kRowBlock;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, k * kRowBlock * n));
  cpu::parallel_for(
      blocks, grain,
      [&](int64_t b0, int64_t b1) {
        float tmp[kRowBlock];
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t r0 = blk * kRowBlock, r1 = std::min(o, r0 + kRowBlock);
          for (int64_t row = 0; row < n; ++row) {
            dot(r0, r1, row, tmp);
            float* orow = out + row * o;
            for (int64_t r = r0; r < r1; ++r)
              orow[r] = tmp[r - r0] + (bias.empty() ? 0.0f : bias[r]);
          }
        }
      },
      4);
}

// Quantized weights with a fused kernel: blocks are decoded in registers, never widened to memory.
void linear_fused(const ops::LinearArgs& a, QuantDotRows dot_rows, const std::vector<float>& bias) {
  const int64_t n = a.x.size(0), k = a.x.size(1);
  const float* x = a.x.data<float>();
  const size_t row_bytes = dtype_nbytes(a.weight.dtype(), k);
  const auto* w = static_cast<const uint8_t*>(a.weight.raw());
  // Block sums of the activations, for block types with a minimum.
  const int64_t kb = k / 32;
  std::vector<float> xsum(static_cast<size_t>(n * kb));
  for (int64_t row = 0; row < n; ++row) {
    for (int64_t b = 0; b < kb; ++b) {
      float s = 0;
      for (int64_t j = 0; j < 32; ++j) s += x[row * k + b * 32 + j];
      xsum[row * kb + b] = s;
    }
  }
  for_row_blocks(a, bias, [&](int64_t r0, int64_t r1, int64_t row, float* tmp) {
    dot_rows(w + static_cast<size_t>(r0) * row_bytes, row_bytes, r1 - r0, x + row * k,
             xsum.data() + row * kb, k, tmp);
  });
}

// Prefill: 8 chunks per thread. Decode (one row) goes through stream_for: each thread streams
// one run of the weights and then takes pieces of the others', so a thread slowed by another
// process on its core takes less.
constexpr int kPrefillChunks = 8;

// Weight rows per task in whole units of `unit` rows (a kernel's tile, or the panel a prefill
// kernel packs, so no task ends on part of one); for a single activation row each thread
// streams its own run of the matrix and then helps with the others' (stream_for), finer chunks
// for prefill.
template <class Fn>
void split_rows(int64_t o, int64_t n, Fn&& fn, int64_t unit = 4) {
  const int64_t units = (o + unit - 1) / unit;
  const auto rows = [&](int64_t u0, int64_t u1) { fn(u0 * unit, std::min(o, u1 * unit)); };
  if (n == 1) {
    cpu::stream_for(units, rows);
  } else {
    cpu::parallel_for(units, 1, rows, kPrefillChunks);
  }
}

// float32 / bfloat16 / IEEE half weights with AVX2 (+F16C): rows are widened in registers, not
// copied; from kAvx2PanelMinRows activation rows (prefill) packed in panels per call
// (dense_panels_avx2.h), the threads splitting whole panels.
template <class W>
void linear_dense_avx2(const ops::LinearArgs& a, const std::vector<float>& bias) {
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  const float* x = a.x.data<float>();
  const W* w = a.weight.data<W>();
  if (n >= kAvx2PanelMinRows) {
    const float* b = bias.empty() ? nullptr : bias.data();
    float* out = a.out.data<float>();
    split_rows(
        o, n,
        [&](int64_t r0, int64_t r1) {
          const float* br = b ? b + r0 : nullptr;
          const auto* half = reinterpret_cast<const uint16_t*>(w + r0 * k);
          if constexpr (std::is_same_v<W, float>) {
            gemm_dense_panels_f32_avx2(w + r0 * k, r1 - r0, x, n, k, br, out + r0, o);
          } else if constexpr (std::is_same_v<W, Bf16>) {
            gemm_dense_panels_bf16_avx2(half, r1 - r0, x, n, k, br, out + r0, o);
          } else {
            gemm_dense_panels_f16_avx2(half, r1 - r0, x, n, k, br, out + r0, o);
          }
        },
        kAvx2PanelRows);
    return;
  }
  const auto dot_rows = [&](int64_t r0, int64_t r1, const float* xr, float* dst) {
    if constexpr (std::is_same_v<W, float>) {
      dot_rows_f32_avx2(w + r0 * k, r1 - r0, xr, k, dst);
    } else if constexpr (std::is_same_v<W, Bf16>) {
      dot_rows_bf16_avx2(reinterpret_cast<const uint16_t*>(w + r0 * k), r1 - r0, xr, k, dst);
    } else {
      dot_rows_f16_avx2(reinterpret_cast<const uint16_t*>(w + r0 * k), r1 - r0, xr, k, dst);
    }
  };
  if (n == 1) {
    // Decode: each thread streams its own run of the rows (split_rows), as the other products
    // do (row blocks claimed in turn read a bf16 head 12% slower on a Zen 3, docs/perf.md).
    float* out = a.out.data<float>();
    split_rows(o, n, [&](int64_t r0, int64_t r1) {
      dot_rows(r0, r1, x, out + r0);
      if (!bias.empty()) {
        for (int64_t r = r0; r < r1; ++r) out[r] += bias[static_cast<size_t>(r)];
      }
    });
    return;
  }
  for_row_blocks(a, bias, [&](int64_t r0, int64_t r1, int64_t row, float* tmp) {
    dot_rows(r0, r1, x + row * k, tmp);
  });
}

// Scratch that only grows: the per-token path allocates nothing once warm. One set per calling
// thread (ops are issued by one thread per model; tasks only read it).
template <class T, class A>
T* grow(std::vector<T, A>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// The bias as float32 (a pointer into the tensor when it already is), or nullptr.
const float* bias_f32(const ops::LinearArgs& a) {
  if (!a.bias.defined()) return nullptr;
  if (a.bias.dtype() == DType::f32) return a.bias.data<float>();
  thread_local AlignedVector<float> converted;
  float* dst = grow(converted, static_cast<size_t>(a.bias.numel()));
  convert_to_f32(a.bias.raw(), a.bias.dtype(), dst, static_cast<size_t>(a.bias.numel()));
  return dst;
}

const bool kUsePacked = std::getenv("ANVIL_NO_REPACK") == nullptr;
// The most activation rows the grouped products (group_avx512) take: decode's batches.
constexpr int64_t kMaxGroupedRows = 4;
// From this many activation rows bf16 products at avx512bf16 pack their weights in panels
// (gemm_bf16dot_tiles_avx512): the packing costs a few shuffles per 16 pairs of 16 rows, paid
// back when a pair feeds as many activation rows.
constexpr int64_t kBf16TilesMinRows = 16;

// residual[j, r] += out[j, r] for output features [r0, r1) of every activation row: a task adds
// the features it just wrote while they are in its cache (linear_add's epilogue).
inline void add_rows(float* residual, const float* out, int64_t n, int64_t o, int64_t r0,
                     int64_t r1) {
  if (!residual) return;
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t r = r0; r < r1; ++r) residual[j * o + r] += out[j * o + r];
  }
}

// Prefill rows for the 512-bit tiles (Q8Rows::tiles), interleaved by the threads into a buffer
// of the calling thread, when the kernels have them and take `kind`. Not for the few rows of
// batched decode (the grouped products take up to 4 rows, through the 256-bit tiles, and give
// what the products one by one give: the two tiles round differently).
void attach_wide_tiles(const Int8Kernels& kern, QuantKind kind, int64_t n, Q8Rows& xq) {
  if (!kern.wide || n <= kMaxGroupedRows || !wide_tiles_take(kind)) return;
  thread_local AlignedVector<uint8_t> tiles;
  uint8_t* out = grow(tiles, q8_tiles_bytes(n, xq.k));
  const Q8Rows& rows = xq;
  cpu::parallel_for(q8_tile_count(n, kind), 1, [&](int64_t t0, int64_t t1) {
    interleave_q8_tiles_avx512(rows, n, kind, t0, t1, out);
  });
  xq.tiles = out;
}

// The groups a prefill task takes at a time: whole spans of the level's tiles.
int64_t prefill_span(const Int8Kernels& kern, QuantKind kind) {
  return kern.wide ? wide_span_groups(kind) : 2;
}

// Activation rows [n, k] quantized by the threads into buffers of the calling thread (valid
// until its next call).
Q8Rows quantize_activations(const Int8Kernels& kern, const float* x, int64_t n, int64_t k) {
  thread_local AlignedVector<int8_t> q;
  thread_local AlignedVector<float> d, ds;
  thread_local AlignedVector<int32_t> s;
  const int64_t kb = k / 32;
  const size_t nb = static_cast<size_t>(n * kb);
  const Q8Rows xq{grow(q, static_cast<size_t>(n * k)), grow(d, nb), grow(s, nb), grow(ds, nb), k};
  cpu::parallel_for(n, 16, [&](int64_t r0, int64_t r1) {
    const Q8Rows part{xq.q + r0 * k, xq.d + r0 * kb, xq.s + r0 * kb, xq.ds + r0 * kb, k};
    kern.quantize(x + r0 * k, r1 - r0, part);
  });
  return xq;
}

// Quantized weights through int8 activations (false when the weights' type or shape is not
// one the kernels take). With `residual`, each task also adds its part of the product into it
// (linear_add).
bool linear_int8(const ops::LinearArgs& a, const Int8Kernels& kern, float* residual) {
  const DType wt = a.weight.dtype();
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  const float* x = a.x.data<float>();
  float* out = a.out.data<float>();
  QuantKind kind;
  if (!int8_kind(wt, k, &kind)) return false;
  Q8Rows xq = quantize_activations(kern, x, n, k);
  const float* bias = bias_f32(a);
  if (kUsePacked && is_repacked(wt)) {
    const auto packed = packed_weights(a.weight);
    attach_wide_tiles(kern, kind, n, xq);
    const auto groups = [&](int64_t g0, int64_t g1) {
      kern.packed(kind, packed->data, packed->block_bytes, o, g0, g1, xq, n, bias, out, o);
      add_rows(residual, out, n, o, g0 * kPackRows, std::min(o, g1 * kPackRows));
    };
    if (kern.lanes_take(kind, n, xq)) {
      // The rows side by side (side_by_side.h), each thread's pieces continuing its lanes.
      cpu::stream_for_lanes(packed->groups, [&](const Lanes& piece) {
        kern.packed_lanes(kind, packed->data, packed->block_bytes, o, piece, xq, n, bias, out, o);
        for (int i = 0; i < piece.count; ++i) {
          add_rows(residual, out, n, o, piece.begin[i] * kPackRows,
                   std::min(o, piece.end[i] * kPackRows));
        }
      });
    } else if (n == 1) {
      cpu::stream_for(packed->groups, groups);
    } else {
      // Prefill tiles take two or four groups at a time: the tasks split whole spans, so none
      // ends on a part of one (a lone group's tiles run at half the rate).
      const int64_t span = prefill_span(kern, kind);
      cpu::parallel_for(
          (packed->groups + span - 1) / span, 1,
          [&](int64_t p0, int64_t p1) { groups(span * p0, std::min(packed->groups, span * p1)); },
          kPrefillChunks);
    }
    return true;
  }
  const size_t row_bytes = dtype_nbytes(wt, k);
  const auto* w = static_cast<const uint8_t*>(a.weight.raw());
  split_rows(o, n, [&](int64_t r0, int64_t r1) {
    kern.gemm(kind, w + static_cast<size_t>(r0) * row_bytes, row_bytes, r1 - r0, xq, n,
              bias ? bias + r0 : nullptr, out + r0, o);
    add_rows(residual, out, n, o, r0, r1);
  });
  return true;
}

// AMX's weights for a product of n rows: bf16, or a repacked type the tiles take (`keep` holds
// the repacked copy); false below the amx level, for decode's few rows and for other types.
bool amx_weights(const Tensor& weight, int64_t n, int64_t k, AmxWeights* w,
                 std::shared_ptr<const PackedWeights>* keep) {
  if (isa() < Isa::amx || n < kAmxMinRows) return false;
  w->rows = weight.size(0);
  w->k = k;
  if (weight.dtype() == DType::bf16) {
    w->bf16 = static_cast<const uint16_t*>(weight.raw());
    return true;
  }
  if (!kUsePacked || !repacked_kind(weight.dtype(), k, &w->kind) || !amx_takes(w->kind)) {
    return false;
  }
  *keep = packed_weights(weight);
  w->packed = (*keep)->data;
  w->block_bytes = (*keep)->block_bytes;
  return true;
}

// Prefill rows x [n, k] rounded to bf16 as AMX's A tiles, packed by the threads into a buffer of
// the calling thread (valid until its next call).
const uint16_t* amx_rows(const float* x, int64_t n, int64_t k) {
  thread_local AlignedVector<uint16_t> tiles_store;
  uint16_t* tiles = grow(tiles_store, amx_row_tiles_words(n, k));
  cpu::parallel_for(amx_row_blocks(n), 1,
                    [&](int64_t b0, int64_t b1) { pack_rows_amx(x, n, k, b0, b1, tiles); });
  return tiles;
}

// AMX (prefill's rows of bf16 or repacked block-type weights): the activations packed once per
// product; each thread turns its pairs of 16-row weight panels into tiles and multiplies them
// against every row. With `residual`, each task also adds its part of the product into it
// (linear_add).
bool linear_amx(const ops::LinearArgs& a, float* residual) {
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  AmxWeights w;
  std::shared_ptr<const PackedWeights> keep;
  if (!amx_weights(a.weight, n, k, &w, &keep)) return false;
  const uint16_t* tiles = amx_rows(a.x.data<float>(), n, k);
  const float* bias = bias_f32(a);
  float* out = a.out.data<float>();
  const int64_t panels = (o + 15) / 16;
  cpu::parallel_for((panels + 1) / 2, 1,
                    [&](int64_t q0, int64_t q1) {
                      const int64_t p0 = 2 * q0, p1 = std::min(panels, 2 * q1);
                      gemm_amx(w, p0, p1, tiles, n, bias, out, o);
                      add_rows(residual, out, n, o, 16 * p0, std::min(o, 16 * p1));
                    },
                    kPrefillChunks);
  return true;
}

// AVX-512: prefill on AMX tiles where the CPU has them (linear_amx); else quantized weights
// through int8 activations and VNNI, f32 / bf16 / f16 through FMA tiles, bf16 through pair dot
// products at avx512bf16. With `residual`, each task also adds its part of the product into it
// (linear_add).
bool linear_avx512(const ops::LinearArgs& a, float* residual = nullptr) {
  if (linear_amx(a, residual)) return true;
  if (linear_int8(a, kInt8Avx512, residual)) return true;
  const DType wt = a.weight.dtype();
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  const float* x = a.x.data<float>();
  float* out = a.out.data<float>();
  // bf16 products of several rows go to the widened tiles and panels below where the pair
  // products are the slower way to multiply on this core (cpu_isa.h: bf16_pair_products).
  if (wt == DType::bf16 && isa() >= Isa::avx512bf16 && (n == 1 || bf16_pair_products())) {
    const float* bias = bias_f32(a);
    const auto* w = static_cast<const uint16_t*>(a.weight.raw());
    if (n >= kBf16TilesMinRows) {
      // Prefill: the activations rounded to bf16 straight into their tiles, once per op; the
      // threads split panels of weight rows.
      thread_local AlignedVector<uint32_t> tiles_store;
      uint32_t* xt = grow(tiles_store, static_cast<size_t>(bf16_tile_words(n, k)));
      cpu::parallel_for((n + kBf16TileRows - 1) / kBf16TileRows, 1,
                        [&](int64_t t0, int64_t t1) { pack_bf16_tiles(x, n, k, t0, t1, xt); });
      split_rows(
          o, n,
          [&](int64_t r0, int64_t r1) {
            gemm_bf16dot_tiles_avx512(w + r0 * k, r1 - r0, xt, n, k, bias ? bias + r0 : nullptr,
                                      out + r0, o);
            add_rows(residual, out, n, o, r0, r1);
          },
          kBf16PanelRows);
      return true;
    }
    // The activations rounded to bf16 once per op (by the threads, for prefill's rows), then
    // pair dot products against the weights as stored.
    thread_local AlignedVector<uint16_t> xb_store;
    uint16_t* xb = grow(xb_store, static_cast<size_t>(n * k));
    cpu::parallel_for(n, 16, [&](int64_t r0, int64_t r1) {
      round_rows_bf16_avx512(x + r0 * k, r1 - r0, k, xb + r0 * k);
    });
    split_rows(o, n, [&](int64_t r0, int64_t r1) {
      gemm_bf16dot_avx512(w + r0 * k, r1 - r0, xb, n, k, bias ? bias + r0 : nullptr, out + r0, o);
      add_rows(residual, out, n, o, r0, r1);
    });
    return true;
  }
  if (wt == DType::f32 || wt == DType::bf16 || wt == DType::f16) {
    const float* bias = bias_f32(a);
    // Prefill: the threads split whole panels (kDensePanelRows), decode 4-row tiles.
    split_rows(
        o, n,
        [&](int64_t r0, int64_t r1) {
          const float* b = bias ? bias + r0 : nullptr;
          const auto* half = static_cast<const uint16_t*>(a.weight.raw()) + r0 * k;
          if (wt == DType::f32) {
            gemm_f32_avx512(a.weight.data<float>() + r0 * k, r1 - r0, x, n, k, b, out + r0, o);
          } else if (wt == DType::bf16) {
            gemm_bf16_avx512(half, r1 - r0, x, n, k, b, out + r0, o);
          } else {
            gemm_f16_avx512(half, r1 - r0, x, n, k, b, out + r0, o);
          }
          add_rows(residual, out, n, o, r0, r1);
        },
        n >= kDensePanelMinRows ? kDensePanelRows : 4);
    return true;
  }
  return false;
}

// A bias as float32: the tensor's own data when it is float32, else a converted copy in `slot`.
const float* bias_f32(const Tensor& b, std::vector<float>& slot) {
  if (!b.defined()) return nullptr;
  if (b.dtype() == DType::f32) return b.data<float>();
  float* dst = grow(slot, static_cast<size_t>(b.numel()));
  convert_to_f32(b.raw(), b.dtype(), dst, static_cast<size_t>(b.numel()));
  return dst;
}

// Several products of one input in decode (q, k and v; gate and up): the activation rows are
// quantized once and one parallel region covers every product's 8-row groups, instead of two
// fork-joins per product. With `swiglu` (gate and up: count 2, the same features; the activation's
// rows), a task takes the same groups of both and leaves act(gate) * up in outs[0] for them, so the
// activation needs no pass (and no dispatch) of its own. False when the weights do not take this
// path.
bool group_avx512(const Tensor& x_in, const Tensor* weights, const Tensor* biases,
                  const Tensor* outs, int count, SwigluRows swiglu = nullptr) {
  const DType wt = weights[0].dtype();
  const int64_t n = x_in.size(0), k = x_in.size(1);
  static const bool disabled = std::getenv("ANVIL_NO_GROUPED") != nullptr;  // for A/B timing
  if (disabled || isa() < Isa::avx512 || !kUsePacked || n > kMaxGroupedRows) return false;
  QuantKind kind;
  if (!repacked_kind(wt, k, &kind)) return false;
  for (int i = 0; i < count; ++i) {
    if (weights[i].dtype() != wt) return false;
  }
  thread_local AlignedVector<int8_t> q;
  thread_local AlignedVector<float> d, ds;
  thread_local AlignedVector<int32_t> sums;
  thread_local std::vector<float> bias_slots[3];
  const int64_t kb = k / 32;
  const size_t nb = static_cast<size_t>(n * kb);
  Q8Rows xq{grow(q, static_cast<size_t>(n * k)), grow(d, nb), grow(sums, nb), grow(ds, nb), k};
  quantize_rows_q8_avx512(x_in.data<float>(), n, xq);
  std::shared_ptr<const PackedWeights> packed[3];
  const float* bias[3] = {};
  int64_t first[4] = {0, 0, 0, 0};  // first[i]: the group index where product i starts
  for (int i = 0; i < count; ++i) {
    packed[i] = packed_weights(weights[i]);
    bias[i] = bias_f32(biases[i], bias_slots[i]);
    first[i + 1] = first[i] + packed[i]->groups;
  }
  // One row, or a few the 512-bit rows take: each thread's pieces continue its lanes
  // (side_by_side.h), the products' parts of a piece read side by side.
  const bool lanes = kInt8Avx512.lanes_take(kind, n, xq);
  if (swiglu) {
    const int64_t o = weights[0].size(0), groups = packed[0]->groups;
    float* gate = outs[0].data<float>();
    float* up = outs[1].data<float>();
    const auto pair = [&](int64_t g0, int64_t g1) {
      gemm_packed_avx512(kind, packed[0]->data, packed[0]->block_bytes, o, g0, g1, xq, n, bias[0],
                         gate, o);
      gemm_packed_avx512(kind, packed[1]->data, packed[1]->block_bytes, o, g0, g1, xq, n, bias[1],
                         up, o);
      const int64_t f0 = g0 * kPackRows, f1 = std::min(o, g1 * kPackRows);
      for (int64_t r = 0; r < n; ++r) {
        swiglu(gate + r * o + f0, up + r * o + f0, gate + r * o + f0, f1 - f0);
      }
    };
    if (lanes) {
      cpu::stream_for_lanes(groups, [&](const Lanes& piece) {
        packed_lanes_avx512(kind, packed[0]->data, packed[0]->block_bytes, o, piece, xq, n, bias[0],
                            gate, o);
        packed_lanes_avx512(kind, packed[1]->data, packed[1]->block_bytes, o, piece, xq, n, bias[1],
                            up, o);
        for (int i = 0; i < piece.count; ++i) {
          const int64_t f0 = piece.begin[i] * kPackRows, f1 = std::min(o, piece.end[i] * kPackRows);
          for (int64_t r = 0; r < n; ++r) {
            swiglu(gate + r * o + f0, up + r * o + f0, gate + r * o + f0, f1 - f0);
          }
        }
      });
    } else if (n == 1) {
      cpu::stream_for(groups, pair);
    } else {
      cpu::parallel_for(groups, 1, pair, kPrefillChunks);
    }
    return true;
  }
  const auto products = [&](int64_t g0, int64_t g1) {
    for (int i = 0; i < count; ++i) {
      const int64_t s0 = std::max(g0, first[i]) - first[i];
      const int64_t s1 = std::min(g1, first[i + 1]) - first[i];
      if (s0 >= s1) continue;
      const int64_t o = weights[i].size(0);
      gemm_packed_avx512(kind, packed[i]->data, packed[i]->block_bytes, o, s0, s1, xq, n, bias[i],
                         outs[i].data<float>(), o);
    }
  };
  if (lanes) {
    cpu::stream_for_lanes(first[count], [&](const Lanes& piece) {
      for (int i = 0; i < count; ++i) {
        const Lanes part = clip_lanes(piece, first[i], first[i + 1]);
        const int64_t o = weights[i].size(0);
        packed_lanes_avx512(kind, packed[i]->data, packed[i]->block_bytes, o, part, xq, n, bias[i],
                            outs[i].data<float>(), o);
      }
    });
  } else if (n == 1) {
    cpu::stream_for(first[count], products);
  } else {
    cpu::parallel_for(first[count], 1, products, kPrefillChunks);
  }
  return true;
}

// Whether prefill's products of these weights take the grouped paths below: AVX-512, repacked
// weights of one type, more rows than the grouped decode products take, and not AMX's tiles.
bool prefill_groupable(int64_t n, int64_t k, const Tensor* weights, int count, QuantKind* kind) {
  if (isa() < Isa::avx2 || !kUsePacked || n <= kMaxGroupedRows) return false;
  if (!repacked_kind(weights[0].dtype(), k, kind)) return false;
  for (int i = 1; i < count; ++i) {
    if (weights[i].dtype() != weights[0].dtype()) return false;
  }
  return !(isa() >= Isa::amx && n >= kAmxMinRows && amx_takes(*kind));
}

// Prefill rows quantized (and interleaved for the 512-bit tiles where the level has them), once
// for all the products that read them.
Q8Rows quantize_prefill(const Int8Kernels& kern, const Tensor& x_in, QuantKind kind) {
  const int64_t n = x_in.size(0);
  Q8Rows xq = quantize_activations(kern, x_in.data<float>(), n, x_in.size(1));
  attach_wide_tiles(kern, kind, n, xq);
  return xq;
}

// One parallel region over a group of products split in units of `unit_rows` output features
// (first[i]: the unit where product i starts, first[count] the total): run(i, u0, u1) makes units
// [u0, u1) of product i. With `swiglu` (gate and up: count 2, the same features) a task makes the
// same units of both, then applies SwiGLU to those features of every row while they are in its
// cache (as swiglu_prefill does for the vector tiles).
template <class Run>
void run_group(const int64_t* first, int count, SwigluRows swiglu, int64_t unit_rows, int64_t n,
               const Tensor* outs, Run&& run) {
  const auto tasks = [&](int64_t q0, int64_t q1) {
    for (int i = 0; i < (swiglu ? 2 : count); ++i) {
      const int64_t at = swiglu ? 0 : first[i];
      const int64_t u0 = std::max(q0, at) - at,
                    u1 = std::min(q1, swiglu ? first[1] : first[i + 1]) - at;
      if (u0 < u1) run(i, u0, u1);
    }
    if (!swiglu) return;
    const int64_t o = outs[0].size(1), f0 = unit_rows * q0, f1 = std::min(o, unit_rows * q1);
    float* gate = outs[0].data<float>();
    const float* up = outs[1].data<float>();
    for (int64_t r = 0; r < n; ++r) {
      swiglu(gate + r * o + f0, up + r * o + f0, gate + r * o + f0, f1 - f0);
    }
  };
  cpu::parallel_for(swiglu ? first[1] : first[count], 1, tasks, kPrefillChunks);
}

// Prefill's q, k and v, or gate and up, on AMX: the rows packed once for all the products and
// one parallel region over all their pairs of panels (run_group, SwiGLU included). False when a
// weight does not take AMX.
bool group_amx(const Tensor& x_in, const Tensor* weights, const Tensor* biases, const Tensor* outs,
               int count, SwigluRows swiglu = nullptr) {
  const int64_t n = x_in.size(0), k = x_in.size(1);
  AmxWeights w[3];
  std::shared_ptr<const PackedWeights> keep[3];
  thread_local std::vector<float> bias_slots[3];
  const float* bias[3] = {};
  int64_t first[4] = {0, 0, 0, 0};  // first[i]: the panel pair where product i starts
  for (int i = 0; i < count; ++i) {
    if (!amx_weights(weights[i], n, k, &w[i], &keep[i])) return false;
    bias[i] = bias_f32(biases[i], bias_slots[i]);
    first[i + 1] = first[i] + ((w[i].rows + 15) / 16 + 1) / 2;
  }
  const uint16_t* tiles = amx_rows(x_in.data<float>(), n, k);
  // A unit is a pair of 16-row panels (32 features).
  run_group(first, count, swiglu, 32, n, outs, [&](int i, int64_t u0, int64_t u1) {
    const int64_t o = w[i].rows, panels = (o + 15) / 16;
    gemm_amx(w[i], 2 * u0, std::min(panels, 2 * u1), tiles, n, bias[i], outs[i].data<float>(), o);
  });
  return true;
}

// Prefill's q, k and v (more rows than the grouped decode products take): the activations
// quantized and interleaved once, and one parallel region over all the products' spans of
// groups (wide_span_groups) instead of three (k and v are small: a region of their own each was
// mostly its fork and join). The same kernels on the same activations as the products one by one.
bool group_prefill(const Tensor& x_in, const Tensor* weights, const Tensor* biases,
                   const Tensor* outs, int count) {
  const int64_t n = x_in.size(0), k = x_in.size(1);
  QuantKind kind;
  if (!prefill_groupable(n, k, weights, count, &kind)) return false;
  const Int8Kernels& kern = int8_kernels();
  thread_local std::vector<float> bias_slots[3];
  const Q8Rows xq = quantize_prefill(kern, x_in, kind);
  std::shared_ptr<const PackedWeights> packed[3];
  const float* bias[3] = {};
  const int64_t span = prefill_span(kern, kind);
  int64_t first[4] = {0, 0, 0, 0};  // first[i]: the span of groups where product i starts
  for (int i = 0; i < count; ++i) {
    packed[i] = packed_weights(weights[i]);
    bias[i] = bias_f32(biases[i], bias_slots[i]);
    first[i + 1] = first[i] + (packed[i]->groups + span - 1) / span;
  }
  cpu::parallel_for(
      first[count], 1,
      [&](int64_t p0, int64_t p1) {
        for (int i = 0; i < count; ++i) {
          const int64_t s0 = std::max(p0, first[i]) - first[i];
          const int64_t s1 = std::min(p1, first[i + 1]) - first[i];
          if (s0 >= s1) continue;
          const int64_t o = weights[i].size(0);
          kern.packed(kind, packed[i]->data, packed[i]->block_bytes, o, span * s0,
                      std::min(packed[i]->groups, span * s1), xq, n, bias[i], outs[i].data<float>(),
                      o);
        }
      },
      kPrefillChunks);
  return true;
}

// Prefill's gate and up (more rows than the grouped products take): the activations quantized
// and interleaved once for both, then one parallel region over spans of groups in which a task
// multiplies the same groups of gate and of up and applies SwiGLU to that block of features of
// every row while it is in its cache. The composed ops quantized the activations twice, forked
// twice, and made a third pass over two [rows, intermediate] buffers that had left the cache
// (~5% of a Qwen2.5-0.5B prefill of 128 tokens). The same kernels on the same quantized
// activations: the results are the composed ops'. False when the weights do not take it.
bool swiglu_prefill(const Tensor& x_in, const ops::LinearSwigluArgs& a) {
  const int64_t n = x_in.size(0), k = x_in.size(1), o = a.gate.size(0);
  const Tensor weights[2] = {a.gate, a.up};
  QuantKind kind;
  if (!prefill_groupable(n, k, weights, 2, &kind)) return false;
  const Int8Kernels& kern = int8_kernels();
  const SwigluRows swiglu = glu_rows(a.act);  // isa() >= avx2 here (prefill_groupable)
  thread_local std::vector<float> bias_slots[2];
  const Q8Rows xq = quantize_prefill(kern, x_in, kind);
  const auto gate = packed_weights(a.gate), up = packed_weights(a.up);
  const float* gate_bias = bias_f32(a.gate_bias, bias_slots[0]);
  const float* up_bias = bias_f32(a.up_bias, bias_slots[1]);
  float* g = a.out.data<float>();
  float* u = a.scratch.data<float>();
  const int64_t span = prefill_span(kern, kind);
  cpu::parallel_for((gate->groups + span - 1) / span, 1,
                    [&](int64_t p0, int64_t p1) {
                      const int64_t g0 = span * p0, g1 = std::min(gate->groups, span * p1);
                      kern.packed(kind, gate->data, gate->block_bytes, o, g0, g1, xq, n, gate_bias,
                                  g, o);
                      kern.packed(kind, up->data, up->block_bytes, o, g0, g1, xq, n, up_bias, u, o);
                      const int64_t f0 = g0 * kPackRows, f1 = std::min(o, g1 * kPackRows);
                      for (int64_t r = 0; r < n; ++r) {
                        swiglu(g + r * o + f0, u + r * o + f0, g + r * o + f0, f1 - f0);
                      }
                    },
                    kPrefillChunks);
  return true;
}

// Prefill's q/k/v, or gate and up, of bf16 weights without AMX: one parallel region over all
// their 64-row panels (run_group, SwiGLU included), as pair products against the rows packed
// into tiles once for all the products, or where those multiply slower (cpu_isa.h:
// bf16_pair_products; always below avx512bf16) as the widened float32 panels against the rows
// as they are. False below avx512 (the products then run one by one), when a weight is not bf16
// or the rows are decode's.
bool group_bf16(const Tensor& x_in, const Tensor* weights, const Tensor* biases, const Tensor* outs,
                int count, SwigluRows swiglu = nullptr) {
  const int64_t n = x_in.size(0), k = x_in.size(1);
  if (isa() < Isa::avx512 || n < kBf16TilesMinRows) return false;
  for (int i = 0; i < count; ++i) {
    if (weights[i].dtype() != DType::bf16) return false;
  }
  static_assert(kBf16PanelRows == kDensePanelRows, "both kernels split the rows in one unit");
  thread_local std::vector<float> bias_slots[3];
  const float* bias[3] = {};
  int64_t first[4] = {0, 0, 0, 0};  // first[i]: the panel where product i starts
  for (int i = 0; i < count; ++i) {
    bias[i] = bias_f32(biases[i], bias_slots[i]);
    first[i + 1] = first[i] + (weights[i].size(0) + kBf16PanelRows - 1) / kBf16PanelRows;
  }
  const float* x = x_in.data<float>();
  const bool pairs = bf16_pair_products();
  uint32_t* xt = nullptr;  // the rows in the pair products' tiles
  if (pairs) {
    thread_local AlignedVector<uint32_t> tiles_store;
    xt = grow(tiles_store, static_cast<size_t>(bf16_tile_words(n, k)));
    cpu::parallel_for((n + kBf16TileRows - 1) / kBf16TileRows, 1,
                      [&](int64_t t0, int64_t t1) { pack_bf16_tiles(x, n, k, t0, t1, xt); });
  }
  run_group(first, count, swiglu, kBf16PanelRows, n, outs, [&](int i, int64_t u0, int64_t u1) {
    const int64_t o = weights[i].size(0), r0 = u0 * kBf16PanelRows,
                  r1 = std::min(o, u1 * kBf16PanelRows);
    const auto* w = static_cast<const uint16_t*>(weights[i].raw()) + r0 * k;
    const float* b = bias[i] ? bias[i] + r0 : nullptr;
    float* out = outs[i].data<float>() + r0;
    if (pairs) {
      gemm_bf16dot_tiles_avx512(w, r1 - r0, xt, n, k, b, out, o);
    } else {
      gemm_bf16_avx512(w, r1 - r0, x, n, k, b, out, o);
    }
  });
  return true;
}

// linear_group and linear_swiglu: the input norm, then the products in one region where the
// weights allow (group_avx512 for decode's rows; group_amx, group_bf16, group_prefill and
// swiglu_prefill for a prompt's), else one by one.
void linear_group_kernel(const ops::LinearGroupArgs& a) {
  const Tensor& in = a.norm_weight.defined() ? a.normed : a.x;
  if (a.norm_weight.defined()) ops::rms_norm(a.x, a.norm_weight, a.eps, a.normed);
  if (group_avx512(in, a.weights, a.biases, a.outs, a.count)) return;
  if (group_amx(in, a.weights, a.biases, a.outs, a.count)) return;
  if (group_bf16(in, a.weights, a.biases, a.outs, a.count)) return;
  if (group_prefill(in, a.weights, a.biases, a.outs, a.count)) return;
  for (int i = 0; i < a.count; ++i) ops::linear(in, a.weights[i], a.biases[i], a.outs[i]);
}

void linear_swiglu_kernel(const ops::LinearSwigluArgs& a) {
  const Tensor& in = a.norm_weight.defined() ? a.normed : a.x;
  if (a.norm_weight.defined()) ops::rms_norm(a.x, a.norm_weight, a.eps, a.normed);
  const Tensor weights[2] = {a.gate, a.up}, biases[2] = {a.gate_bias, a.up_bias};
  const Tensor outs[2] = {a.out, a.scratch};
  if (group_avx512(in, weights, biases, outs, 2, glu_rows(a.act))) return;
  if (group_amx(in, weights, biases, outs, 2, glu_rows(a.act))) return;
  if (group_bf16(in, weights, biases, outs, 2, glu_rows(a.act))) return;
  if (swiglu_prefill(in, a)) return;
  ops::linear(in, a.gate, a.gate_bias, a.out);
  ops::linear(in, a.up, a.up_bias, a.scratch);
  ops::swiglu(a.out, a.scratch, a.out, a.act);
}

// residual += x @ W^T + b: on AVX-512 the add runs in the product's own parallel region (the
// composed op is a second pass and a second dispatch, over data already evicted by the weights);
// the sum is the same float addition the composed op makes.
void linear_add_kernel(const ops::LinearAddArgs& a) {
  const auto* res = static_cast<const uint8_t*>(a.residual.raw());
  const auto* x = static_cast<const uint8_t*>(a.x.raw());
  // Tasks would update the residual while others still read x: only for separate buffers.
  const bool separate = res + a.residual.nbytes() <= x || x + a.x.nbytes() <= res;
  if (separate && isa() >= Isa::avx512 &&
      linear_avx512({a.x, a.weight, a.bias, a.scratch}, a.residual.data<float>())) {
    return;
  }
  ops::linear(a.x, a.weight, a.bias, a.scratch);
  ops::add(a.residual, a.scratch, a.residual);
}

template <class W>
void linear_kernel(const ops::LinearArgs& a) {
  if (isa() >= Isa::avx512 && linear_avx512(a)) return;
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  const float* x = a.x.data<float>();
  float* out = a.out.data<float>();
  std::vector<float> bias;
  if (a.bias.defined()) bias = a.bias.to_f32_vector();
  if constexpr (std::is_same_v<W, void>) {
    if (isa() >= Isa::avx2 && linear_int8(a, int8_kernels(), nullptr)) return;
    if (QuantDotRows fused = quant_dot_rows(a.weight.dtype())) {
      linear_fused(a, fused, bias);
      return;
    }
  } else {
    if (isa() >= Isa::avx2) {
      linear_dense_avx2<W>(a, bias);
      return;
    }
  }
  const int64_t blocks = (o + kRowBlock - 1) / kRowBlock;
  // Enough work per chunk to outweigh waking a thread.
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, k * kRowBlock * n));
  cpu::parallel_for(
      blocks, grain,
      [&](int64_t b0, int64_t b1) {
        std::vector<float> widened;
        if constexpr (!std::is_same_v<W, float>) widened.resize(static_cast<size_t>(kRowBlock * k));
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t r0 = blk * kRowBlock, r1 = std::min(o, r0 + kRowBlock);
          const float* wf = widen_rows<W>(a, r0, r1, widened);
          for (int64_t row = 0; row < n; ++row) {
            const float* xr = x + row * k;
            float* orow = out + row * o;
            for (int64_t r = r0; r < r1; ++r) {
              float v = dot(xr, wf + (r - r0) * k, k);
              if (!bias.empty()) v += bias[r];
              orow[r] = v;
            }
          }
        }
      },
      4);
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_linear() {
  for (DType w : cpu::kCpuWeightTypes) {
    cpu::with_weight_type(w, [&]<class W>() {
      register_kernel<ops::LinearArgs>(ops::kLinear, DeviceType::cpu, DType::f32, w,
                                       &cpu::linear_kernel<W>);
    });
  }
  for (DType w : cpu::kCpuQuantTypes) {
    register_kernel<ops::LinearArgs>(ops::kLinear, DeviceType::cpu, DType::f32, w,
                                     &cpu::linear_kernel<void>);
  }
  for (DType w : cpu::kCpuWeightTypes) {
    register_kernel<ops::LinearAddArgs>(ops::kLinearAdd, DeviceType::cpu, DType::f32, w,
                                        &cpu::linear_add_kernel);
  }
  for (DType w : cpu::kCpuQuantTypes) {
    register_kernel<ops::LinearAddArgs>(ops::kLinearAdd, DeviceType::cpu, DType::f32, w,
                                        &cpu::linear_add_kernel);
  }
  // Grouped products for the types the repacked VNNI kernels take, and bf16 for AMX's tiles
  // (one packing of the rows for q/k/v, SwiGLU applied where gate/up are made); what a kernel
  // cannot group it runs one by one, as the composed op does.
  for (DType w : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q4_k,
                  DType::q5_k, DType::q6_k, DType::bf16}) {
    register_kernel<ops::LinearGroupArgs>(ops::kLinearGroup, DeviceType::cpu, DType::f32, w,
                                          &cpu::linear_group_kernel);
    for (const char* op : {ops::kLinearSwiglu, ops::kLinearSwigluGeluTanh}) {
      register_kernel<ops::LinearSwigluArgs>(op, DeviceType::cpu, DType::f32, w,
                                             &cpu::linear_swiglu_kernel);
    }
  }
}

}  // namespace anvil
