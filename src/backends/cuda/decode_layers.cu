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
#include "backends/cuda/decode_sync.h"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/mailbox.cuh"
#include "backends/cuda/mma.cuh"
#include "backends/cuda/small_divisor.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

// Fifteen warps compute; the sixteenth issues the weight copies. (ANVIL_CUDA_DECODE_THREADS at
// build time: an experiment's other block sizes.)
#ifndef ANVIL_CUDA_DECODE_THREADS
#define ANVIL_CUDA_DECODE_THREADS 512
#endif
constexpr int kBlockThreads = ANVIL_CUDA_DECODE_THREADS;
constexpr int kThreads = kBlockThreads - 32;
constexpr int kWarps = kThreads / 32;
constexpr int kMaxLayers = 128;
constexpr int kMaxChunkRows = 64;
constexpr int kMaxSlots = 64;
constexpr int kMinSlotBytes = 16 * 1024;
constexpr int kMaxDim = 256;
// The attention item's arrays are laid out for head sizes up to 128, or (the wide kernels,
// which also take output norms: Gemma) up to 256; the others keep the larger ring of weight
// slots, and their layout's offsets as constants (computed at run time, they cost a spilled
// register).
__host__ __device__ constexpr int attn_dim(bool wide) {
  return wide ? kMaxDim : 128;
}
__host__ __device__ constexpr int attn_scratch(bool wide) {  // floats: the warps' partial sums
  return (kWarps * attn_dim(wide) + 511) / 512 * 512;
}
// Floats per (head, split) partial result: dim accumulators, then the running max and sum,
// padded so that each one starts 16-byte aligned (read as float4).
__host__ __device__ constexpr int partial_floats(int dim) {
  return dim + 4;
}
static_assert(kWarps * kMaxDim <= attn_scratch(true));
// Threads that share one key in the attention items: a head's 8-value chunks, rounded up to a
// power of two so that a key's threads sit in one warp and reduce by shuffles (heads of 96 or
// 80 values, Phi-3's and Phi-2's, leave a key's last threads idle).
constexpr int key_lanes(int dim) {
  int lanes = 1;
  while (lanes < dim / 8) lanes *= 2;
  return lanes;
}

enum Phase : int { kQkv = 0, kOut = 1, kGateUp = 2, kDown = 3, kPhases = 4 };

struct LayerPointers {
  const void *input_norm, *wq, *wk, *wv, *bq, *bk, *bv, *q_norm, *k_norm, *wo, *bo;
  const void *post_norm, *wg, *bg, *wu, *bu, *wd, *bd;
  void *k_cache, *v_cache;
  long long window;  // sliding window (ops::AttentionArgs::window), 0 for none
  // The layer's RoPE: its own frequencies (SmolLM3's NoPE layers: all 0) or the model's.
  const float* inv_freq;
  float rope_scaling;
  // Output norms (Gemma 2/3: the attention's and the MLP's outputs normalised before the
  // residual add), both or neither in every layer of a stack (Params::out_norms).
  const void *attn_out_norm, *mlp_out_norm;
};

struct Params {
  int layers, hidden, inter, heads, kv_heads, dim, group, splits;
  int key_lanes;  // key_lanes(dim), computed once on the host
  long long cap;
  float eps, scale;
  float residual_scale;  // Granite's residual_multiplier: each block's output times it (else 1)
  float softcap;         // Gemma 2's attention logit softcap (0: none)
  bool gelu;             // GeGLU (GELU's tanh form) instead of SwiGLU
  // Output norms: o_proj and down_proj write their products y (to y, mail_y) instead of adding
  // them; the next staging adds rms_norm(y) * w to the residual it reads, publishes its rows of
  // the new residual (after attention to x2 / mail_x2, after the MLP to x / mail_x) and
  // normalises it for its phase; the last layer's MLP output is added by its down rows' blocks.
  bool out_norms;
  void *y, *x2;
  // OLMo 2 (the wide kernel only): no input norms (q/k/v and gate/up read the residual as it
  // is) and q/k norms over the whole projection (every head's q, all of k) instead of per head.
  bool plain_input, full_qk_norm;
  const int* positions;
  const int* mask;
  const int* past_dev;  // graph replay: the past length in device memory (else past_host)
  long long past_host;
  void *x, *q, *k, *v, *attn, *act;
  float* partials;  // [heads][splits][dim + 4]: the accumulators, running max, sum, padding
  unsigned* sync;   // the grid barrier's 64-bit count (flags mode: one arrival per launch)
  // Flags mode (ANVIL_CUDA_DECODE_SYNC=flags): each phase's outputs also go out as words that
  // carry their flag (mailbox.cuh) and the next phase polls them instead of a grid barrier.
  // Residual x and intermediate act: two values per word; q|k|v rows the same; the attention
  // output (one split) too; partials one float per word, (dim + 2) per (head, split).
  bool by_flags;
  unsigned poll_ns;  // flags mode: a poller's sleep between passes (ANVIL_CUDA_DECODE_POLL_NS)
  MailWord *mail_x, *mail_act, *mail_qkv, *mail_attn, *mail_part, *mail_y, *mail_x2;
  unsigned long long* timeline;  // ANVIL_CUDA_DECODE_PROFILE: per layer, phase and block,
                                 // kStamps times (Stamp)
  int slot_bytes, slots, xs_bytes, norm_bytes, piece_bytes;
  int split_keys;  // keys per attention split to aim for
  // Where the attention items run (ANVIL_CUDA_DECODE_ITEMS): 0 on the first blocks, 1 on the
  // last ones, 2 (the default) on the last ones with the q/k/v rows shared among the others
  // only: the item blocks had been the q/k/v phase's stragglers (docs/perf.md, thirty-second
  // session).
  int item_mode;
  int chunk_rows[kPhases];
  LayerPointers layer[kMaxLayers];
};

// Shared memory: mbarriers, reduction scratch, the attention item's arrays, the staged
// activation vector, then the ring of weight slots.
constexpr int kBarBytes = 2 * kMaxSlots * 8;
constexpr int kRedBytes = 2048;
__host__ __device__ constexpr int fixed_bytes(bool wide) {
  return kBarBytes + kRedBytes + (attn_scratch(wide) + 6 * attn_dim(wide)) * 4;
}
static_assert(fixed_bytes(false) % 128 == 0 && fixed_bytes(true) % 128 == 0);

struct Shared {
  uint64_t* bars;   // per slot: its copies have landed
  uint64_t* empty;  // per slot: the consumers are done with it
  float* red;       // [2 buffers][2 sums][kMaxChunkRows]: a chunk's per-unit sums
  float* reduce;
  int* slices;          // [kPhases + 1][2]: this block's rows of each phase, then of x it publishes
  unsigned* flag_base;  // flags mode: this launch's first flag
  float *scores, *qs, *kn, *vn, *rq, *rk, *cs, *sn;
  void* xs;
  void* norm;  // the next norm's weight, copied in ahead of its use (output norms: then the
               // pending output norm's weight, norm_bytes further; see output_norm)
  char* ring;
};

template <bool kWide>
__device__ Shared carve(const Params& p, char* smem) {
  Shared s;
  s.bars = reinterpret_cast<uint64_t*>(smem);
  s.empty = s.bars + kMaxSlots;
  s.red = reinterpret_cast<float*>(smem + kBarBytes);
  s.reduce = s.red + 4 * kMaxChunkRows;
  s.slices = reinterpret_cast<int*>(s.reduce + kWarps);
  s.flag_base = reinterpret_cast<unsigned*>(s.slices + 2 * (kPhases + 1));
  float* at = reinterpret_cast<float*>(smem + kBarBytes + kRedBytes);
  constexpr int ad = attn_dim(kWide), fixed = fixed_bytes(kWide);
  s.scores = at;
  s.qs = at + attn_scratch(kWide);
  s.kn = s.qs + ad;
  s.vn = s.kn + ad;
  s.rq = s.vn + ad;
  s.rk = s.rq + ad;
  s.cs = s.rk + ad;
  s.sn = s.cs + ad / 2;
  s.xs = smem + fixed;
  s.norm = smem + fixed + p.xs_bytes;
  s.ring = smem + fixed + p.xs_bytes + p.norm_bytes + (kWide && p.out_norms ? p.norm_bytes : 0);
  return s;
}

// Output norms: where the pending output norm's weight is copied (a pointer of its own in
// Shared made the other kernels spill a register).
__device__ __forceinline__ void* output_norm(const Params& p, const Shared& sh) {
  return static_cast<char*>(sh.norm) + p.norm_bytes;
}

__device__ __forceinline__ void consumers_sync() {
  threads_sync(kThreads);
}

template <class T>
__device__ __forceinline__ T load_cg(const T* p) {
  // Data other blocks wrote within this launch: read at L2, never from a stale L1 line.
  const unsigned short bits = __ldcg(reinterpret_cast<const unsigned short*>(p));
  T v;
  memcpy(&v, &bits, sizeof bits);
  return v;
}

// Eight 16-bit floats from the four 32-bit words of a 16-byte vector, by bit operations on the
// words: element-wise access through a reinterpreted pointer let the compiler read shared
// memory as eight 16-bit loads (with bank conflicts) instead of one 16-byte load.
__device__ __forceinline__ float low_half(unsigned w, __nv_bfloat16) {
  return __uint_as_float(w << 16);
}
__device__ __forceinline__ float high_half(unsigned w, __nv_bfloat16) {
  return __uint_as_float(w & 0xffff0000u);
}
__device__ __forceinline__ float low_half(unsigned w, __half) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)));
}
__device__ __forceinline__ float high_half(unsigned w, __half) {
  return __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
}

template <class T>
__device__ __forceinline__ void widen8(const uint4 raw, float* f) {
  const unsigned words[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[2 * i] = low_half(words[i], T{});
    f[2 * i + 1] = high_half(words[i], T{});
  }
}

template <class T>
__device__ __forceinline__ float dot8(const uint4 w, const uint4 x, float acc) {
  float wf[8], xf[8];
  widen8<T>(w, wf);
  widen8<T>(x, xf);
#pragma unroll
  for (int i = 0; i < 8; ++i) acc = fmaf(wf[i], xf[i], acc);
  return acc;
}

// A sum or max over the computing threads (every one must call it), through `scratch`
// ([kWarps] floats).
template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
  v = kMax ? warp_max(v) : warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  consumers_sync();
  float r = kMax ? -FLT_MAX : 0.0f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) r = kMax ? fmaxf(r, scratch[w]) : r + scratch[w];
  consumers_sync();  // scratch is reused by the next reduction
  return r;
}

__device__ float block_sum(float v, float* scratch) {
  return block_reduce<false>(v, scratch);
}
__device__ float block_max(float v, float* scratch) {
  return block_reduce<true>(v, scratch);
}

// ---- The weight stream -------------------------------------------------------------------

__device__ __forceinline__ int phase_rows(const Params& p, int phase) {
  switch (phase) {
    case kQkv:
      return (p.heads + 2 * p.kv_heads) * p.dim;
    case kGateUp:
      return p.inter;
    default:
      return p.hidden;
  }
}

__device__ __forceinline__ int phase_k(const Params& p, int phase) {
  switch (phase) {
    case kOut:
      return p.heads * p.dim;
    case kDown:
      return p.inter;
    default:
      return p.hidden;
  }
}

// The first block of those that run this step's `items` attention items (item_mode 1 and 2:
// the last ones; all blocks where there are more items than half the grid).
__device__ __forceinline__ int first_item_block(const Params& p, int items) {
  return p.item_mode == 0 || 2 * items > static_cast<int>(gridDim.x)
             ? 0
             : static_cast<int>(gridDim.x) - items;
}

// The block's first attention item (the next ones gridDim.x apart); `items` or more for none.
__device__ __forceinline__ int first_item(const Params& p, int items) {
  const int from = first_item_block(p, items);
  return static_cast<int>(blockIdx.x) >= from ? static_cast<int>(blockIdx.x) - from : items;
}

// This block's rows of each phase: an even share in pairs of rows (flags mode sends two values
// per word) among the grid, or for q/k/v in item_mode 2 among the blocks without an attention
// item this step; the same in every layer (computed once a launch). Then (index kPhases) the
// rows of the residual it publishes after an MLP's output norm: a share of the hidden size
// among the blocks with q/k/v rows, which compute the whole new residual in their staging.
__device__ void compute_slices(const Params& p, int items, int* slices) {
  if (threadIdx.x <= kPhases) {
    const bool publish = threadIdx.x == kPhases;
    const long long pairs = (publish ? p.hidden : phase_rows(p, static_cast<int>(threadIdx.x))) / 2;
    long long share = gridDim.x;
    if ((threadIdx.x == kQkv || publish) && p.item_mode == 2 && first_item_block(p, items) > 0) {
      share = first_item_block(p, items);
    }
    const long long b = blockIdx.x < share ? blockIdx.x : share;
    const long long e = blockIdx.x < share ? blockIdx.x + 1 : share;
    slices[2 * threadIdx.x] = static_cast<int>(2 * (pairs * b / share));
    slices[2 * threadIdx.x + 1] = static_cast<int>(2 * (pairs * e / share));
  }
}

// Flags mode: this launch's first flag, from one arrival per block on the barrier's count
// (which every launch of this grid advances by a multiple of the grid size, so the quotient
// numbers the launch). Never 0 (fresh mailboxes are zeroed); a layer's phases add 5 x layer +
// phase, below 1024 for up to 128 layers.
__device__ unsigned launch_flag_base(const Params& p) {
  unsigned long long before;
  asm volatile("atom.add.relaxed.gpu.global.u64 %0, [%1], 1;"
               : "=l"(before)
               : "l"(p.sync)
               : "memory");
  const unsigned long long launch = before / gridDim.x;
  return static_cast<unsigned>(launch % 0x3fffffULL + 1) << 10;
}

struct Cursor {
  int layer = 0, phase = 0, row = 0;
};
struct Chunk {
  int layer, phase, row, rows;
};

// The block's chunks in the order they are consumed: layer by layer, phase by phase, up to
// chunk_rows rows each. A chunk of the q/k/v phase may hold rows of two or three of the
// matrices: a block whose slice crossed a boundary had taken a chunk more than the others, and
// the phase ends with its slowest block.
__device__ bool next_chunk(const Params& p, const int* slices, Cursor& c, Chunk& out) {
  while (c.layer < p.layers) {
    const int begin = slices[2 * c.phase];
    const int end = slices[2 * c.phase + 1];
    const int r = begin + c.row;
    if (r < end) {
      const int rows = min(end - r, p.chunk_rows[c.phase]);
      out = Chunk{c.layer, c.phase, r, rows};
      c.row += rows;
      return true;
    }
    c.row = 0;
    if (++c.phase == kPhases) {
      c.phase = 0;
      ++c.layer;
    }
  }
  return false;
}

template <class T>
__device__ void issue_chunk(const Params& p, const Chunk& ch, char* dst, uint64_t* bar) {
  const LayerPointers& L = p.layer[ch.layer];
  const int k = phase_k(p, ch.phase);
  const unsigned bytes = static_cast<unsigned>(ch.rows) * k * sizeof(T);
  const long long at = static_cast<long long>(ch.row) * k;
  // Copies of at most piece_bytes each: several requests in flight per chunk.
  const auto copy = [&](char* to, const T* from, unsigned n) {
    const char* src = reinterpret_cast<const char*>(from);
    for (unsigned off = 0; off < n; off += p.piece_bytes) {
      bulk_copy_to_shared(to + off, src + off, min(n - off, static_cast<unsigned>(p.piece_bytes)),
                          bar);
    }
  };
  if (ch.phase == kGateUp) {  // gate rows, then the same up rows
    mbarrier_expect_bytes(bar, 2 * bytes);
    copy(dst, static_cast<const T*>(L.wg) + at, bytes);
    copy(dst + bytes, static_cast<const T*>(L.wu) + at, bytes);
    return;
  }
  mbarrier_expect_bytes(bar, bytes);
  if (ch.phase == kQkv) {  // each matrix's rows of the chunk, one after the other
    const int nq = p.heads * p.dim, nk = p.kv_heads * p.dim;
    const int seg_begin[3] = {0, nq, nq + nk}, seg_end[3] = {nq, nq + nk, nq + 2 * nk};
    const void* seg_src[3] = {L.wq, L.wk, L.wv};
    char* to = dst;
    for (int s = 0; s < 3; ++s) {
      const int r0 = max(ch.row, seg_begin[s]), r1 = min(ch.row + ch.rows, seg_end[s]);
      if (r1 <= r0) continue;
      const unsigned n = static_cast<unsigned>(r1 - r0) * k * sizeof(T);
      copy(to, static_cast<const T*>(seg_src[s]) + static_cast<long long>(r0 - seg_begin[s]) * k,
           n);
      to += n;
    }
    return;
  }
  copy(dst, static_cast<const T*>(ch.phase == kOut ? L.wo : L.wd) + at, bytes);
}

// The profile's numbers per layer, phase and block (thread 0's clock): its work done, its
// barrier released, its time waiting for weights, its input staged, its first chunk's weights
// there, its last chunk's products summed.
enum Stamp : int { kDone, kReleased, kWaited, kStaged, kFirstReady, kLastSummed, kStamps };

// And per layer and block, its first attention item's times: started, its q/k/v taken (and
// normalised), RoPE applied, the scores' loop done, its result written.
enum ItemStamp : int { kItemStart, kItemInputs, kItemRoped, kItemScored, kItemDone, kItemStamps };

// Where thread 0 of this block keeps layer l's item stamps (after all the phases' stamps); null
// without a profile and for the other threads.
__device__ __forceinline__ unsigned long long* item_stamps(const Params& p, int layer) {
  if (!p.timeline || threadIdx.x != 0) return nullptr;
  return p.timeline + static_cast<long long>(p.layers) * 5 * kStamps * gridDim.x +
         (static_cast<long long>(layer) * gridDim.x + blockIdx.x) * kItemStamps;
}

struct Pipeline {
  int consumed = 0;     // chunks consumed so far
  int slot = 0;         // the next chunk's slot (consumed % slots)
  unsigned parity = 0;  // the phase parity of that slot's mbarrier (consumed / slots, odd or even)
  // Profile, thread 0's: time in chunk waits, and the sub-phase times of the current phase.
  unsigned long long waited = 0, staged = 0, first_ready = 0, last_summed = 0;
};

__device__ __forceinline__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// The producer warp's first lane: the block's whole chunk stream, each chunk into the next
// slot as soon as the consumers release it. Blocking here (on a slot, or on the copy engine's
// queue) delays no computation.
template <class T>
__device__ void produce(const Params& p, const Shared& sh) {
  if (threadIdx.x % 32 != 0) return;
  Cursor c;
  Chunk ch;
  for (int i = 0; next_chunk(p, sh.slices, c, ch); ++i) {
    const int slot = i % p.slots;
    if (i >= p.slots) {
      mbarrier_wait(&sh.empty[slot], static_cast<unsigned>(i / p.slots - 1) & 1u);
    }
    async_proxy_fence();
    issue_chunk<T>(p, ch, sh.ring + static_cast<long long>(slot) * p.slot_bytes, &sh.bars[slot]);
  }
}

// How a chunk of `rows` rows is shared out among the computing warps: as units of (row, part of
// the row's k), `parts` units per row where the chunk has fewer rows than warps. Divisions by
// parts go through SmallDivisor (worked out once per chunk; unfit_reason keeps k / 8 x kWarps
// within its exact range): integer divisions per unit had cost a warp ~100 instructions a
// chunk, as many as a gate/up chunk's products.
static_assert(kWarps <= SmallDivisor::kMaxDivisor);
struct UnitSplit {
  int parts;
  SmallDivisor by;
  __device__ explicit UnitSplit(int rows)
      : parts(rows >= kWarps ? 1 : kWarps / rows), by(static_cast<uint32_t>(parts)) {}
  __device__ __forceinline__ int div(int x) const {
    return static_cast<int>(by.divide(static_cast<uint32_t>(x)));
  }
};

// Consumes the block's chunks of a phase (its slice's rows, chunk_rows at a time, in the order
// the producer streams them): each row's product with the staged vector, split across warps
// when a chunk has fewer rows than warps; then op(row, gate-or-only sum, up sum) by the thread
// that owns the row (thread i of the block owns row i of each of its slices, and holds that
// row's biases and residual in registers). One block barrier per chunk: the per-unit sums
// alternate between two buffers. With a mailbox (flags mode), op's results (the rows' values
// as rounded to T) are gathered in shared memory and sent as pairs, flagged `flag`, after the
// last chunk.
template <class T, class RowOp>
__device__ void consume_phase(const Params& p, Pipeline& pl, const Shared& sh, int phase,
                              const RowOp& op, MailWord* mail, unsigned flag) {
  float* outbox = sh.scores;  // free outside the attention phase
  const int vecs = phase_k(p, phase) / 8;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint4* xs = static_cast<const uint4*>(sh.xs);
  const int begin = sh.slices[2 * phase], end = sh.slices[2 * phase + 1];
  const int step = p.chunk_rows[phase];
  for (int row0 = begin; row0 < end; row0 += step) {
    const int rows = min(step, end - row0);
    const int idx = static_cast<int>(threadIdx.x) - (row0 - begin);
    const bool row_thread = idx >= 0 && idx < rows;
    const int slot = pl.slot;
    float* red = sh.red + (pl.consumed & 1) * 2 * kMaxChunkRows;
    const unsigned long long t0 = p.timeline && threadIdx.x == 0 ? global_ns() : 0;
    mbarrier_wait(&sh.bars[slot], pl.parity);
    if (t0) {
      const unsigned long long t1 = global_ns();
      pl.waited += t1 - t0;
      if (!pl.first_ready) pl.first_ready = t1;
    }
    const uint4* w =
        reinterpret_cast<const uint4*>(sh.ring + static_cast<long long>(slot) * p.slot_bytes);
    const UnitSplit split(rows);
    const int units = rows * split.parts;
    for (int u = warp; u < units; u += kWarps) {
      const int r = split.div(u), part = u - r * split.parts;
      const int cb = split.div(vecs * part), ce = split.div(vecs * (part + 1));
      const uint4* w0 = w + static_cast<long long>(r) * vecs;
      // Two (gate/up) or four vectors per lane and step, each with its own accumulator: the
      // loads of a step are in flight together and the FMA chains are short.
      float a0 = 0.0f, a1 = 0.0f;
      int c = cb + lane;
      if (phase == kGateUp) {
        const uint4* w1 = w + static_cast<long long>(rows + r) * vecs;
        float b0 = 0.0f, b1 = 0.0f;
        for (; c + 32 < ce; c += 64) {
          const uint4 x0 = xs[c], x1 = xs[c + 32];
          const uint4 g0 = w0[c], g1 = w0[c + 32], u0 = w1[c], u1 = w1[c + 32];
          a0 = dot8<T>(g0, x0, a0);
          b0 = dot8<T>(g1, x1, b0);
          a1 = dot8<T>(u0, x0, a1);
          b1 = dot8<T>(u1, x1, b1);
        }
        if (c < ce) {
          const uint4 x0 = xs[c];
          a0 = dot8<T>(w0[c], x0, a0);
          a1 = dot8<T>(w1[c], x0, a1);
        }
        a0 += b0;
        a1 = warp_sum(a1 + b1);
      } else {
        float b0 = 0.0f, c0 = 0.0f, d0 = 0.0f;
        for (; c + 96 < ce; c += 128) {
          const uint4 v0 = w0[c], v1 = w0[c + 32], v2 = w0[c + 64], v3 = w0[c + 96];
          const uint4 x0 = xs[c], x1 = xs[c + 32], x2 = xs[c + 64], x3 = xs[c + 96];
          a0 = dot8<T>(v0, x0, a0);
          b0 = dot8<T>(v1, x1, b0);
          c0 = dot8<T>(v2, x2, c0);
          d0 = dot8<T>(v3, x3, d0);
        }
        for (; c < ce; c += 32) a0 = dot8<T>(w0[c], xs[c], a0);
        a0 += b0 + c0 + d0;
      }
      a0 = warp_sum(a0);
      if (lane == 0) {
        red[u] = a0;
        red[kMaxChunkRows + u] = a1;
      }
    }
    consumers_sync();  // the sums are in, and the slot is read
    if (t0) pl.last_summed = global_ns();
    if (threadIdx.x == 0) mbarrier_arrive(&sh.empty[slot]);
    ++pl.consumed;
    if (++pl.slot == p.slots) {
      pl.slot = 0;
      pl.parity ^= 1u;
    }
    if (row_thread) {
      float s0 = 0.0f, s1 = 0.0f;
      for (int q = 0; q < split.parts; ++q) {
        s0 += red[idx * split.parts + q];
        s1 += red[kMaxChunkRows + idx * split.parts + q];
      }
      const float value = op(row0 + idx, s0, s1);
      if (mail) outbox[row0 + idx - begin] = value;
    }
  }
  if (mail) {
    consumers_sync();
    const int pairs = (end - begin) / 2;
    for (int j = threadIdx.x; j < pairs; j += kThreads) {
      mail_put(mail + begin / 2 + j, flag, pack_pair<T>(outbox[2 * j], outbox[2 * j + 1]));
    }
  }
}

// ---- Activation staging -----------------------------------------------------------------

// Starts copying a norm's weight (n values) into shared memory, each thread the vectors it will
// use in stage_normed, before the grid barrier that precedes the norm, so the copy's latency
// hides behind the wait. Asynchronous copies hold no registers across the barrier (vectors
// held in registers there were spilled, and a spill waits for its load).
__device__ void copy_norm_to(void* dst, const void* weight, int n) {
  for (int c = threadIdx.x; c < n / 8; c += kThreads) {
    async_copy_16(static_cast<uint4*>(dst) + c, static_cast<const uint4*>(weight) + c);
  }
  async_copy_commit();
}
__device__ void copy_norm(const Shared& sh, const void* weight, int n) {
  copy_norm_to(sh.norm, weight, n);
}

// xs = v * scale * the norm's weight (sh.norm), rounded as the separate norm kernel rounds;
// vec(i, c) is this thread's i-th vector of v (c its index: threadIdx.x + i * kThreads).
template <class T, class Vec>
__device__ __forceinline__ void write_normed(const Shared& sh, int vecs, float scale,
                                             const Vec& vec) {
  uint4* xs = static_cast<uint4*>(sh.xs);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (c >= vecs) break;
    float f[8], wf[8];
    widen8<T>(vec(i, c), f);
    widen8<T>(static_cast<const uint4*>(sh.norm)[c], wf);
    uint4 packed;
    T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      out[j] = from_float<T>(wf[j] * to_float(from_float<T>(f[j] * scale)));
    xs[c] = packed;
  }
  consumers_sync();
}

// Four vectors of eight values a thread (vector threadIdx.x + i * kThreads), from the mailbox
// once flagged `flag` when one is given, else from src.
template <class T>
__device__ __forceinline__ void load_vectors(const Params& p, const T* src, const MailWord* mail,
                                             unsigned flag, int vecs, uint4 (&raw)[4]) {
  if (mail) {
    mail_take_vectors<4>(mail, static_cast<int>(threadIdx.x), kThreads, vecs, flag, p.poll_ns, raw);
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    raw[i] = c < vecs ? __ldcg(reinterpret_cast<const uint4*>(src) + c) : make_uint4(0, 0, 0, 0);
  }
}

// xs = rms_norm(x) * weight over n values, rounded as the separate norm kernel rounds; x from
// the mailbox once flagged `flag` when one is given. `plain`: xs = x (a layer without input
// norms), the same for every thread.
template <class T>
__device__ void stage_normed(const Params& p, const Shared& sh, const T* x, int n,
                             const MailWord* mail, unsigned flag, bool plain) {
  const int vecs = n / 8;
  uint4 raw[4];
  load_vectors<T>(p, x, mail, flag, vecs, raw);
  if (plain) {  // no norm (OLMo 2): x as it is
    uint4* xs = static_cast<uint4*>(sh.xs);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(threadIdx.x) + i * kThreads;
      if (c < vecs) xs[c] = raw[i];
    }
    async_copy_wait();  // the copy of the norm's stand-in lands before the next one is issued
    consumers_sync();
    return;
  }
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float f[8];
    widen8<T>(raw[i], f);
#pragma unroll
    for (int j = 0; j < 8; ++j) ss += f[j] * f[j];
  }
  const float scale = rsqrtf(block_sum(ss, sh.reduce) / static_cast<float>(n) + p.eps);
  async_copy_wait();  // this thread's vectors of the weight (copy_norm) have landed
  write_normed<T>(sh, vecs, scale, [&](int i, int) { return raw[i]; });
}

// Where a block output passes through an output norm: x_new = x + rms_norm(y) * w (w copied
// ahead to output_norm), rounded as the separate rms_norm_add kernel rounds, over the hidden
// size; x and y from their mailboxes (flags xf, yf) or plain. Rows [pub_begin, pub_end) of
// x_new go to dst (and dst_mail, flagged df); then, where `stage`, xs = rms_norm(x_new) * the
// next norm's weight (sh.norm), as stage_normed stages (or, `plain`, xs = x_new). `stage` and
// `plain` are the same for every thread.
template <class T>
__device__ void stage_residual(const Params& p, const Shared& sh, const T* x,
                               const MailWord* x_mail, unsigned xf, const MailWord* y_mail,
                               unsigned yf, T* dst, MailWord* dst_mail, unsigned df, int pub_begin,
                               int pub_end, bool stage, bool plain) {
  const int n = p.hidden, vecs = n / 8;
  uint4* xs = static_cast<uint4*>(sh.xs);
  // y passes through xs (each thread its own vectors, so no barrier): held in registers
  // beside x across the block sum, it made the kernel spill.
  float ss = 0.0f;
  {
    uint4 yr[4];
    load_vectors<T>(p, static_cast<const T*>(p.y), y_mail, yf, vecs, yr);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(threadIdx.x) + i * kThreads;
      float f[8];
      widen8<T>(yr[i], f);
#pragma unroll
      for (int j = 0; j < 8; ++j) ss += f[j] * f[j];
      if (c < vecs) xs[c] = yr[i];
    }
  }
  uint4 xr[4];
  load_vectors<T>(p, x, x_mail, xf, vecs, xr);
  const float r = rsqrtf(block_sum(ss, sh.reduce) / static_cast<float>(n) + p.eps);
  async_copy_wait();  // both norms' weights (copy_norm_to) have landed
  float ss2 = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (c >= vecs) break;
    float xf8[8], yf8[8], wf[8];
    widen8<T>(xr[i], xf8);
    widen8<T>(xs[c], yf8);
    widen8<T>(static_cast<const uint4*>(output_norm(p, sh))[c], wf);
    uint4 packed;
    T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const T normed =
          from_float<T>(__fmul_rn(wf[j], to_float(from_float<T>(__fmul_rn(yf8[j], r)))));
      out[j] = from_float<T>(__fadd_rn(xf8[j], to_float(normed)));
      const float v = to_float(out[j]);
      ss2 += v * v;
    }
    xs[c] = packed;
  }
  consumers_sync();
  const T* xn = static_cast<const T*>(sh.xs);
  for (int j = pub_begin / 2 + static_cast<int>(threadIdx.x); j < pub_end / 2; j += kThreads) {
    const T a = xn[2 * j], b = xn[2 * j + 1];
    dst[2 * j] = a;
    dst[2 * j + 1] = b;
    if (dst_mail) mail_put(dst_mail + j, df, pack_pair<T>(to_float(a), to_float(b)));
  }
  consumers_sync();             // xs is overwritten below
  if (!stage || plain) return;  // plain (OLMo 2): the next phase takes x_new as it is, in xs
  const float scale = rsqrtf(block_sum(ss2, sh.reduce) / static_cast<float>(n) + p.eps);
  write_normed<T>(sh, vecs, scale, [&](int, int c) { return xs[c]; });
}

// xs = src over n values; from the mailbox once flagged `flag` when one is given.
template <class T>
__device__ void stage_plain(const Params& p, const Shared& sh, const T* src, int n,
                            const MailWord* mail, unsigned flag) {
  uint4* xs = static_cast<uint4*>(sh.xs);
  const int vecs = n / 8;
  if (mail) {
    constexpr int kPass = 4;
    for (int c0 = threadIdx.x; c0 < vecs; c0 += kPass * kThreads) {
      uint4 v[kPass];
      mail_take_vectors<kPass>(mail, c0, kThreads, vecs, flag, p.poll_ns, v);
#pragma unroll
      for (int i = 0; i < kPass; ++i) {
        if (c0 + i * kThreads < vecs) xs[c0 + i * kThreads] = v[i];
      }
    }
  } else {
    for (int c = threadIdx.x; c < vecs; c += kThreads) {
      xs[c] = __ldcg(reinterpret_cast<const uint4*>(src) + c);
    }
  }
  consumers_sync();
}

// ---- Attention -------------------------------------------------------------------------

// Splits of a head's keys this step: about split_keys keys each, at most p.splits (the
// workspace's), one for short contexts so that no combine is needed.
__device__ __forceinline__ int active_splits(const Params& p, long long past) {
  const long long want = (past + 1 + p.split_keys - 1) / p.split_keys;
  return static_cast<int>(want < p.splits ? (want < 1 ? 1 : want) : p.splits);
}

// Split `split` of the keys [first, keys) a layer's query sees (first from its sliding window;
// a split may be empty when the window is shorter than the splits).
__device__ __forceinline__ void split_range(long long first, long long keys, int splits, int split,
                                            long long& t0, long long& t1) {
  const long long per = (keys - first + splits - 1) / splits;
  t0 = min(keys, first + split * per);
  t1 = min(keys, t0 + per);
}

// Asks L2 for the cached keys and values (rows before this step's) the block's attention
// items of this layer will read, two phases before it reads them.
template <class T>
__device__ void prefetch_kv(const Params& p, const LayerPointers& L, long long past, int splits) {
  for (int it = first_item(p, p.heads * splits); it < p.heads * splits; it += gridDim.x) {
    const int h = it / splits, split = it % splits, kh = h / p.group;
    long long t0, t1;
    split_range(first_visible_key(past, L.window), past + 1, splits, split, t0, t1);
    t1 = min(t1, past);
    if (t1 <= t0) continue;
    const long long at = (static_cast<long long>(kh) * p.cap + t0) * p.dim;
    const long long bytes = (t1 - t0) * p.dim * static_cast<long long>(sizeof(T));
    prefetch_l2(static_cast<const T*>(L.k_cache) + at, bytes, threadIdx.x, kThreads);
    prefetch_l2(static_cast<const T*>(L.v_cache) + at, bytes, threadIdx.x, kThreads);
  }
}

// v = *at where `take` (zero elsewhere), by a predicated load into a zeroed register: a select
// between the loaded value and zero would wait for the load where it is written. Through the
// non-coherent path: only for data no block writes while the kernel runs (the key mask, whose
// new column is copied in before the launch).
__device__ __forceinline__ void load_int_if(const int* at, bool take, int& v) {
  v = 0;
  asm volatile("{ .reg .pred p; setp.ne.u32 p, %2, 0; @p ld.global.nc.s32 %0, [%1]; }"
               : "+r"(v)
               : "l"(at), "r"(static_cast<unsigned>(take)));
}

// A round's keys per thread: their key and value vectors are loaded together, before the
// scores need them, so a round costs one memory latency (the item's first round is loaded
// before its prologue, overlapping the q/k/v loads).
// The wide kernel's items take one: with two, its flags-mode kernel spilled registers, and its
// items' RoPE step took 2.2 us a Gemma 3 1B item against 0.4 for Qwen2.5-0.5B's (a spill of a
// key/value register waiting for its load, presumably); with one, 1.0 and decode 3.5% faster.
__host__ __device__ constexpr int keys_per_thread(bool wide) {
  return wide ? 1 : 2;
}

// OLMo 2's whole-projection q/k norms, one warp: the sum of squares of the n values of q or k
// (starting at row `first` of q|k|v), whose values [own, own + dim) (the item's head) go to
// vals. Flags mode: from the q/k/v mailbox, flagged lf.
template <class T, bool kFlags>
__device__ float take_projection(const Params& p, long long first, int n, int own, int dim,
                                 unsigned lf, float* vals) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  float ss = 0.0f;
  if constexpr (kFlags) {
    constexpr int kWords = 4;
    for (int w0 = 0; w0 < n / 2; w0 += 32 * kWords) {
      unsigned words[kWords];
      mail_take<kWords>(p.mail_qkv + first / 2 + w0, lane, 32, min(32 * kWords, n / 2 - w0), lf,
                        p.poll_ns, words);
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const int w = w0 + lane + 32 * i;
        if (w >= n / 2) break;
        const float a = low_half(words[i], T{}), b = high_half(words[i], T{});
        ss += a * a + b * b;
        const int d = 2 * w - own;
        if (d >= 0 && d < dim) {
          vals[d] = a;
          vals[d + 1] = b;
        }
      }
    }
  } else {
    const T* src = static_cast<const T*>(first == 0 ? p.q : p.k);
    for (int i = lane; i < n; i += 32) {
      const float x = to_float(load_cg(src + i));
      ss += x * x;
      if (i >= own && i < own + dim) vals[i - own] = x;
    }
  }
  return ss;
}

// One (q head, key split) item: rope_store's work for the head (as the fused decode attention
// kernel does it), an online softmax over the split's keys in rounds of keys_per_thread(kWide) keys
// per thread, the partial result to global memory (stage_attention combines them). Flags mode:
// q/k/v come from their mailbox flagged lf (the layer's first flag), the result goes out
// flagged lf + 1. kProfile: the item's times into `stamps` where not null (the profile's
// kernel only: the stamps' checks cost 0.9% of decode when they were in every kernel).
template <class T, bool kFlags, bool kProfile, bool kWide, bool kOlmo>
__device__ void attention_item(const Params& p, const LayerPointers& L, int h, int split,
                               int splits, long long past, const Shared& sh, unsigned lf,
                               unsigned long long* stamps) {
  const auto mark = [&](ItemStamp at) {
    if constexpr (kProfile) {
      if (stamps) stamps[at] = global_ns();
    }
  };
  mark(kItemStart);
  const int dim = p.dim, half = dim / 2, kh = h / p.group;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const T* kc = static_cast<const T*>(L.k_cache) + static_cast<long long>(kh) * p.cap * dim;
  const T* vc = static_cast<const T*>(L.v_cache) + static_cast<long long>(kh) * p.cap * dim;
  long long t0, t1;
  split_range(first_visible_key(past, L.window), past + 1, splits, split, t0, t1);
  const int chunks = dim / 8, lanes = p.key_lanes, per_pass = kThreads / lanes;
  const int sub = tid % lanes, slot = tid / lanes;
  // A padding lane (sub >= chunks: heads of 96 values) loads its key's last chunk again, in
  // bounds, and meets zeros in q's padding (sh.qs past dim), so its dot products add nothing
  // and its sums are never written; a predicate instead held a register the hot kernel spilled.
  const int chunk_at = min(sub, chunks - 1) * 8;
  constexpr int kKeysPerThread = keys_per_thread(kWide);
  const long long round_keys = static_cast<long long>(per_pass) * kKeysPerThread;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  // This thread's cached keys and values of the round starting at r0 (zeros past its end and
  // at this step's own position, which is not in the cache yet).
  uint4 kraw[kKeysPerThread], vraw[kKeysPerThread];
  // The round's mask words (zero past its end), compared only where the scores use them: a
  // compare right after the load held the thread, and the prologue behind it, for the mask's
  // round trip.
  int visible[kKeysPerThread];
  const auto load_round = [&](long long r0) {
    const long long r1 = min(r0 + round_keys, t1);
#pragma unroll
    for (int u = 0; u < kKeysPerThread; ++u) {
      const long long t = r0 + slot + u * per_pass;
      const bool cached = t < r1 && t != past;
      kraw[u] = cached ? *reinterpret_cast<const uint4*>(kc + t * dim + chunk_at) : zero;
      vraw[u] = cached ? *reinterpret_cast<const uint4*>(vc + t * dim + chunk_at) : zero;
      load_int_if(p.mask + t, t < r1, visible[u]);
    }
  };
  if (t0 < t1) load_round(t0);

  const T* qrow = static_cast<const T*>(p.q) + static_cast<long long>(h) * dim;
  const T* krow = static_cast<const T*>(p.k) + static_cast<long long>(kh) * dim;
  const T* vrow = static_cast<const T*>(p.v) + static_cast<long long>(kh) * dim;
  const bool writes_cache = split == 0 && h % p.group == 0;
  T* kc_new = static_cast<T*>(L.k_cache) + (static_cast<long long>(kh) * p.cap + past) * dim;
  T* vc_new = static_cast<T*>(L.v_cache) + (static_cast<long long>(kh) * p.cap + past) * dim;
  // Warps 0 and 1 normalise the q head and the new key, warp 2 takes the new value, the rest
  // compute RoPE's angles: every load of the prologue is in flight at once.
  // Flags mode: the head's q (or its kv head's k, v) as dim / 2 words, up to two per lane
  // (four in the wide kernel: heads of 256; four in every kernel cost 1% of decode).
  constexpr int kWords = kWide ? 4 : 2;
  const auto take_head = [&](long long row, unsigned(&words)[kWords]) {
    mail_take<kWords>(p.mail_qkv + row / 2, lane, 32, dim / 2, lf, p.poll_ns, words);
  };
  const long long nq = static_cast<long long>(p.heads) * dim, nk = p.kv_heads * dim;
  if (warp < 2) {
    const T* src = warp == 0 ? qrow : krow;
    const T* norm = static_cast<const T*>(warp == 0 ? L.q_norm : L.k_norm);
    float* vals = warp == 0 ? sh.rq : sh.rk;
    float ss = 0.0f;
    int norm_n = dim;  // the values the norm runs over
    bool whole = false;
    if constexpr (kOlmo) whole = p.full_qk_norm;
    if (whole) {  // OLMo 2: the sum of squares over the whole projection, the head's values kept
      const int own = (warp == 0 ? h : kh) * dim;
      norm_n = warp == 0 ? static_cast<int>(nq) : static_cast<int>(nk);
      norm += own;
      ss = take_projection<T, kFlags>(p, warp == 0 ? 0 : nq, norm_n, own, dim, lf, vals);
      __syncwarp();
    } else if constexpr (kFlags) {
      unsigned words[kWords];
      take_head(warp == 0 ? h * dim : nq + kh * dim, words);
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const int w = lane + 32 * i;
        if (w >= dim / 2) break;
        const float a = low_half(words[i], T{}), b = high_half(words[i], T{});
        vals[2 * w] = a;
        vals[2 * w + 1] = b;
        ss += a * a + b * b;
      }
      __syncwarp();  // the norm below reads other lanes' values
    } else {
      for (int i = lane; i < dim; i += 32) {
        const float x = to_float(load_cg(src + i));
        vals[i] = x;
        ss += x * x;
      }
    }
    if (norm) {
      const float rs = rsqrtf(warp_sum(ss) / static_cast<float>(norm_n) + p.eps);
      for (int i = lane; i < dim; i += 32) {
        vals[i] =
            to_float(from_float<T>(to_float(norm[i]) * to_float(from_float<T>(vals[i] * rs))));
      }
    }
  } else if (warp == 2) {
    if constexpr (kFlags) {
      unsigned words[kWords];
      take_head(nq + nk + kh * dim, words);
#pragma unroll
      for (int i = 0; i < kWords; ++i) {
        const int w = lane + 32 * i;
        if (w >= dim / 2) break;
        sh.vn[2 * w] = low_half(words[i], T{});
        sh.vn[2 * w + 1] = high_half(words[i], T{});
        if (writes_cache) reinterpret_cast<unsigned*>(vc_new)[w] = words[i];
      }
    } else {
      for (int d = lane; d < dim; d += 32) {
        const T vt = load_cg(vrow + d);
        sh.vn[d] = to_float(vt);
        if (writes_cache) vc_new[d] = vt;
      }
    }
  } else {
    const float pos = static_cast<float>(p.positions[0]);
    for (int j = tid - 96; j < half; j += kThreads - 96) {
      float sn, cs;
      sincosf(pos * L.inv_freq[j], &sn, &cs);
      const float scale = L.inv_freq[j] == 0.0f ? 1.0f : L.rope_scaling;  // 0: not rotated
      sh.cs[j] = cs * scale;
      sh.sn[j] = sn * scale;
    }
  }
  consumers_sync();
  mark(kItemInputs);
  for (int d = tid; d < dim; d += kThreads) {
    const int j = d < half ? d : d - half;
    const float c = sh.cs[j], sn = sh.sn[j];
    const float* rq = sh.rq;
    const float* rk = sh.rk;
    const T qt =
        from_float<T>(d < half ? rq[d] * c - rq[d + half] * sn : rq[d] * c + rq[d - half] * sn);
    const T kt =
        from_float<T>(d < half ? rk[d] * c - rk[d + half] * sn : rk[d] * c + rk[d - half] * sn);
    sh.qs[d] = to_float(qt) * p.scale;
    sh.kn[d] = to_float(kt);
    if (writes_cache) kc_new[d] = kt;
  }
  for (int d = dim + tid; d < lanes * 8; d += kThreads) {  // the padding lanes' zeros
    sh.qs[d] = 0.0f;
    sh.kn[d] = 0.0f;
    sh.vn[d] = 0.0f;
  }
  consumers_sync();
  mark(kItemRoped);

  float qv[8];  // this thread's dimensions of q (the new key and value stay in shared memory)
#pragma unroll
  for (int i = 0; i < 8; ++i) qv[i] = sh.qs[sub * 8 + i];
  float m_run = -FLT_MAX, l_run = 0.0f, acc[8] = {};
  for (long long r0 = t0; r0 < t1; r0 += round_keys) {
    if (r0 != t0) load_round(r0);
    float m_loc = -FLT_MAX, score[kKeysPerThread];
#pragma unroll
    for (int u = 0; u < kKeysPerThread; ++u) {  // uniform: shuffles inside
      const long long t = r0 + slot + u * per_pass;
      float kf[8];
      widen8<T>(kraw[u], kf);
      if (t == past) {
#pragma unroll
        for (int i = 0; i < 8; ++i) kf[i] = sh.kn[sub * 8 + i];
      }
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < 8; ++i) dot += qv[i] * kf[i];
      for (int o = lanes / 2; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
      score[u] = visible[u] != 0 ? (kWide ? soft_capped(dot, p.softcap) : dot) : -FLT_MAX;
      m_loc = fmaxf(m_loc, score[u]);
    }
    const float m_new = fmaxf(m_run, block_max(m_loc, sh.reduce));
    // Each thread's probabilities stay in registers; the threads of a key hold the same ones,
    // and the sum counts each key once (its first dimension chunk).
    float l_loc = 0.0f, pr[kKeysPerThread];
#pragma unroll
    for (int u = 0; u < kKeysPerThread; ++u) {
      pr[u] = score[u] == -FLT_MAX ? 0.0f : __expf(score[u] - m_new);
      if (sub == 0) l_loc += pr[u];
    }
    l_loc = block_sum(l_loc, sh.reduce);
    const float rescale = m_run == -FLT_MAX ? 0.0f : __expf(m_run - m_new);
    l_run = l_run * rescale + l_loc;
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] *= rescale;
    m_run = m_new;
#pragma unroll
    for (int u = 0; u < kKeysPerThread; ++u) {
      if (pr[u] == 0.0f) continue;  // a masked key's value (maybe never written) is not read
      float vf[8];
      widen8<T>(vraw[u], vf);
      if (r0 + slot + u * per_pass == past) {
#pragma unroll
        for (int i = 0; i < 8; ++i) vf[i] = sh.vn[sub * 8 + i];
      }
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[i] += pr[u] * vf[i];
    }
  }
  mark(kItemScored);
  // The threads of one dimension chunk: first within the warp, then across warps.
  for (int o = lanes; o < 32; o <<= 1) {
#pragma unroll
    for (int i = 0; i < 8; ++i) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
  }
  float* part = sh.scores;  // [kWarps][dim]
  if (lane < chunks) {
#pragma unroll
    for (int i = 0; i < 8; ++i) part[warp * dim + lane * 8 + i] = acc[i];
  }
  consumers_sync();
  if (splits == 1) {  // the whole head: its output, no combine
    T* attn = static_cast<T*>(p.attn) + static_cast<long long>(h) * dim;
    for (int d = tid; d < dim; d += kThreads) {
      float s = 0.0f;
      for (int w = 0; w < kWarps; ++w) s += part[w * dim + d];
      const T value = from_float<T>(l_run > 0.0f ? s / l_run : 0.0f);
      attn[d] = value;
      if constexpr (kFlags) sh.rq[d] = to_float(value);
    }
    consumers_sync();        // shared memory is reused by the next item
    if constexpr (kFlags) {  // the head's output in pairs
      for (int j = tid; j < dim / 2; j += kThreads) {
        mail_put(p.mail_attn + (static_cast<long long>(h) * dim) / 2 + j, lf + 1,
                 pack_pair<T>(sh.rq[2 * j], sh.rq[2 * j + 1]));
      }
      consumers_sync();
    }
    mark(kItemDone);
    return;
  }
  float* out = p.partials + (static_cast<long long>(h) * splits + split) * partial_floats(dim);
  MailWord* mail = p.mail_part + (static_cast<long long>(h) * splits + split) * (dim + 2);
  for (int d = tid; d < dim; d += kThreads) {
    float s = 0.0f;
    for (int w = 0; w < kWarps; ++w) s += part[w * dim + d];
    out[d] = s;
    if constexpr (kFlags) mail_put(mail + d, lf + 1, __float_as_uint(s));
  }
  if (tid == 0) {
    out[dim] = m_run;
    out[dim + 1] = l_run;
    if constexpr (kFlags) {
      mail_put(mail + dim, lf + 1, __float_as_uint(m_run));
      mail_put(mail + dim + 1, lf + 1, __float_as_uint(l_run));
    }
  }
  consumers_sync();  // shared memory is reused by the next item
  mark(kItemDone);
}

// Flags mode: splits s0 .. s0 + N of head h (those below `splits`; zeros for the rest), as
// stage_attention reads them: the running max and sum (x, y of stats), dimensions d0 .. d0 + 8
// (lo, hi), once all ten words of each carry `flag`.
template <int N>
__device__ __forceinline__ void take_partials(const Params& p, int h, int d0, int s0, int splits,
                                              unsigned flag, float4 (&stats)[N], float4 (&lo)[N],
                                              float4 (&hi)[N]) {
  MailWord w[N][10] = {};
  const auto load = [&](int i) {
    const MailWord* at = p.mail_part + (static_cast<long long>(h) * splits + s0 + i) * (p.dim + 2);
    mail_load2(at + p.dim, w[i][0], w[i][1]);
#pragma unroll
    for (int j = 0; j < 4; ++j) mail_load2(at + d0 + 2 * j, w[i][2 + 2 * j], w[i][3 + 2 * j]);
  };
#pragma unroll
  for (int i = 0; i < N; ++i) {
    if (s0 + i < splits) load(i);
  }
  const auto has = [&](int i) {
    bool all = s0 + i < splits;
#pragma unroll
    for (int j = 0; j < 10; ++j) all = all && mail_has(w[i][j], flag);
    return all || s0 + i >= splits;
  };
  for (;;) {
    bool ready = true;
#pragma unroll
    for (int i = 0; i < N; ++i) ready = ready && has(i);
    if (ready) break;
    mail_backoff(p.poll_ns);
#pragma unroll
    for (int i = 0; i < N; ++i) {
      if (!has(i)) load(i);
    }
  }
  const auto f = [](MailWord x) { return __uint_as_float(static_cast<unsigned>(x)); };
#pragma unroll
  for (int i = 0; i < N; ++i) {
    stats[i] = make_float4(f(w[i][0]), f(w[i][1]), 0.0f, 0.0f);
    lo[i] = make_float4(f(w[i][2]), f(w[i][3]), f(w[i][4]), f(w[i][5]));
    hi[i] = make_float4(f(w[i][6]), f(w[i][7]), f(w[i][8]), f(w[i][9]));
  }
}

// Flags mode (kFlags): the partials from their mailbox, flagged `flag`, two splits at a time
// (the words of four did not fit the registers beside the rest of the kernel).
template <class T, int kBatch, bool kFlags>
__device__ void combine_partials(const Params& p, const Shared& sh, int splits, unsigned flag) {
  uint4* xs = static_cast<uint4*>(sh.xs);
  const int vecs = p.heads * p.dim / 8, stride = partial_floats(p.dim);
  for (int c = threadIdx.x; c < vecs; c += kThreads) {
    const int h = c * 8 / p.dim, d0 = c * 8 % p.dim;
    const float* base = p.partials + static_cast<long long>(h) * splits * stride;
    float m = -FLT_MAX, l = 0.0f, a[8] = {};
    for (int s0 = 0; s0 < splits; s0 += kBatch) {
      float4 stats[kBatch], lo[kBatch], hi[kBatch];
      if constexpr (kFlags) {
        take_partials<kBatch>(p, h, d0, s0, splits, flag, stats, lo, hi);
      } else {
#pragma unroll
        for (int i = 0; i < kBatch; ++i) {
          const float4 none = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
          const float* part = base + static_cast<long long>(s0 + i) * stride;
          const bool in = s0 + i < splits;
          stats[i] = in ? __ldcg(reinterpret_cast<const float4*>(part + p.dim)) : none;
          lo[i] = in ? __ldcg(reinterpret_cast<const float4*>(part + d0)) : none;
          hi[i] = in ? __ldcg(reinterpret_cast<const float4*>(part + d0 + 4)) : none;
        }
      }
      float mb = m;
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (stats[i].y > 0.0f) mb = fmaxf(mb, stats[i].x);
      }
      const float f = l > 0.0f ? __expf(m - mb) : 0.0f;  // l == 0: a holds zeros
      l *= f;
#pragma unroll
      for (int j = 0; j < 8; ++j) a[j] *= f;
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        const float w = stats[i].y > 0.0f ? __expf(stats[i].x - mb) : 0.0f;
        l += stats[i].y * w;
        const float v[8] = {lo[i].x, lo[i].y, lo[i].z, lo[i].w, hi[i].x, hi[i].y, hi[i].z, hi[i].w};
#pragma unroll
        for (int j = 0; j < 8; ++j) a[j] += v[j] * w;
      }
      m = mb;
    }
    uint4 packed;
    T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int i = 0; i < 8; ++i) out[i] = from_float<T>(l > 0.0f ? a[i] / l : 0.0f);
    xs[c] = packed;
  }
  consumers_sync();
}

// The attention output o_proj multiplies, into xs: each head's split partials combined
// (weights exp(max_s - max), a split without keys weighs 0, a query that sees no key gets
// zeros) and rounded to T. Every block combines for itself; the head's last split had combined
// them inside the attention phase, after a fence, an arrival count and two more dependent L2
// round trips (its item took ~6 us where the others took ~3). The loads of several splits are
// in flight together (four in barrier mode, two in flags mode), so they cost one L2 round trip
// (a loop that loaded a split's max only once its sum showed it had keys cost two per split:
// +4-6 us per layer); later batches rescale what came before, as the online softmax does.
// Flags mode: from the mailbox, flagged `flag` (four lanes per output vector, each polling its
// share of the splits, measured 3-8% slower: four times the pollers).
template <class T, bool kFlags>
__device__ void stage_attention(const Params& p, const Shared& sh, int splits, unsigned flag) {
  if constexpr (kFlags) {
    combine_partials<T, 2, true>(p, sh, splits, flag);
  } else {
    combine_partials<T, 4, false>(p, sh, splits, flag);
  }
}

// ---- The kernel ------------------------------------------------------------------------

template <class T>
__device__ __forceinline__ float bias_at(const void* bias, int row) {
  return bias ? to_float(static_cast<const T*>(bias)[row]) : 0.0f;
}

// What the thread owning row i of the block's slices keeps in registers: the residual's row
// (the o and down slices are the same rows of the hidden size) and the layer's biases of its
// rows, loaded a layer ahead so no epilogue waits on memory.
struct RowState {
  float resid = 0.0f, b_qkv = 0.0f, b_o = 0.0f, b_gate = 0.0f, b_up = 0.0f, b_down = 0.0f;
};

template <class T>
__device__ void load_row_biases(const Params& p, const Shared& sh, const LayerPointers& L,
                                RowState& st) {
  const int t = static_cast<int>(threadIdx.x);
  const int nq = p.heads * p.dim, nk = p.kv_heads * p.dim;
  int r = sh.slices[2 * kQkv] + t;
  if (r < sh.slices[2 * kQkv + 1]) {
    st.b_qkv = r < nq ? bias_at<T>(L.bq, r)
                      : (r < nq + nk ? bias_at<T>(L.bk, r - nq) : bias_at<T>(L.bv, r - nq - nk));
  }
  r = sh.slices[2 * kOut] + t;
  if (r < sh.slices[2 * kOut + 1]) {
    st.b_o = bias_at<T>(L.bo, r);
    st.b_down = bias_at<T>(L.bd, r);
  }
  r = sh.slices[2 * kGateUp] + t;
  if (r < sh.slices[2 * kGateUp + 1]) {
    st.b_gate = bias_at<T>(L.bg, r);
    st.b_up = bias_at<T>(L.bu, r);
  }
}

__device__ __forceinline__ void mark_staged(const Params& p, Pipeline& pl) {
  if (p.timeline && threadIdx.x == 0) pl.staged = global_ns();
}

// The grid barrier ending a phase, with the profile's three numbers when one is kept.
__device__ __forceinline__ void end_phase(const Params& p, Pipeline& pl, int layer, int phase,
                                          bool barrier) {
  unsigned long long* at = nullptr;
  if (p.timeline && threadIdx.x == 0) {
    at =
        p.timeline + (static_cast<long long>(layer) * 5 + phase) * kStamps * gridDim.x + blockIdx.x;
    const unsigned long long now = global_ns();
    at[kDone * gridDim.x] = now;
    at[kWaited * gridDim.x] = pl.waited;
    // A phase without staging or chunks (attention) counts as all work after its release.
    at[kStaged * gridDim.x] = pl.staged ? pl.staged : now;
    at[kFirstReady * gridDim.x] = pl.first_ready ? pl.first_ready : now;
    at[kLastSummed * gridDim.x] = pl.last_summed ? pl.last_summed : now;
    pl.waited = pl.staged = pl.first_ready = pl.last_summed = 0;
  }
  if (barrier) grid_barrier(reinterpret_cast<unsigned long long*>(p.sync), gridDim.x, kThreads);
  if (at) at[kReleased * gridDim.x] = global_ns();
}

// kFlags: phases hand over through the mailboxes (flags mode) instead of grid barriers; a
// kernel of its own, so that each mode gets its own register allocation. kProfile: the kernel
// that ANVIL_CUDA_DECODE_PROFILE runs, with the attention items' stamps. kWide: head sizes up
// to 256, GeGLU, softcapped scores, and the output norms' staging where Params::out_norms
// (Gemma's layers; in the other kernels that staging made them spill registers, and the rest
// cost them 1% of decode). kOlmo (with kWide): OLMo 2's layers, without input norms and with
// whole-projection q/k norms (in Gemma's kernel that code cost Gemma 3 1B 6% of decode).
template <class T, bool kFlags, bool kProfile, bool kWide, bool kOlmo>
__global__ void __launch_bounds__(kBlockThreads, 1)
    decode_layers_kernel(const __grid_constant__ Params p) {
  static_assert(kWide || !kOlmo, "OLMo 2's layers need the wide kernel's output norms");
  extern __shared__ __align__(128) char smem[];
  const Shared sh = carve<kWide>(p, smem);
  const bool out_norms = kWide && p.out_norms;
  const bool plain = kOlmo && p.plain_input;
  Pipeline pl;
  const long long past = p.past_dev ? *p.past_dev : p.past_host;
  const int splits = active_splits(p, past);
  const int items = p.heads * splits;
  compute_slices(p, items, sh.slices);
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.slots; ++s) {
      mbarrier_init(&sh.bars[s]);
      mbarrier_init(&sh.empty[s]);
    }
    mbarrier_init_fence();
    if (kFlags) *sh.flag_base = launch_flag_base(p);
  }
  __syncthreads();
  if (threadIdx.x >= kThreads) {
    produce<T>(p, sh);
    return;
  }
  T* x = static_cast<T*>(p.x);
  const int nq = p.heads * p.dim, nk = p.kv_heads * p.dim;
  const int item0 = first_item(p, items);
  RowState st;
  if (sh.slices[2 * kOut] + static_cast<int>(threadIdx.x) < sh.slices[2 * kOut + 1]) {
    st.resid = to_float(x[sh.slices[2 * kOut] + threadIdx.x]);
  }
  load_row_biases<T>(p, sh, p.layer[0], st);
  copy_norm(sh, p.layer[0].input_norm, p.hidden);
  // Each row's epilogue; it returns the row's value as stored (what flags mode sends). Flags
  // mode still stores every phase's plain outputs, which only barrier mode reads: without them
  // it measured 0.3% slower (docs/perf.md, fifteenth session).
  const auto qkv_row = [&](int row, float s, float) {
    T* out = static_cast<T*>(row < nq ? p.q : (row < nq + nk ? p.k : p.v));
    const T value = from_float<T>(s + st.b_qkv);
    out[row < nq ? row : (row < nq + nk ? row - nq : row - nq - nk)] = value;
    return to_float(value);
  };
  // The product rounded, then (Granite) scaled and rounded again as the scale op does, then
  // added to the residual.
  const auto add_residual = [&](int row, float s, float bias) {
    float out = to_float(from_float<T>(s + bias));
    if (p.residual_scale != 1.0f) out = to_float(from_float<T>(out * p.residual_scale));
    const T sum = from_float<T>(st.resid + out);
    st.resid = to_float(sum);
    x[row] = sum;
    return st.resid;
  };
  // Output norms: the product (rounded, with its bias) goes out as y; the next staging adds it.
  const auto put_y = [&](int row, float s, float bias) {
    const T value = from_float<T>(s + bias);
    static_cast<T*>(p.y)[row] = value;
    return to_float(value);
  };
  const auto o_row = [&](int row, float s, float) {
    return out_norms ? put_y(row, s, st.b_o) : add_residual(row, s, st.b_o);
  };
  const auto down_row = [&](int row, float s, float) {
    return out_norms ? put_y(row, s, st.b_down) : add_residual(row, s, st.b_down);
  };
  const auto swiglu_row = [&](int row, float g, float u) {
    const float gv = to_float(from_float<T>(g + st.b_gate));
    const float uv = to_float(from_float<T>(u + st.b_up));
    const T value = from_float<T>((kWide && p.gelu ? gated<true>(gv) : gated<false>(gv)) * uv);
    static_cast<T*>(p.act)[row] = value;
    return to_float(value);
  };
  constexpr bool mail = kFlags;
  const unsigned base = mail ? *sh.flag_base : 0u;
  // A block with no rows in a phase stages nothing for it: in flags mode nothing waits for
  // its reads, so a word it would read may already carry a later phase's flag.
  const auto has_rows = [&](int phase) { return sh.slices[2 * phase + 1] > sh.slices[2 * phase]; };
  for (int l = 0; l < p.layers; ++l) {
    const LayerPointers& L = p.layer[l];
    const unsigned lf = base + 5u * static_cast<unsigned>(l);  // flags mode: lf + phase
    prefetch_kv<T>(p, L, past, splits);
    // The first layer's input is the previous kernel's x; later ones the last down's words
    // (output norms: the residual after attention and the MLP's output, added here).
    if (out_norms && l > 0 && has_rows(kQkv)) {
      stage_residual<T>(p, sh, static_cast<const T*>(p.x2), mail ? p.mail_x2 : nullptr, lf - 3,
                        mail ? p.mail_y : nullptr, lf - 1, x, mail ? p.mail_x : nullptr, lf - 1,
                        sh.slices[2 * kPhases], sh.slices[2 * kPhases + 1], true, plain);
    } else if (has_rows(kQkv)) {
      stage_normed<T>(p, sh, x, p.hidden, mail && l > 0 ? p.mail_x : nullptr, lf - 1, plain);
    } else {
      async_copy_wait();  // the norm's copy: the next one goes to the same place
    }
    mark_staged(p, pl);
    consume_phase<T>(p, pl, sh, kQkv, qkv_row, mail ? p.mail_qkv : nullptr, lf);
    end_phase(p, pl, l, 0, !mail);
    for (int it = item0; it < items; it += gridDim.x) {
      attention_item<T, kFlags, kProfile, kWide, kOlmo>(
          p, L, it / splits, it % splits, splits, past, sh, lf,
          kProfile && it == item0 ? item_stamps(p, l) : nullptr);
    }
    end_phase(p, pl, l, 1, !mail);
    if (has_rows(kOut) && splits == 1) {
      stage_plain<T>(p, sh, static_cast<const T*>(p.attn), p.heads * p.dim,
                     mail ? p.mail_attn : nullptr, lf + 1);
    } else if (has_rows(kOut)) {
      stage_attention<T, kFlags>(p, sh, splits, lf + 1);
    }
    mark_staged(p, pl);
    MailWord* const residual_mail = out_norms ? p.mail_y : p.mail_x;
    consume_phase<T>(p, pl, sh, kOut, o_row, mail ? residual_mail : nullptr, lf + 2);
    copy_norm(sh, L.post_norm, p.hidden);
    if (out_norms) copy_norm_to(output_norm(p, sh), L.attn_out_norm, p.hidden);
    end_phase(p, pl, l, 2, !mail);
    if (out_norms) {  // every block has gate/up rows (unfit_reason): all of them stage
      stage_residual<T>(p, sh, x, mail && l > 0 ? p.mail_x : nullptr, lf - 1,
                        mail ? p.mail_y : nullptr, lf + 2, static_cast<T*>(p.x2),
                        mail ? p.mail_x2 : nullptr, lf + 2, sh.slices[2 * kOut],
                        sh.slices[2 * kOut + 1], true, plain);
    } else if (has_rows(kGateUp)) {
      stage_normed<T>(p, sh, x, p.hidden, mail ? p.mail_x : nullptr, lf + 2, plain);
    } else {
      async_copy_wait();
    }
    mark_staged(p, pl);
    consume_phase<T>(p, pl, sh, kGateUp, swiglu_row, mail ? p.mail_act : nullptr, lf + 3);
    end_phase(p, pl, l, 3, !mail);
    if (has_rows(kDown)) {
      stage_plain<T>(p, sh, static_cast<const T*>(p.act), p.inter, mail ? p.mail_act : nullptr,
                     lf + 3);
    }
    mark_staged(p, pl);
    consume_phase<T>(p, pl, sh, kDown, down_row, mail ? residual_mail : nullptr, lf + 4);
    if (l + 1 < p.layers) {
      copy_norm(sh, p.layer[l + 1].input_norm, p.hidden);
      load_row_biases<T>(p, sh, p.layer[l + 1], st);
    }
    if (out_norms) copy_norm_to(output_norm(p, sh), L.mlp_out_norm, p.hidden);
    end_phase(p, pl, l, 4, !mail && (l + 1 < p.layers || out_norms));
  }
  // Output norms: the last MLP output, added by the blocks that own the residual's rows.
  if (out_norms && has_rows(kDown)) {
    const unsigned lf = base + 5u * static_cast<unsigned>(p.layers - 1);
    stage_residual<T>(p, sh, static_cast<const T*>(p.x2), mail ? p.mail_x2 : nullptr, lf + 2,
                      mail ? p.mail_y : nullptr, lf + 4, x, nullptr, 0, sh.slices[2 * kDown],
                      sh.slices[2 * kDown + 1], false, plain);
  } else if (out_norms) {
    async_copy_wait();
  }
}

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
