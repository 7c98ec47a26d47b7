// A one-token decode step's layers on the CPU as one team region: every thread runs each layer's
// phases (norm + q/k/v; attention tasks, each with its own RoPE and the one holding the new
// position writing the caches; the merge + o + residual; norm + gate/up + SwiGLU; down +
// residual), claiming the phase's work in chunks and waiting, before the next phase, only for
// chunks other members hold. The composed ops cost a SmolLM2-135M step ~5 fork-joins, ~12 op
// dispatches and the serial parts (norms, activation quantization, RoPE, the attention merge,
// SwiGLU) per layer, with the second thread idle through those (16% of its time); here each
// member normalises and quantizes the small activation rows, and merges the attention row, for
// itself, and the rest is shared.
//
// The arithmetic is the composed ops': the same product kernel over the same quantized
// activations, the same norm and RoPE code (row_kernels.h), the same attention kernel and key
// ranges, so the results match them (decode_layers_cpu_test compares the two). Float32, bf16
// and IEEE half weights take the row kernels the composed product takes at the step's ISA level
// on float32 activations (bf16-rounded ones for bf16 weights at avx512bf16). Weights outside
// the path (other types, non-float32 norms or biases, batches, eager attention) take the
// composed ops.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "anvil/error.h"
#include "backends/cpu/attention_avx2.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/cpu_threads.h"
#include "backends/cpu/int8_kernels.h"
#include "backends/cpu/kernels_avx512.h"
#include "backends/cpu/kernels_bf16dot.h"
#include "backends/cpu/quant_dot_kernels.h"
#include "backends/cpu/repack.h"
#include "backends/cpu/row_kernels.h"
#include "backends/cpu/side_by_side.h"
#include "backends/cpu/stream_split.h"
#include "backends/cpu/swiglu_rows.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cpu {
namespace {

constexpr int64_t kGroupRows = kPackRows;  // rows per group of the repacked weights
constexpr int64_t kMaxGroup = 16;          // query heads per KV head the attention kernel takes
// Per layer: attention (RoPE and the merge inside), and the residual adds of the normalised
// attention and MLP outputs where a layer has output norms (Gemma 2 / 3; empty otherwise).
constexpr size_t kPhases = 3;
constexpr size_t kProducts = 4;  // per layer: q/k/v, o, gate/up, down

// A product of the step: repacked weights (Q8_0 / Q4_0 / Q4_1), else the stored rows of any
// other block type the int8 kernels take (llama.cpp's K-quant files mix Q5_0, Q4_K, Q6_K...),
// else float32 / bf16 / f16 rows (`dense`); bias (float32 or none); output rows, in groups of 8
// for the split.
struct Product {
  std::shared_ptr<const PackedWeights> packed;
  const uint8_t* stored = nullptr;
  const void* dense = nullptr;
  DType dense_type = DType::f32;
  size_t row_bytes = 0;
  QuantKind kind = QuantKind::q8_0;
  const float* bias = nullptr;
  int64_t rows = 0, groups = 0, k = 0;
};

bool is_dense(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

bool make_product(const Tensor& w, const Tensor& bias, int64_t k, Product* p) {
  if (!w.defined() || w.dim() != 2 || w.size(1) != k || k % 32 != 0) return false;
  if (bias.defined() && (bias.dtype() != DType::f32 || bias.numel() != w.size(0))) return false;
  p->bias = bias.defined() ? bias.data<float>() : nullptr;
  p->rows = w.size(0);
  p->groups = (p->rows + kGroupRows - 1) / kGroupRows;
  p->k = k;
  if (is_dense(w.dtype())) {
    p->dense = w.raw();
    p->dense_type = w.dtype();
    return true;
  }
  if (!int8_kind(w.dtype(), k, &p->kind)) return false;
  if (is_repacked(w.dtype())) {
    p->packed = packed_weights(w);
  } else {
    p->stored = static_cast<const uint8_t*>(w.raw());
    p->row_bytes = dtype_nbytes(w.dtype(), k);
  }
  return true;
}

// The bytes of one group of a product's rows.
size_t bytes_per_group(const Product& p) {
  if (p.packed) return static_cast<size_t>(p.packed->kb) * p.packed->block_bytes;
  if (p.dense) return static_cast<size_t>(kGroupRows * p.k) * dtype_size(p.dense_type);
  return static_cast<size_t>(kGroupRows) * p.row_bytes;
}

// The fewest groups a piece of a product's split holds: ~32 KB of weights (a few microseconds of
// a thread's stream), so the last pieces are short for every weight type.
int64_t min_piece(size_t group_bytes) {
  constexpr size_t kPieceBytes = 32 * 1024;
  return static_cast<int64_t>(std::max<size_t>(1, kPieceBytes / std::max<size_t>(1, group_bytes)));
}

bool f32_vector(const Tensor& t, int64_t n) {
  return t.defined() && t.dtype() == DType::f32 && t.numel() == n;
}

// A phase's activation row in the forms its products take: float32 (dense weights), int8 blocks
// (the int8 kernels) and bf16 (bf16 weights at avx512bf16); a form no product uses is not made.
struct RowForms {
  const float* f32 = nullptr;
  Q8Rows q8{};
  const uint16_t* bf16 = nullptr;
};

// The kernels of the ISA level the step runs at (AVX-512, AVX-VNNI or AVX2): the composed ops'
// own, so the results stay theirs.
struct IsaKernels {
  Isa level;
  const Int8Kernels* int8;
  void (*attention_f32)(int, const float* const*, const int64_t*, int64_t, const float*,
                        const float*, const int32_t*, int64_t, int64_t, int64_t, float, float,
                        float*, float*, float*, float*);
  void (*attention_f16)(int, const float* const*, const int64_t*, int64_t, const uint16_t*,
                        const uint16_t*, const int32_t*, int64_t, int64_t, int64_t, float, float,
                        float*, float*, float*, float*);
  SwigluRows swiglu;

  void attention(int rows, const float* const* q, const int64_t* last, int64_t window,
                 const float* k, const float* v, const int32_t* mask, int64_t begin, int64_t end,
                 int64_t dim, float scale, float softcap, float* acc, float* m, float* l,
                 float* scratch) const {
    attention_f32(rows, q, last, window, k, v, mask, begin, end, dim, scale, softcap, acc, m, l,
                  scratch);
  }
  void attention(int rows, const float* const* q, const int64_t* last, int64_t window,
                 const uint16_t* k, const uint16_t* v, const int32_t* mask, int64_t begin,
                 int64_t end, int64_t dim, float scale, float softcap, float* acc, float* m,
                 float* l, float* scratch) const {
    attention_f16(rows, q, last, window, k, v, mask, begin, end, dim, scale, softcap, acc, m, l,
                  scratch);
  }
  /// Whether bf16 weights multiply bf16-rounded activations (as the composed product does).
  bool bf16_pairs() const { return level >= Isa::avx512bf16; }

  // Rows [r0, r1) of a float32 / bf16 / f16 product into out, as linear's decode path computes
  // them at this level (its 4-row tiles at AVX-512, whole rows at AVX2, then the bias).
  void dense(const Product& p, int64_t r0, int64_t r1, const RowForms& x, float* out) const {
    const int64_t n = r1 - r0, k = p.k;
    const float* bias = p.bias ? p.bias + r0 : nullptr;
    const auto* half = static_cast<const uint16_t*>(p.dense) + r0 * k;
    const bool bf16 = p.dense_type == DType::bf16;
    if (p.dense_type == DType::f32) {
      const float* w = static_cast<const float*>(p.dense) + r0 * k;
      if (level >= Isa::avx512) return gemm_f32_avx512(w, n, x.f32, 1, k, bias, out + r0, p.rows);
      dot_rows_f32_avx2(w, n, x.f32, k, out + r0);
    } else if (bf16 && bf16_pairs()) {
      return gemm_bf16dot_avx512(half, n, x.bf16, 1, k, bias, out + r0, p.rows);
    } else if (level >= Isa::avx512) {
      return (bf16 ? gemm_bf16_avx512 : gemm_f16_avx512)(half, n, x.f32, 1, k, bias, out + r0,
                                                         p.rows);
    } else {
      (bf16 ? dot_rows_bf16_avx2 : dot_rows_f16_avx2)(half, n, x.f32, k, out + r0);
    }
    if (bias) {
      for (int64_t r = 0; r < n; ++r) out[r0 + r] += bias[r];
    }
  }
};

IsaKernels isa_kernels(ops::GluActivation act) {
  if (isa() >= Isa::avx512) {
    return {isa(), &int8_kernels(), &attention_rows_partial_avx512, &attention_rows_partial_avx512,
            glu_rows(act)};
  }
  return {isa(), &int8_kernels(), &attention_rows_partial_avx2, &attention_rows_partial_avx2,
          glu_rows(act)};
}

// The forms of its activation row a product takes.
struct Forms {
  bool int8 = false, bf16 = false;
  Forms& operator+=(const Forms& o) {
    int8 |= o.int8;
    bf16 |= o.bf16;
    return *this;
  }
};
Forms forms_of(const Product& p, const IsaKernels& kern) {
  if (!p.dense) return {true, false};
  return {false, p.dense_type == DType::bf16 && kern.bf16_pairs()};
}

struct Layer {
  Product q, k, v, o, gate, up, down;
  Forms forms[kProducts];  // per product phase: q/k/v, o, gate/up, down
  bool lanes[kProducts];   // whether the phase's split hands out lanes (reads_side_by_side)
  // Input and post-attention norms (null where the model has none: OLMo 2), Qwen3's per-head
  // q/k norms, OLMo 2's q/k norms over whole projections.
  const float *input_norm = nullptr, *post_norm = nullptr, *q_norm = nullptr, *k_norm = nullptr;
  const float *q_full_norm = nullptr, *k_full_norm = nullptr;
  void *k_cache, *v_cache;
  int64_t window = 0;  // sliding window (ops::AttentionArgs::window)
  // Output norms (ops::DecoderLayerTensors::attn_out_norm / mlp_out_norm), else null.
  const float *attn_out_norm = nullptr, *mlp_out_norm = nullptr;
  // The layer's own RoPE frequencies (ops::DecoderLayerTensors::inv_freq), else null.
  const float* inv_freq = nullptr;
  float rope_scaling = 1.0f;
};

// Groups [g0, g1) of a product into out (one activation row).
void run_groups(const IsaKernels& kern, const Product& p, int64_t g0, int64_t g1, const RowForms& x,
                float* out) {
  if (g0 >= g1) return;
  if (p.packed) {
    kern.int8->packed(p.kind, p.packed->data, p.packed->block_bytes, p.rows, g0, g1, x.q8, 1,
                      p.bias, out, p.rows);
    return;
  }
  const int64_t r0 = g0 * kGroupRows, r1 = std::min(p.rows, g1 * kGroupRows);
  if (p.dense) {
    kern.dense(p, r0, r1, x, out);
    return;
  }
  kern.int8->gemm(p.kind, p.stored + static_cast<size_t>(r0) * p.row_bytes, p.row_bytes, r1 - r0,
                  x.q8, 1, p.bias ? p.bias + r0 : nullptr, out + r0, p.rows);
}

// Whether a product's split hands each member's pieces as lanes that continue from piece to
// piece: the repacked rows that the 512-bit kernels read as streams side by side
// (side_by_side.h). Not bf16's rows, which read as four streams too but measured 2-5% slower
// in lanes than in each piece's quarters (docs/perf.md, thirtieth session).
bool reads_side_by_side(const Product& p, const IsaKernels& kern) {
  return p.packed && kern.int8->decode_reads_lanes();
}

// The groups of a claimed piece of a product into out: the lanes side by side where the
// phase's split has them (every product of the phase reads_side_by_side), else each lane (the
// whole piece, or its part in this product) as one range.
void run_piece(const IsaKernels& kern, const Product& p, const Lanes& piece, bool lanes,
               const RowForms& x, float* out) {
  if (lanes && piece.count > 0) {
    kern.int8->packed_lanes(p.kind, p.packed->data, p.packed->block_bytes, p.rows, piece, x.q8, 1,
                            p.bias, out, p.rows);
    return;
  }
  for (int i = 0; i < piece.count; ++i) run_groups(kern, p, piece.begin[i], piece.end[i], x, out);
}

// out[f] += proj[f] * scale (Granite's residual multiplier; 1 for the others) for the rows of
// the groups of `lanes` below h.
void add_lane_rows(const Lanes& lanes, const float* proj, int64_t h, float scale, float* x) {
  for (int i = 0; i < lanes.count; ++i) {
    const int64_t f1 = std::min(h, lanes.end[i] * kGroupRows);
    if (scale == 1.0f) {
      for (int64_t f = lanes.begin[i] * kGroupRows; f < f1; ++f) x[f] += proj[f];
    } else {
      for (int64_t f = lanes.begin[i] * kGroupRows; f < f1; ++f) x[f] += proj[f] * scale;
    }
  }
}

// One phase of a layer: its work in chunks that the members claim as they come free, and the
// count of chunks finished. A member waits only for chunks that another has claimed, never for
// a member that has not arrived: under a busier machine than its cores (another process on one
// of them), barriers made every phase wait a scheduler time slice for a preempted member, and
// decode ran at half the composed ops' speed; now a preempted member's share is taken by the
// others, as the pool does for the composed ops.
class Phase {
 public:
  void reset(int64_t items, int64_t chunk) {
    items_ = items;
    chunk_ = std::max<int64_t>(1, chunk);
    chunks_ = (items + chunk_ - 1) / chunk_;
    next_.store(0, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
  }
  // The next chunk [begin, end), or false when all are claimed.
  bool claim(int64_t* begin, int64_t* end) {
    if (next_.load(std::memory_order_relaxed) >= chunks_) return false;
    const int64_t c = next_.fetch_add(1, std::memory_order_relaxed);
    if (c >= chunks_) return false;
    *begin = c * chunk_;
    *end = std::min(items_, *begin + chunk_);
    return true;
  }
  void finished() { done_.fetch_add(1, std::memory_order_release); }
  // Returns once every chunk is finished; their writes are then visible.
  void wait() const {
    spin_until([&] { return done_.load(std::memory_order_acquire) >= chunks_; });
  }

 private:
  int64_t items_ = 0, chunk_ = 1, chunks_ = 0;
  alignas(64) std::atomic<int64_t> next_{0};
  alignas(64) std::atomic<int64_t> done_{0};
};

// One member's activation rows quantized for the products.
struct Quantized {
  std::vector<int8_t> q;
  std::vector<float> d, ds;
  std::vector<int32_t> s;
  Q8Rows rows(const IsaKernels& kern, const float* x, int64_t k) {
    q.resize(static_cast<size_t>(k));
    d.resize(static_cast<size_t>(k / 32));
    ds.resize(static_cast<size_t>(k / 32));
    s.resize(static_cast<size_t>(k / 32));
    const Q8Rows r{q.data(), d.data(), s.data(), ds.data(), k};
    kern.int8->quantize(x, 1, r);
    return r;
  }
};

struct MemberScratch {
  std::vector<float> normed;
  std::vector<float> heads;  // an attention task's query heads (and new key), normed and rotated
  std::vector<float> attn;   // the attention row o multiplies: the tasks' key ranges merged
  Quantized xq;
  std::vector<uint16_t> rounded;  // the row as bf16, for bf16 weights at avx512bf16
  // The row x (k values) in the forms `use` names.
  RowForms forms(const IsaKernels& kern, const float* x, int64_t k, const Forms& use) {
    RowForms f;
    f.f32 = x;
    if (use.int8) f.q8 = xq.rows(kern, x, k);
    if (use.bf16) {
      rounded.resize(static_cast<size_t>(k));
      round_rows_bf16_avx512(x, 1, k, rounded.data());
      f.bf16 = rounded.data();
    }
    return f;
  }
};

// ANVIL_CPU_DECODE_PROFILE=1: each member's time in each part of a layer (its share of a phase's
// work, then its wait for the others' chunks), and the layers' time per step, summed over the
// steps and printed at exit: where a step's time goes beside the weights' stream.
constexpr int kMarks = 11;
const char* const kMarkNames[kMarks] = {"q/k/v",  "  wait",  "attention", "  wait", "merge", "o",
                                        "  wait", "gate/up", "  wait",    "down",   "  wait"};
constexpr int kMaxProfiled = 8;

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

struct DecodeProfile {
  bool on = std::getenv("ANVIL_CPU_DECODE_PROFILE") != nullptr;
  std::atomic<int64_t> steps{0}, layers{0};
  std::atomic<uint64_t> step_ns{0};
  std::atomic<uint64_t> ns[kMaxProfiled][kMarks] = {};
  ~DecodeProfile() {
    if (!on || steps == 0) return;
    const auto per = [](uint64_t total, int64_t n) {
      return static_cast<double>(total) / 1e3 / static_cast<double>(n);
    };
    std::fprintf(stderr,
                 "cpu decode_layers profile: %lld steps, the layers %.1f us per step; per layer "
                 "(mean), each member's us:\n",
                 static_cast<long long>(steps.load()), per(step_ns, steps));
    for (int m = 0; m < kMarks; ++m) {
      std::fprintf(stderr, "  %-11s", kMarkNames[m]);
      for (int t = 0; t < kMaxProfiled; ++t) {
        if (ns[t][0] != 0) std::fprintf(stderr, " %8.2f", per(ns[t][m], layers));
      }
      std::fprintf(stderr, "\n");
    }
  }
};
DecodeProfile& decode_profile() {
  static DecodeProfile p;
  return p;
}

// A member's clock through the layers: mark(i) adds the time since the previous mark to part i.
class MemberClock {
 public:
  MemberClock(int member, bool on) : member_(member < kMaxProfiled && on ? member : -1) {
    if (member_ >= 0) last_ = now_ns();
  }
  void mark(int part) {
    if (member_ < 0) return;
    const uint64_t t = now_ns();
    local_[part] += t - last_;
    last_ = t;
  }
  ~MemberClock() {
    if (member_ < 0) return;
    for (int m = 0; m < kMarks; ++m) {
      decode_profile().ns[member_][m].fetch_add(local_[m], std::memory_order_relaxed);
    }
  }

 private:
  int member_;
  uint64_t last_ = 0, local_[kMarks] = {};
};

template <class KV>
void run_layers(const ops::DecodeLayersArgs& a, const std::vector<Layer>& layers,
                const IsaKernels& kern) {
  const int64_t h = a.x.size(1), nh = a.heads, nkv = a.kv_heads, hd = a.head_dim;
  const int64_t group = nh / nkv, half = hd / 2, inter = a.gate.size(1);
  const int64_t past = a.past_on_device.defined() ? *a.past_on_device.data<int32_t>() : a.past;
  const int64_t total = past + 1, cap = a.layers[0].k_cache.size(2);
  float* x = a.x.data<float>();
  float* q = a.q.data<float>();
  float* k = a.k.data<float>();
  float* v = a.v.data<float>();
  float* proj = a.proj.data<float>();
  float* gate = a.gate.data<float>();
  float* up = a.up.data<float>();
  const int32_t* mask = a.key_mask.data<int32_t>();
  thread_local std::vector<float> cosv, sinv;  // the token's angles, as rope_store's
  cosv.resize(static_cast<size_t>(half));
  sinv.resize(static_cast<size_t>(half));
  rope_angles(a.positions.data<int32_t>()[0], a.inv_freq.data<float>(), half, a.rope_scaling,
              cosv.data(), sinv.data());
  // The members reach the caller's thread_local buffers through pointers (inside the lambda the
  // names would denote each member thread's own, empty, instances).
  // Layers with RoPE of their own (Gemma 3's sliding layers): their angles, per layer.
  const size_t n_layers = layers.size();
  thread_local std::vector<float> own_angles;
  thread_local std::vector<const float*> layer_cos, layer_sin;
  own_angles.resize(n_layers * 2 * static_cast<size_t>(half));
  layer_cos.assign(n_layers, cosv.data());
  layer_sin.assign(n_layers, sinv.data());
  for (size_t li = 0; li < n_layers; ++li) {
    if (!layers[li].inv_freq) continue;
    float* c = own_angles.data() + li * 2 * static_cast<size_t>(half);
    rope_angles(a.positions.data<int32_t>()[0], layers[li].inv_freq, half, layers[li].rope_scaling,
                c, c + half);
    layer_cos[li] = c;
    layer_sin[li] = c + half;
  }
  const float* const* cos_all = layer_cos.data();
  const float* const* sin_all = layer_sin.data();
  const int members = team_size();
  // The attention op's key split, merged the same way, so the results are the op's: per layer,
  // over the keys its window leaves (from first_key on).
  struct LayerKeys {
    int64_t first_key, parts, per_part;
  };
  thread_local std::vector<LayerKeys> layer_keys;
  layer_keys.resize(n_layers);
  int64_t max_parts = 1;
  for (size_t li = 0; li < n_layers; ++li) {
    const int64_t first_key = ops::first_visible_key(past, layers[li].window);
    const KeySplit split = decode_key_split(total - first_key, nkv, threads());
    layer_keys[li] = {first_key, split.parts, split.per_part};
    max_parts = std::max(max_parts, split.parts);
  }
  const LayerKeys* keys_all = layer_keys.data();
  const int64_t state = group * (hd + 2);
  thread_local std::vector<float> states;
  thread_local std::vector<MemberScratch> scratch;
  states.resize(static_cast<size_t>(nkv * max_parts * state));
  if (scratch.size() < static_cast<size_t>(members)) scratch.resize(static_cast<size_t>(members));
  float* st_all = states.data();
  MemberScratch* scratch_all = scratch.data();
  // Five phases per layer, set before the region (no member can claim from a phase another
  // is still resetting). The four products are split so that each member streams one run of
  // weight rows and takes pieces of the others' runs once its own is done (stream_split.h); the
  // attention tasks are claimed one by one.
  thread_local std::unique_ptr<Phase[]> phase_store;
  thread_local std::unique_ptr<StreamSplit[]> product_store;
  thread_local size_t layer_capacity = 0;
  if (layer_capacity < n_layers) {
    phase_store = std::make_unique<Phase[]>(kPhases * n_layers);
    product_store = std::make_unique<StreamSplit[]>(kProducts * n_layers);
    layer_capacity = n_layers;
  }
  for (size_t li = 0; li < n_layers; ++li) {
    const Layer& L = layers[li];
    Phase* ph = phase_store.get() + kPhases * li;
    StreamSplit* pr = product_store.get() + kProducts * li;
    const auto lanes = [&](int product) { return L.lanes[product] ? kDecodeStreams : 1; };
    pr[0].reset(L.q.groups + L.k.groups + L.v.groups, members, min_piece(bytes_per_group(L.q)),
                lanes(0));
    ph[0].reset(nkv * layer_keys[li].parts, 1);
    // A normalised output's residual add, in chunks of the hidden size (none without the norm).
    const int64_t fold_chunk = (h + 2 * members - 1) / (2 * members);
    ph[1].reset(L.attn_out_norm ? h : 0, fold_chunk);
    ph[2].reset(L.mlp_out_norm ? h : 0, fold_chunk);
    pr[1].reset(L.o.groups, members, min_piece(bytes_per_group(L.o)), lanes(1));
    pr[2].reset(L.gate.groups, members, min_piece(bytes_per_group(L.gate) + bytes_per_group(L.up)),
                lanes(2));
    pr[3].reset(L.down.groups, members, min_piece(bytes_per_group(L.down)), lanes(3));
  }
  Phase* phase_all = phase_store.get();
  const bool profiling = decode_profile().on;
  const uint64_t step_start = profiling ? now_ns() : 0;
  StreamSplit* product_all = product_store.get();

  auto member = [&](int64_t t64) {
    const int me = static_cast<int>(t64);
    MemberScratch& my = scratch_all[t64];
    // x += rms_norm(y) * w over the chunks of `phase` this member claims, y's scale taken once
    // over the whole finished product as the composed rms_norm and add compute it; then the
    // other members' chunks are waited for. Without a norm the products were added as they came.
    const auto fold_normed = [&](Phase& phase, const float* y, const float* w) {
      if (!w) return;
      float inv = 0.0f;
      bool scaled = false;
      int64_t e0 = 0, e1 = 0;
      for (; phase.claim(&e0, &e1); phase.finished()) {
        if (!scaled) {
          inv = rms_inverse(y, h, a.eps);
          scaled = true;
        }
        for (int64_t e = e0; e < e1; ++e) x[e] += w[e] * (y[e] * inv) * a.residual_scale;
      }
      phase.wait();
    };
    my.normed.resize(static_cast<size_t>(std::max(h, inter)));
    my.heads.resize(static_cast<size_t>((group + 1) * hd));
    my.attn.resize(static_cast<size_t>(nh * hd));
    int64_t c0 = 0, c1 = 0;
    Lanes piece;
    RowForms xf;
    MemberClock clock(me, profiling);
    for (size_t li = 0; li < layers.size(); ++li) {
      const Layer& L = layers[li];
      Phase* ph = phase_all + kPhases * li;
      StreamSplit* pr = product_all + kProducts * li;
      const int64_t first_key = keys_all[li].first_key, parts = keys_all[li].parts;
      const int64_t per_part = keys_all[li].per_part;
      const float* cos_p = cos_all[li];
      const float* sin_p = sin_all[li];
      // Input norm, q/k/v: the three products' groups as one range; a member normalises and
      // quantizes the row for itself once it has a chunk to use it on.
      const int64_t gq = L.q.groups, gk = L.k.groups, gv = L.v.groups;
      for (bool ready = false; pr[0].claim(me, &piece); pr[0].finished(lane_items(piece))) {
        if (!ready) {
          const float* in = x;
          if (L.input_norm) {
            rms_norm_row(x, L.input_norm, h, a.eps, my.normed.data());
            in = my.normed.data();
          }
          xf = my.forms(kern, in, h, L.forms[0]);
          ready = true;
        }
        run_piece(kern, L.q, clip_lanes(piece, 0, gq), L.lanes[0], xf, q);
        run_piece(kern, L.k, clip_lanes(piece, gq, gq + gk), L.lanes[0], xf, k);
        run_piece(kern, L.v, clip_lanes(piece, gq + gk, gq + gk + gv), L.lanes[0], xf, v);
      }
      clock.mark(0);
      pr[0].wait();
      clock.mark(1);
      // Attention: (kv head, key range) tasks. Each applies the q/k norms and RoPE to its
      // group's query heads for itself, and the one whose range holds this step's position
      // writes the new key and value into the caches before reading them: a phase of its own
      // for that work cost a layer its claims and a wait, and measured a few microseconds
      // slower a layer on Zen 4 (docs/perf.md, twentieth session).
      float q_inv = 0.0f, k_inv = 0.0f;  // OLMo 2: the whole projections' RMS factors
      for (bool scaled = false; ph[0].claim(&c0, &c1); ph[0].finished()) {
        if (L.q_full_norm && !scaled) {
          q_inv = rms_inverse(q, nh * hd, a.eps);
          k_inv = rms_inverse(k, nkv * hd, a.eps);
          scaled = true;
        }
        for (int64_t task = c0; task < c1; ++task) {
          // Claimed last key range first, one per KV head: those tasks also write the caches,
          // and claimed in (head, range) order they fell to alternate members, loading one.
          const int64_t part = parts - 1 - task / nkv, kh = task % nkv;
          const int64_t id = kh * parts + part;
          const int64_t t0 = first_key + part * per_part, t1 = std::min(total, t0 + per_part);
          const float* qs[kMaxGroup];
          int64_t last[kMaxGroup];
          for (int64_t i = 0; i < group; ++i) {
            float* row = my.heads.data() + i * hd;
            const int64_t at = (kh * group + i) * hd;
            if (L.q_full_norm) {
              rotated_slice(q + at, L.q_full_norm + at, q_inv, hd, cos_p, sin_p, row);
            } else {
              rotated_head(q + at, L.q_norm, hd, a.eps, cos_p, sin_p, row);
            }
            qs[i] = row;
            last[i] = past;
          }
          if (t0 <= past && past < t1) {
            float* key = my.heads.data() + group * hd;
            if (L.k_full_norm) {
              rotated_slice(k + kh * hd, L.k_full_norm + kh * hd, k_inv, hd, cos_p, sin_p, key);
            } else {
              rotated_head(k + kh * hd, L.k_norm, hd, a.eps, cos_p, sin_p, key);
            }
            const size_t at = static_cast<size_t>((kh * cap + past) * hd);
            write_cache_row(static_cast<KV*>(L.k_cache) + at, key, hd);
            write_cache_row(static_cast<KV*>(L.v_cache) + at, v + kh * hd, hd);
          }
          alignas(64) float work[kMaxGroup * kAttentionRunKeys];
          float* st = st_all + id * state;
          kern.attention(static_cast<int>(group), qs, last, L.window,
                         static_cast<const KV*>(L.k_cache) + kh * cap * hd,
                         static_cast<const KV*>(L.v_cache) + kh * cap * hd, mask, t0, t1, hd,
                         a.scale, a.softcap, st, st + group * hd, st + group * hd + group, work);
        }
      }
      clock.mark(2);
      ph[0].wait();
      clock.mark(3);
      // o, added into the residual rows as each chunk's groups come out. A member merges every
      // head's key ranges for itself before its first chunk (a few thousand multiply-adds),
      // which costs less than a phase of merge items and its wait.
      for (bool ready = false; pr[1].claim(me, &piece); pr[1].finished(lane_items(piece))) {
        if (!ready) {
          float* row = my.attn.data();
          for (int64_t head = 0; head < nh; ++head) {
            merge_key_ranges(st_all + (head / group) * parts * state, parts, state, group, hd,
                             head % group, row + head * hd);
          }
          clock.mark(4);
          xf = my.forms(kern, row, nh * hd, L.forms[1]);
          ready = true;
        }
        run_piece(kern, L.o, piece, L.lanes[1], xf, proj);
        if (!L.attn_out_norm) add_lane_rows(piece, proj, h, a.residual_scale, x);
      }
      clock.mark(5);
      pr[1].wait();
      fold_normed(ph[1], proj, L.attn_out_norm);
      clock.mark(6);
      // Post-attention norm, gate and up over the same groups, SwiGLU on them.
      for (bool ready = false; pr[2].claim(me, &piece); pr[2].finished(lane_items(piece))) {
        if (!ready) {
          const float* in = x;
          if (L.post_norm) {
            rms_norm_row(x, L.post_norm, h, a.eps, my.normed.data());
            in = my.normed.data();
          }
          xf = my.forms(kern, in, h, L.forms[2]);
          ready = true;
        }
        run_piece(kern, L.gate, piece, L.lanes[2], xf, gate);
        run_piece(kern, L.up, piece, L.lanes[2], xf, up);
        for (int i = 0; i < piece.count; ++i) {
          const int64_t f0 = piece.begin[i] * kGroupRows;
          const int64_t f1 = std::min(inter, piece.end[i] * kGroupRows);
          if (f1 > f0) kern.swiglu(gate + f0, up + f0, gate + f0, f1 - f0);
        }
      }
      clock.mark(7);
      pr[2].wait();
      clock.mark(8);
      // down, added into the residual.
      for (bool ready = false; pr[3].claim(me, &piece); pr[3].finished(lane_items(piece))) {
        if (!ready) {
          xf = my.forms(kern, gate, inter, L.forms[3]);
          ready = true;
        }
        run_piece(kern, L.down, piece, L.lanes[3], xf, proj);
        if (!L.mlp_out_norm) add_lane_rows(piece, proj, h, a.residual_scale, x);
      }
      clock.mark(9);
      pr[3].wait();
      fold_normed(ph[2], proj, L.mlp_out_norm);
      clock.mark(10);
    }
  };
  run_team(TaskRef(member), members);
  if (profiling) {
    DecodeProfile& prof = decode_profile();
    prof.step_ns.fetch_add(now_ns() - step_start, std::memory_order_relaxed);
    prof.steps.fetch_add(1, std::memory_order_relaxed);
    prof.layers.fetch_add(static_cast<int64_t>(n_layers), std::memory_order_relaxed);
  }
}

// The layers in the form the team runs, or false when a layer is outside the path.
bool plan(const ops::DecodeLayersArgs& a, const IsaKernels& kern, std::vector<Layer>* out) {
  const int64_t h = a.x.size(1), hd = a.head_dim, inter = a.gate.size(1);
  const DType cache = a.layers[0].k_cache.dtype();
  for (const ops::DecoderLayerTensors& t : a.layers) {
    Layer L;
    if (t.moe) return false;  // a MoE layer runs composed
    if (!make_product(t.q, t.q_bias, h, &L.q) || !make_product(t.k, t.k_bias, h, &L.k) ||
        !make_product(t.v, t.v_bias, h, &L.v) || !make_product(t.o, t.o_bias, a.heads * hd, &L.o) ||
        !make_product(t.gate, t.gate_bias, h, &L.gate) ||
        !make_product(t.up, t.up_bias, h, &L.up) ||
        !make_product(t.down, t.down_bias, inter, &L.down)) {
      return false;
    }
    if (L.q.rows != a.heads * hd || L.k.rows != a.kv_heads * hd || L.v.rows != a.kv_heads * hd ||
        L.o.rows != h || L.gate.rows != inter || L.up.rows != inter || L.down.rows != h) {
      return false;
    }
    L.forms[0] = forms_of(L.q, kern);
    L.forms[0] += forms_of(L.k, kern);
    L.forms[0] += forms_of(L.v, kern);
    L.forms[1] = forms_of(L.o, kern);
    L.forms[2] = forms_of(L.gate, kern);
    L.forms[2] += forms_of(L.up, kern);
    L.forms[3] = forms_of(L.down, kern);
    L.lanes[0] = reads_side_by_side(L.q, kern) && reads_side_by_side(L.k, kern) &&
                 reads_side_by_side(L.v, kern);
    L.lanes[1] = reads_side_by_side(L.o, kern);
    L.lanes[2] = reads_side_by_side(L.gate, kern) && reads_side_by_side(L.up, kern);
    L.lanes[3] = reads_side_by_side(L.down, kern);
    if (t.input_norm.defined() && !f32_vector(t.input_norm, h)) return false;
    if (t.post_norm.defined() && !f32_vector(t.post_norm, h)) return false;
    if (t.q_norm.defined() != t.k_norm.defined()) return false;
    if (t.q_norm.defined() && (!f32_vector(t.q_norm, hd) || !f32_vector(t.k_norm, hd))) {
      return false;
    }
    if (t.q_full_norm.defined() != t.k_full_norm.defined()) return false;
    if (t.q_full_norm.defined() &&
        (t.q_norm.defined() || !f32_vector(t.q_full_norm, a.heads * hd) ||
         !f32_vector(t.k_full_norm, a.kv_heads * hd))) {
      return false;
    }
    if (t.k_cache.dtype() != cache || t.v_cache.dtype() != cache) return false;
    if (t.input_norm.defined()) L.input_norm = t.input_norm.data<float>();
    if (t.post_norm.defined()) L.post_norm = t.post_norm.data<float>();
    if (t.q_norm.defined()) {
      L.q_norm = t.q_norm.data<float>();
      L.k_norm = t.k_norm.data<float>();
    }
    if (t.q_full_norm.defined()) {
      L.q_full_norm = t.q_full_norm.data<float>();
      L.k_full_norm = t.k_full_norm.data<float>();
    }
    if (t.attn_out_norm.defined()) {
      if (!f32_vector(t.attn_out_norm, h)) return false;
      L.attn_out_norm = t.attn_out_norm.data<float>();
    }
    if (t.mlp_out_norm.defined()) {
      if (!f32_vector(t.mlp_out_norm, h)) return false;
      L.mlp_out_norm = t.mlp_out_norm.data<float>();
    }
    if (t.inv_freq.defined()) {
      if (!f32_vector(t.inv_freq, hd / 2)) return false;
      L.inv_freq = t.inv_freq.data<float>();
      L.rope_scaling = t.rope_scaling;
    }
    L.k_cache = t.k_cache.raw();
    L.window = t.window;
    L.v_cache = t.v_cache.raw();
    out->push_back(std::move(L));
  }
  return true;
}

void decode_layers_kernel(const ops::DecodeLayersArgs& a) {
  // ANVIL_CPU_DECODE_LAYERS=0 runs the composed ops (for measuring one against the other);
  // =require makes a stack outside the path an error instead (the tests use it).
  const char* env = std::getenv("ANVIL_CPU_DECODE_LAYERS");
  const bool off = (env && env[0] == '0') || std::getenv("ANVIL_NO_REPACK") != nullptr;
  const bool require = env && std::strcmp(env, "require") == 0;
  const int64_t group = a.kv_heads > 0 ? a.heads / a.kv_heads : 0;
  const DType cache = a.layers[0].k_cache.dtype();
  const bool shape_ok = a.batch == 1 && a.seq == 1 && a.impl == ops::AttentionImpl::sdpa &&
                        group >= 1 && group <= kMaxGroup && a.heads % a.kv_heads == 0 &&
                        a.head_dim % 2 == 0 && a.x.size(1) % 32 == 0 &&
                        (a.heads * a.head_dim) % 32 == 0 && a.gate.size(1) % 32 == 0 &&
                        (cache == DType::f32 || cache == DType::f16);
  // AVX2 runs the step with its own kernels where its attention takes the head size (the
  // composed ops' attention does the same, so the results stay theirs).
  const bool isa_ok =
      isa() >= Isa::avx512 || (isa() >= Isa::avx2 && attention_avx2_takes(a.head_dim));
  thread_local std::vector<Layer> layers;
  layers.clear();
  const IsaKernels kern = isa_kernels(a.act);
  if (off || !isa_ok || !shape_ok || !plan(a, kern, &layers)) {
    if (require) {
      throw Error(std::string("decode_layers on cpu: ") +
                  (!isa_ok     ? "the team kernel needs AVX2 (head sizes of whole 8-float vectors) "
                                 "or AVX-512"
                   : !shape_ok ? "a shape or cache dtype outside the team kernel's path"
                               : "a weight, norm or bias outside the team kernel's path"));
    }
    ops::composed_decode_layers(a);
    return;
  }
  if (cache == DType::f16) {
    run_layers<uint16_t>(a, layers, kern);
  } else {
    run_layers<float>(a, layers, kern);
  }
}

}  // namespace
}  // namespace anvil::cpu

namespace anvil {

void register_cpu_decode_layers() {
  for (DType w : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::iq4_nl,
                  DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k, DType::q6_k, DType::iq4_xs,
                  DType::f32, DType::bf16, DType::f16}) {
    // The team kernel takes GeGLU, softcapping, output norms, per-layer RoPE and the residual
    // scale itself.
    for (const char* op : {ops::kDecodeLayers, ops::kDecodeLayersExtended}) {
      register_kernel<ops::DecodeLayersArgs>(op, DeviceType::cpu, DType::f32, w,
                                             &cpu::decode_layers_kernel);
    }
  }
}

}  // namespace anvil
