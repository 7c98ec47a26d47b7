// Every layer of a batch-1 decode step in one persistent launch: a block per SM, all resident
// (a cooperative launch), walking each layer's five phases, each phase's outputs handed to the
// next in flag-carrying words that the next polls (mailbox.cuh; flags mode, the default) or
// through a grid-wide barrier (ANVIL_CUDA_DECODE_SYNC=barrier):
//
//   1. input RMSNorm of the residual (every block with q/k/v rows, redundantly) and its slice
//      of q/k/v rows;
//   2. attention: (q head, key split) items, each doing rope_store's work for its head (q/k
//      norm, RoPE, the cache write by one item per kv head) and writing its split's partial
//      result; the items run on the last blocks, which take no q/k/v rows (while they fit in
//      half the grid), so an item starts waiting for its inputs as soon as the step's x does;
//   3. every block combines the heads' partial results for itself, then its slice of o_proj
//      rows, added to the residual;
//   4. post-attention RMSNorm and its slice of gate/up rows with SwiGLU (GeGLU for Gemma);
//   5. its slice of down_proj rows, added to the residual.
//
// Gemma's output norms (the wide kernel, which also takes heads of 256): phases 3 and 5 send
// their products instead of adding them, and the next phase's staging, which needs the whole
// residual anyway, adds rms_norm(product) * w to it in every block and publishes its share of
// the new residual (alternately in x2 and x, so that no block overwrites a residual another
// may still be reading); after the last layer the down rows' blocks add the last product.
//
// The weights never wait for the activations: each block streams the rows of its slices, layer
// after layer, into a ring of shared-memory slots with bulk copies issued by one thread as soon
// as a slot is consumed, so HBM keeps streaming through the barriers and the attention phase,
// and a phase computes from shared memory. Every rounding is the separate kernels' (products
// rounded to the activation type, then added; norms rounded twice), so results differ from the
// composed ops only by float summation order.
//
// OLMo 2's layers (no input norms, q/k norms over the whole projection) run in a variant of the
// wide kernel. The device code lives in the headers beside this file, one concern each:
// decode_layers_params.cuh (parameters, shared memory), _stream.cuh (the weight stream and a
// phase's products), _staging.cuh (a phase's input vector), _attention.cuh (the items and
// their combine), _kernel.cuh (the walk through the layers); this file is the host side.
#include <algorithm>
#include <cfloat>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "anvil/backend.h"
#include "anvil/error.h"
#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_allocator.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/decode_layers_kernel.cuh"
#include "backends/cuda/decode_sync.h"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/mailbox.cuh"
#include "backends/cuda/mma.cuh"
#include "backends/cuda/small_divisor.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// The persistent kernel's blocks: one per SM, or ANVIL_CUDA_DECODE_BLOCKS (at most the SMs) to
// measure how a phase's hand-off cost and the weights' streaming rate move with the grid.
int grid_blocks(int sm_count) {
  return std::clamp(env_int("ANVIL_CUDA_DECODE_BLOCKS", sm_count), 1, sm_count);
}

// ---- Host side -------------------------------------------------------------------------

// Whether the stack's layers normalise their blocks' outputs (Gemma 2/3); unfit_reason
// requires all of them or none.
bool output_norms(const ops::DecodeLayersArgs& a) {
  return !a.layers.empty() && a.layers[0].attn_out_norm.defined();
}
bool plain_input(const ops::DecodeLayersArgs& a) {  // OLMo 2
  return !a.layers.empty() && !a.layers[0].input_norm.defined();
}
bool full_qk_norm(const ops::DecodeLayersArgs& a) {  // OLMo 2
  return !a.layers.empty() && a.layers[0].q_full_norm.defined();
}

// The stack's kernel: the wide one (decode_layers_kernel's kWide) for heads over 128 values,
// output norms, GeGLU or softcapped scores (Gemma's layers), its OLMo 2 variant (kOlmo) for
// layers without input norms or with whole-projection q/k norms, the narrow one for the rest.
bool olmo_kernel(const ops::DecodeLayersArgs& a) {
  return plain_input(a) || full_qk_norm(a);
}
bool wide_kernel(const ops::DecodeLayersArgs& a) {
  return a.head_dim > 128 || output_norms(a) || a.act != ops::GluActivation::silu ||
         a.softcap != 0.0f || olmo_kernel(a);
}

// Why the stack cannot run as one launch (empty when it can).
std::string unfit_reason(const ops::DecodeLayersArgs& a, int major) {
  const DType t = a.x.dtype();
  if (major < 9) return "needs compute capability 9.0 (bulk copies)";
  if (a.batch * a.seq != 1) return "one token per step only";
  // Of the extensions (ops::decode_layers_extended) it takes them all: Granite's residual
  // multiplier, per-layer RoPE, GeGLU, softcapped scores and output norms (Gemma), layers
  // without input norms and with whole-projection q/k norms (OLMo 2); each on every layer.
  for (const ops::DecoderLayerTensors& L : a.layers) {
    if (L.q_full_norm.defined() != full_qk_norm(a) || L.k_full_norm.defined() != full_qk_norm(a))
      return "whole-projection q/k norms on some layers or of q or k only";
    if (L.q_full_norm.defined() && L.q_norm.defined())
      return "both whole-projection and per-head q/k norms";
    if (L.input_norm.defined() == plain_input(a) || L.post_norm.defined() == plain_input(a))
      return "input norms on some layers or blocks only";
    if (L.attn_out_norm.defined() != output_norms(a) ||
        L.mlp_out_norm.defined() != L.attn_out_norm.defined())
      return "output norms on some layers or blocks only";
  }
  const bool out_norms = output_norms(a);
  if (out_norms && a.residual_scale != 1.0f) return "output norms with a residual multiplier";
  if (t != DType::bf16 && t != DType::f16) return "bf16/f16 activations only";
  if (static_cast<int>(a.layers.size()) > kMaxLayers) return "more than 128 layers";
  const int64_t hd = a.head_dim, nh = a.heads, nkv = a.kv_heads;
  if (hd < 8 || hd % 8 != 0 || hd > kMaxDim) {
    return "head_dim must be 8-256, a multiple of 8";
  }
  if (wide_kernel(a) && ((hd / 8) & (hd / 8 - 1)) != 0) {
    return "heads over 128 values, and Gemma's or OLMo 2's layers, need a power of two of "
           "8-value chunks";
  }
  if (nkv <= 0 || nh < nkv || nh % nkv != 0) {
    return "heads must be a multiple of kv_heads";
  }
  // The inputs the composed ops check; a stack that fails here gets their errors.
  const auto i32 = [](const Tensor& x) { return x.defined() && x.dtype() == DType::i32; };
  if (!i32(a.positions) || (a.past_on_device.defined() && !i32(a.past_on_device)) ||
      !i32(a.key_mask) || a.key_mask.dim() != 2 || !a.inv_freq.defined() ||
      a.inv_freq.dtype() != DType::f32 || a.inv_freq.numel() < hd / 2) {
    return "positions, past, key mask or frequencies not as the ops take them";
  }
  if (a.x.dim() != 2 || a.x.size(0) != 1 || a.gate.dim() != 2 || a.q.numel() < nh * hd ||
      a.attn.numel() < nh * hd || a.k.numel() < nkv * hd || a.v.numel() < nkv * hd ||
      a.gate.size(0) != 1) {
    return "residual or scratch shapes";
  }
  const int64_t hidden = a.x.size(1), inter = a.gate.size(1);
  if (hidden % 8 != 0 || inter % 8 != 0) return "hidden and intermediate sizes must be x8";
  if (hidden > 8 * kThreads * 4) return "hidden size above 15360";
  // UnitSplit's dividends (k / 8 x kWarps at most) within SmallDivisor's exact range.
  if (std::max({hidden, inter, nh * hd}) / 8 * kWarps >= SmallDivisor::kDividendEnd)
    return "rows longer than 69,904 values";
  // A thread per row of a block's slice of each phase (slices are in pairs of rows).
  const int64_t blocks = grid_blocks(context(a.x.device()).sm_count);
  const int64_t widest = std::max({(nh + 2 * nkv) * hd, hidden, inter});
  if (2 * ((widest / 2 + blocks - 1) / blocks) > kThreads)
    return "more rows per block than threads";
  // Output norms: every block stages the new residual after attention, and every block that
  // may stage q/k/v has rows of it to publish, so that no block's staging reads a mailbox the
  // next writer could have moved on (each writer waits for every row of these phases).
  if (out_norms && (inter / 2 < blocks || (nh + 2 * nkv) * hd / 2 < blocks))
    return "output norms need gate/up and q/k/v rows for every block";
  if (!a.positions.defined() || a.positions.numel() != 1) return "one position";
  const auto aligned = [](const Tensor& x) {
    return !x.defined() || reinterpret_cast<uintptr_t>(x.raw()) % 16 == 0;
  };
  const auto is = [&](const Tensor& x, const Shape& shape) {
    return x.defined() && x.dtype() == t && x.shape() == shape && x.is_contiguous() && aligned(x);
  };
  const auto maybe = [&](const Tensor& x, int64_t n) { return !x.defined() || is(x, {n}); };
  for (const ops::DecoderLayerTensors& L : a.layers) {
    if (!L.k_cache.defined() || L.k_cache.dim() != 4 || !a.layers[0].k_cache.defined()) {
      return "caches of rank 4";
    }
    const bool ok =
        maybe(L.input_norm, hidden) && maybe(L.post_norm, hidden) && is(L.q, {nh * hd, hidden}) &&
        is(L.k, {nkv * hd, hidden}) && is(L.v, {nkv * hd, hidden}) && is(L.o, {hidden, nh * hd}) &&
        is(L.gate, {inter, hidden}) && is(L.up, {inter, hidden}) && is(L.down, {hidden, inter}) &&
        maybe(L.q_bias, nh * hd) && maybe(L.k_bias, nkv * hd) && maybe(L.v_bias, nkv * hd) &&
        maybe(L.o_bias, hidden) && maybe(L.gate_bias, inter) && maybe(L.up_bias, inter) &&
        maybe(L.down_bias, hidden) && maybe(L.q_norm, hd) && maybe(L.k_norm, hd) &&
        L.q_norm.defined() == L.k_norm.defined() &&
        is(L.k_cache, {1, nkv, L.k_cache.size(2), hd}) && is(L.v_cache, L.k_cache.shape()) &&
        L.k_cache.size(2) == a.layers[0].k_cache.size(2) && maybe(L.attn_out_norm, hidden) &&
        maybe(L.mlp_out_norm, hidden) && maybe(L.q_full_norm, nh * hd) &&
        maybe(L.k_full_norm, nkv * hd) &&
        (!L.inv_freq.defined() || (L.inv_freq.dtype() == DType::f32 &&
                                   L.inv_freq.numel() >= hd / 2 && L.inv_freq.is_contiguous()));
    if (!ok)
      return "a layer's weights or caches are not all " + std::string(dtype_name(t)) +
             " and contiguous in the decoder's shapes";
  }
  const int64_t cap = a.layers[0].k_cache.size(2);
  if (a.past < 0 || a.past + 1 > cap || a.key_mask.size(1) < a.past + 1) return "past length";
  for (const Tensor* s : {&a.x, &a.q, &a.k, &a.v, &a.attn, &a.gate}) {
    if (!aligned(*s) || !s->is_contiguous() || s->dtype() != t) return "scratch layout";
  }
  return "";
}

struct DeviceState {
  std::shared_ptr<Buffer> sync;  // zeroed once; the barrier count only grows
  int sync_grid = 0;             // the grid size the count has advanced by (0: none yet)
  std::shared_ptr<Buffer> timeline;
  std::vector<std::shared_ptr<Buffer>> partials;   // outgrown ones kept: graphs may use them
  std::vector<std::shared_ptr<Buffer>> mail;       // flags mode's mailboxes, zeroed; likewise
  std::vector<std::shared_ptr<Buffer>> residuals;  // output norms' y and x2; likewise
  int smem_optin = 0, major = 0;
  bool cooperative = false;
  std::map<const void*, size_t> smem_set;  // per kernel (bf16, f16): its shared-memory limit
  std::string unusable;  // why an eager launch failed; the stacks then run composed
};

DeviceState& state_of(Device device) {
  static std::map<int, DeviceState> states;
  DeviceState& s = states[device.ordinal()];
  if (!s.sync) {
    cudaDeviceProp prop{};
    ANVIL_CUDA_CHECK(cudaGetDeviceProperties(&prop, device.ordinal()));
    s.smem_optin = static_cast<int>(prop.sharedMemPerBlockOptin);
    s.major = prop.major;
    s.cooperative = prop.cooperativeLaunch != 0;
    const size_t bytes = 2 * sizeof(unsigned);
    s.sync = allocate(device, bytes);
    ANVIL_CUDA_CHECK(cudaMemsetAsync(s.sync->data(), 0, bytes, stream_of(device)));
    ANVIL_CUDA_CHECK(cudaStreamSynchronize(stream_of(device)));
  }
  return s;
}

// ANVIL_CUDA_DECODE_PROFILE=1: after an eager launch, where a layer's time goes, from each
// block's stamps per phase (Stamp), layers after the first. A phase's work splits into staging
// its input (from its release), waiting for its first chunk's weights, the chunks' products
// (first chunk there to last chunk summed, the later chunks' waits included) and the tail (row
// epilogues, copies started for the next phase); the barrier is the last block's arrival to
// the first block's release.
void print_profile(const unsigned long long* t, int layers, int blocks) {
  static const char* names[5] = {"norm + q/k/v", "attention", "o_proj", "norm + gate/up", "down"};
  const auto at = [&](int l, int f, int which, int b) {
    return static_cast<double>(
        t[((static_cast<long long>(l) * 5 + f) * kStamps + which) * blocks + b]);
  };
  constexpr int kParts = 4;  // staging, first wait, products, tail
  double work_max[5] = {}, work_mean[5] = {}, barrier[5] = {}, waited[5] = {};
  double part_mean[5][kParts] = {};
  int counted = 0;
  for (int l = 1; l < layers; ++l, ++counted) {
    for (int f = 0; f < 5; ++f) {
      const int pl = f == 0 ? l - 1 : l, pf = f == 0 ? 4 : f - 1;
      double wmax = 0, wsum = 0, done_max = 0, released_min = 1e300;
      for (int b = 0; b < blocks; ++b) {
        const double start = at(pl, pf, kReleased, b);
        const double w = at(l, f, kDone, b) - start;
        wmax = std::max(wmax, w);
        wsum += w;
        waited[f] += at(l, f, kWaited, b) / blocks;
        const double marks[kParts + 1] = {start, at(l, f, kStaged, b), at(l, f, kFirstReady, b),
                                          at(l, f, kLastSummed, b), at(l, f, kDone, b)};
        for (int i = 0; i < kParts; ++i) part_mean[f][i] += (marks[i + 1] - marks[i]) / blocks;
        done_max = std::max(done_max, at(l, f, kDone, b));
        if (f < 4 || l + 1 < layers) released_min = std::min(released_min, at(l, f, kReleased, b));
      }
      work_max[f] += wmax;
      work_mean[f] += wsum / blocks;
      if (released_min < 1e300) barrier[f] += released_min - done_max;
    }
  }
  if (counted == 0) return;
  double first = 1e300, last = 0;
  for (int b = 0; b < blocks; ++b) {
    first = std::min(first, at(0, 0, kDone, b));
    last = std::max(last, at(layers - 1, 4, kDone, b));
  }
  std::fprintf(stderr,
               "decode_layers profile: %d layers, %.1f us from the first phase's end to "
               "the last's (per layer, microseconds; work mean = staging + first wait + "
               "products + tail):\n",
               layers, (last - first) / 1e3);
  const double n = counted * 1e3;
  for (int f = 0; f < 5; ++f) {
    std::fprintf(stderr,
                 "  %-16s work mean %6.2f max %6.2f (waiting for weights %5.2f)  barrier %5.2f"
                 "  | staging %5.2f first wait %5.2f products %5.2f tail %5.2f\n",
                 names[f], work_mean[f] / n, work_max[f] / n, waited[f] / n, barrier[f] / n,
                 part_mean[f][0] / n, part_mean[f][1] / n, part_mean[f][2] / n,
                 part_mean[f][3] / n);
  }
  // Stragglers: how far each phase's last block finishes behind its median block, and which
  // blocks are last most often (a systematic straggler shows up in most layers).
  for (int f = 0; f < 5; ++f) {
    std::vector<int> last_count(static_cast<size_t>(blocks), 0);
    std::vector<double> done(static_cast<size_t>(blocks));
    double behind = 0;
    for (int l = 1; l < layers; ++l) {
      for (int b = 0; b < blocks; ++b) done[static_cast<size_t>(b)] = at(l, f, kDone, b);
      const auto last = std::max_element(done.begin(), done.end());
      ++last_count[static_cast<size_t>(last - done.begin())];
      std::vector<double> sorted = done;
      std::nth_element(sorted.begin(), sorted.begin() + blocks / 2, sorted.end());
      behind += *last - sorted[static_cast<size_t>(blocks / 2)];
    }
    const int shown = std::min(3, blocks);
    std::vector<int> order(static_cast<size_t>(blocks));
    for (int b = 0; b < blocks; ++b) order[static_cast<size_t>(b)] = b;
    std::partial_sort(order.begin(), order.begin() + shown, order.end(), [&](int x, int y) {
      return last_count[static_cast<size_t>(x)] > last_count[static_cast<size_t>(y)];
    });
    std::fprintf(stderr,
                 "  %-16s last block %5.2f us behind the median; last most often:", names[f],
                 behind / counted / 1e3);
    for (int i = 0; i < shown; ++i) {
      const int b = order[static_cast<size_t>(i)];
      std::fprintf(stderr, " block %d (%d of %d layers)", b, last_count[static_cast<size_t>(b)],
                   counted);
    }
    std::fprintf(stderr, "\n");
  }
}

// The attention items' part of the profile: per layer after the first, the blocks' first items
// (those that had one), each part's mean and the longest item's parts.
void print_item_profile(const unsigned long long* t, int layers, int blocks) {
  static const char* parts[kItemDone] = {"q/k/v taken", "RoPE", "scores", "result out"};
  double mean[kItemDone] = {}, longest[kItemDone] = {}, total = 0;
  long long items = 0;
  for (int l = 1; l < layers; ++l) {
    double worst = -1;
    const unsigned long long* worst_at = nullptr;
    for (int b = 0; b < blocks; ++b) {
      const unsigned long long* s = t + (static_cast<long long>(l) * blocks + b) * kItemStamps;
      if (s[kItemStart] == 0 || s[kItemDone] < s[kItemStart]) continue;
      ++items;
      for (int i = 0; i < kItemDone; ++i) mean[i] += static_cast<double>(s[i + 1] - s[i]);
      const double span = static_cast<double>(s[kItemDone] - s[kItemStart]);
      total += span;
      if (span > worst) worst = span, worst_at = s;
    }
    for (int i = 0; worst_at && i < kItemDone; ++i) {
      longest[i] += static_cast<double>(worst_at[i + 1] - worst_at[i]);
    }
  }
  if (items == 0 || layers < 2) return;
  std::fprintf(stderr,
               "  attention items (%.1f a layer): mean %.2f us:", double(items) / (layers - 1),
               total / items / 1e3);
  for (int i = 0; i < kItemDone; ++i)
    std::fprintf(stderr, " %s %.2f", parts[i], mean[i] / items / 1e3);
  std::fprintf(stderr, "\n  longest item per layer (mean over layers): %.2f us:", [&] {
    double sum = 0;
    for (double x : longest) sum += x;
    return sum / (layers - 1) / 1e3;
  }());
  for (int i = 0; i < kItemDone; ++i)
    std::fprintf(stderr, " %s %.2f", parts[i], longest[i] / (layers - 1) / 1e3);
  std::fprintf(stderr, "\n");
}

// Shared memory for a stack: slots of at least ANVIL_CUDA_DECODE_SLOT_KB (64 by default) that
// hold a whole weight row (a gate row and its up row together), as many as fit beside the
// fixed arrays and the staged activation vector.
struct Layout {
  int slot_bytes, xs_bytes, norm_bytes, slots;
  int chunk_rows[kPhases];
};

Layout layout_for(const ops::DecodeLayersArgs& a, int smem_optin) {
  const int es = static_cast<int>(dtype_size(a.x.dtype()));
  const int hidden = static_cast<int>(a.x.size(1)), inter = static_cast<int>(a.gate.size(1));
  const int attn = static_cast<int>(a.heads * a.head_dim);
  const int unit[kPhases] = {hidden * es, attn * es, 2 * hidden * es, inter * es};
  Layout lay{};
  const int largest = *std::max_element(unit, unit + kPhases);
  const int slot_min = std::max(kMinSlotBytes, env_int("ANVIL_CUDA_DECODE_SLOT_KB", 64) * 1024);
  lay.xs_bytes = (std::max({hidden, inter, attn}) * es + 127) / 128 * 128;
  lay.norm_bytes = (hidden * es + 127) / 128 * 128;
  const int norms = output_norms(a) ? 2 : 1;  // output norms: a second
  const int ring = smem_optin - fixed_bytes(wide_kernel(a)) - lay.xs_bytes - norms * lay.norm_bytes;
  // The slots as large as the ring allows at the count slot_min gives: a phase's slice that
  // just overflows a slot cost a chunk of its own (Qwen2.5-0.5B's down rows: 6 + 1 in 64 KB
  // slots, 7 in the 68 KB that three slots leave room for), a block barrier and a pass.
  const int count = std::max(1, std::min(kMaxSlots, ring / slot_min));
  lay.slot_bytes = std::max({slot_min, ring / count / 128 * 128, (largest + 127) / 128 * 128});
  // Rows per chunk: what a slot holds, rounded down to a multiple of the computing warps
  // where it holds more than one row per warp, so no warp takes a row more than the others.
  for (int i = 0; i < kPhases; ++i) {
    const int fit = std::min(kMaxChunkRows, lay.slot_bytes / unit[i]);
    lay.chunk_rows[i] = fit >= kWarps ? fit / kWarps * kWarps : fit;
  }
  lay.slots = std::min(kMaxSlots, ring / lay.slot_bytes);
  return lay;
}

// The mailboxes of flags mode, in one zeroed buffer (a zero word carries no launch's flag):
// x, act, q|k|v and the attention output at two values per word, the partials one float per
// word, then (output norms) y and x2 at two values per word; each region 16-byte aligned.
void set_mailboxes(const ops::DecodeLayersArgs& a, DeviceState& st, const Context& ctx, Params& p) {
  const auto even = [](int64_t words) { return (words + 1) / 2 * 2; };
  const int64_t nq = a.heads * a.head_dim, nk = a.kv_heads * a.head_dim;
  const int64_t sizes[7] = {even(a.x.size(1) / 2),
                            even(a.gate.size(1) / 2),
                            even((nq + 2 * nk) / 2),
                            even(nq / 2),
                            even(a.heads * p.splits * (a.head_dim + 2)),
                            even(a.x.size(1) / 2),
                            even(a.x.size(1) / 2)};
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  const size_t bytes = static_cast<size_t>(total) * sizeof(MailWord);
  if (st.mail.empty() || st.mail.back()->nbytes() < bytes) {
    if (ctx.capturing) throw Error("decode_layers: mailboxes grown during graph capture");
    st.mail.push_back(allocate(a.x.device(), bytes));
    ANVIL_CUDA_CHECK(cudaMemsetAsync(st.mail.back()->data(), 0, bytes, ctx.stream));
  }
  MailWord* at = static_cast<MailWord*>(st.mail.back()->data());
  MailWord** regions[7] = {&p.mail_x,    &p.mail_act, &p.mail_qkv, &p.mail_attn,
                           &p.mail_part, &p.mail_y,   &p.mail_x2};
  for (int i = 0; i < 7; ++i) {
    *regions[i] = at;
    at += sizes[i];
  }
}

// Launches the kernel for the stack; a non-empty result says why it could not be launched.
template <class T>
std::string launch_stack(const ops::DecodeLayersArgs& a, DeviceState& st, const Context& ctx) {
  Params p{};
  const int64_t hidden = a.x.size(1), inter = a.gate.size(1);
  p.layers = static_cast<int>(a.layers.size());
  p.hidden = static_cast<int>(hidden);
  p.inter = static_cast<int>(inter);
  p.heads = static_cast<int>(a.heads);
  p.kv_heads = static_cast<int>(a.kv_heads);
  p.dim = static_cast<int>(a.head_dim);
  p.key_lanes = key_lanes(p.dim);
  p.group = p.heads / p.kv_heads;
  p.cap = a.layers[0].k_cache.size(2);
  p.eps = a.eps;
  p.scale = a.scale;
  p.residual_scale = a.residual_scale;
  p.softcap = a.softcap;
  p.gelu = a.act == ops::GluActivation::gelu_tanh;
  p.out_norms = output_norms(a);
  p.plain_input = plain_input(a);
  p.full_qk_norm = full_qk_norm(a);
  const bool wide = wide_kernel(a);
  p.positions = a.positions.data<int>();
  p.mask = a.key_mask.data<int>();
  p.past_dev = a.past_on_device.defined() ? a.past_on_device.data<int>() : nullptr;
  p.past_host = a.past;
  p.x = a.x.raw();
  p.q = a.q.raw();
  p.k = a.k.raw();
  p.v = a.v.raw();
  p.attn = a.attn.raw();
  p.act = a.gate.raw();
  const int blocks = grid_blocks(ctx.sm_count);
  // Enough (head, split) items to give most blocks one; ANVIL_CUDA_DECODE_SPLITS for tests.
  p.splits = env_int("ANVIL_CUDA_DECODE_SPLITS", std::max(1, blocks / p.heads));
  p.splits = std::max(1, p.splits);
  // A split of one round of keys by default: its loads are all in flight together.
  const int round_keys = kThreads / p.key_lanes * keys_per_thread(wide);
  p.split_keys = std::max(1, env_int("ANVIL_CUDA_DECODE_SPLIT_KEYS", round_keys));
  // A head whose keys fit two splits (two rounds) takes one: its item writes the output itself
  // and no combine follows (+1.8-2.8% on an H100 at head sizes 64 and 128; three rounds in one
  // item cost 3% more than the combine saves; docs/perf.md, forty-sixth session).
  p.single_split_keys = env_int("ANVIL_CUDA_DECODE_SINGLE_SPLIT_KEYS", 2 * p.split_keys);
  p.item_mode = std::clamp(env_int("ANVIL_CUDA_DECODE_ITEMS", 2), 0, 2);
  const size_t floats = static_cast<size_t>(p.heads) * p.splits * partial_floats(p.dim);
  if (st.partials.empty() || st.partials.back()->nbytes() < floats * sizeof(float)) {
    if (ctx.capturing) throw Error("decode_layers: workspace grown during graph capture");
    st.partials.push_back(allocate(a.x.device(), floats * sizeof(float)));
  }
  p.partials = static_cast<float*>(st.partials.back()->data());
  // Output norms: y and x2, the hidden size each (plain copies; barrier mode reads them).
  const size_t residual_bytes = 2 * static_cast<size_t>(hidden) * dtype_size(a.x.dtype());
  if (p.out_norms) {
    if (st.residuals.empty() || st.residuals.back()->nbytes() < residual_bytes) {
      if (ctx.capturing) throw Error("decode_layers: workspace grown during graph capture");
      st.residuals.push_back(allocate(a.x.device(), residual_bytes));
    }
    p.y = st.residuals.back()->data();
    p.x2 = static_cast<char*>(p.y) + residual_bytes / 2;
  }
  // The count numbers launches by its quotient by the grid size (barrier targets, flags), so a
  // new grid size (ANVIL_CUDA_DECODE_BLOCKS) starts it over, and the mailboxes with it: no
  // word may then carry a flag that a new launch's number reproduces.
  if (st.sync_grid != blocks) {
    if (ctx.capturing) throw Error("decode_layers: grid size changed during graph capture");
    ANVIL_CUDA_CHECK(cudaMemsetAsync(st.sync->data(), 0, st.sync->nbytes(), ctx.stream));
    for (const auto& m : st.mail) {
      ANVIL_CUDA_CHECK(cudaMemsetAsync(m->data(), 0, m->nbytes(), ctx.stream));
    }
    st.sync_grid = blocks;
  }
  p.sync = static_cast<unsigned*>(st.sync->data());
  // Flags mode (the default): phases hand their outputs over in flag-carrying words
  // (mailbox.cuh); barrier mode: grid barriers, then reads (0-5% slower on an H200).
  p.by_flags = decode_sync_by_flags(std::getenv("ANVIL_CUDA_DECODE_SYNC"));
  p.poll_ns = static_cast<unsigned>(std::max(0, env_int("ANVIL_CUDA_DECODE_POLL_NS", 0)));
  if (p.by_flags) set_mailboxes(a, st, ctx, p);
  static const bool profile = std::getenv("ANVIL_CUDA_DECODE_PROFILE") != nullptr;
  const size_t phase_stamps = static_cast<size_t>(p.layers) * 5 * kStamps * blocks;
  const size_t stamps = phase_stamps + static_cast<size_t>(p.layers) * blocks * kItemStamps;
  if (profile && (!st.timeline || st.timeline->nbytes() < stamps * 8) && !ctx.capturing) {
    st.timeline = allocate(a.x.device(), stamps * 8);
  }
  p.timeline = profile && st.timeline && st.timeline->nbytes() >= stamps * 8
                   ? static_cast<unsigned long long*>(st.timeline->data())
                   : nullptr;
  if (p.timeline && !ctx.capturing) {  // blocks without an item leave their stamps at zero
    ANVIL_CUDA_CHECK(
        cudaMemsetAsync(p.timeline + phase_stamps, 0, (stamps - phase_stamps) * 8, ctx.stream));
  }

  const Layout lay = layout_for(a, st.smem_optin);
  p.slot_bytes = lay.slot_bytes;
  p.slots = lay.slots;
  p.xs_bytes = lay.xs_bytes;
  p.norm_bytes = lay.norm_bytes;
  for (int i = 0; i < kPhases; ++i) p.chunk_rows[i] = lay.chunk_rows[i];
  p.piece_bytes = std::max(1, env_int("ANVIL_CUDA_DECODE_PIECE_KB", 32)) * 1024;
  const size_t smem = fixed_bytes(wide) + static_cast<size_t>(p.xs_bytes) +
                      (p.out_norms ? 2 : 1) * static_cast<size_t>(p.norm_bytes) +
                      static_cast<size_t>(p.slots) * p.slot_bytes;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const ops::DecoderLayerTensors& L = a.layers[i];
    const auto ptr = [](const Tensor& t) -> const void* { return t.defined() ? t.raw() : nullptr; };
    // Without input norms the staging copies a stand-in it does not read (q's first values:
    // any readable, aligned hidden-size run), so the copies' accounting stays the same.
    const auto norm_or_stand_in = [&](const Tensor& t) {
      return t.defined() ? t.raw() : L.q.raw();
    };
    const bool whole = L.q_full_norm.defined();
    p.layer[i] = LayerPointers{norm_or_stand_in(L.input_norm),
                               ptr(L.q),
                               ptr(L.k),
                               ptr(L.v),
                               ptr(L.q_bias),
                               ptr(L.k_bias),
                               ptr(L.v_bias),
                               whole ? ptr(L.q_full_norm) : ptr(L.q_norm),
                               whole ? ptr(L.k_full_norm) : ptr(L.k_norm),
                               ptr(L.o),
                               ptr(L.o_bias),
                               norm_or_stand_in(L.post_norm),
                               ptr(L.gate),
                               ptr(L.gate_bias),
                               ptr(L.up),
                               ptr(L.up_bias),
                               ptr(L.down),
                               ptr(L.down_bias),
                               L.k_cache.raw(),
                               L.v_cache.raw(),
                               L.window,
                               (L.inv_freq.defined() ? L.inv_freq : a.inv_freq).data<float>(),
                               L.inv_freq.defined() ? L.rope_scaling : a.rope_scaling,
                               ptr(L.attn_out_norm),
                               ptr(L.mlp_out_norm)};
  }
  const auto pick = [&](auto wide, auto olmo) {
    constexpr bool kWide = decltype(wide)::value, kOlmo = decltype(olmo)::value;
    return p.timeline ? (p.by_flags ? decode_layers_kernel<T, true, true, kWide, kOlmo>
                                    : decode_layers_kernel<T, false, true, kWide, kOlmo>)
                      : (p.by_flags ? decode_layers_kernel<T, true, false, kWide, kOlmo>
                                    : decode_layers_kernel<T, false, false, kWide, kOlmo>);
  };
  const auto kernel = olmo_kernel(a) ? pick(std::true_type{}, std::true_type{})
                      : wide         ? pick(std::true_type{}, std::false_type{})
                                     : pick(std::false_type{}, std::false_type{});
  size_t& smem_set = st.smem_set[reinterpret_cast<const void*>(kernel)];
  if (smem_set != smem) {
    ANVIL_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          static_cast<int>(smem)));
    int per_sm = 0;
    ANVIL_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlockThreads, smem));
    if (per_sm < 1) return "the kernel does not fit an SM";
    smem_set = smem;
  }
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeCooperative;
  attr[0].val.cooperative = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(kBlockThreads);
  config.dynamicSmemBytes = smem;
  config.stream = ctx.stream;
  config.attrs = attr;
  config.numAttrs = 1;
  const cudaError_t launched = cudaLaunchKernelEx(&config, kernel, p);
  if (launched != cudaSuccess) {
    // Not all blocks resident (an MPS share of the SMs, another context...): said once, then
    // the composed ops. A graph being captured cannot take a second try.
    if (ctx.capturing) ANVIL_CUDA_CHECK(launched);
    (void)cudaGetLastError();
    return std::string("the cooperative launch failed: ") + cudaGetErrorString(launched);
  }
  if (p.timeline && !ctx.capturing) {
    std::vector<unsigned long long> host(stamps);
    ANVIL_CUDA_CHECK(
        cudaMemcpyAsync(host.data(), p.timeline, stamps * 8, cudaMemcpyDeviceToHost, ctx.stream));
    ANVIL_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    print_profile(host.data(), p.layers, blocks);
    print_item_profile(host.data() + phase_stamps, p.layers, blocks);
  }
  return "";
}

// ANVIL_CUDA_DECODE_KERNEL=off runs the layers as separate ops (for measuring one against the
// other); =require makes a stack the kernel cannot take an error naming why (for tests).
void decode_layers(const ops::DecodeLayersArgs& a) {
  const char* mode = std::getenv("ANVIL_CUDA_DECODE_KERNEL");
  const std::string m = mode ? mode : "";
  if (m == "off") {
    ops::composed_decode_layers(a);
    return;
  }
  Context& ctx = context(a.x.device());
  DeviceState& st = state_of(a.x.device());
  std::string why = unfit_reason(a, st.major);
  if (why.empty() && !st.cooperative) why = "the device has no cooperative launch";
  if (why.empty() && layout_for(a, st.smem_optin).slots < 2) {
    why = "rows too long for two shared-memory slots";
  }
  if (why.empty()) why = st.unusable;
  if (why.empty()) {
    dispatch_float(a.x.dtype(), "decode_layers", [&](auto t) {
      using T = decltype(t);
      if constexpr (sizeof(T) == 2) why = launch_stack<T>(a, st, ctx);
    });
    if (why.empty()) {
      ANVIL_CUDA_CHECK_LAUNCH();
      return;
    }
    st.unusable = why;
    std::fprintf(stderr, "anvil: decode steps run as separate kernels on cuda:%d: %s\n",
                 a.x.device().ordinal(), why.c_str());
  }
  if (m == "require") throw Error("decode_layers: the one-launch kernel cannot run: " + why);
  ops::composed_decode_layers(a);
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_decode_layers() {
  for (DType act : {DType::bf16, DType::f16}) {
    for (const char* op : {ops::kDecodeLayers, ops::kDecodeLayersExtended}) {
      register_kernel<ops::DecodeLayersArgs>(op, DeviceType::cuda, act, act, &cuda::decode_layers);
    }
  }
}

}  // namespace anvil
