// The one-launch decode kernel's shapes and parameters (decode_layers.cu): the block size,
// the layer pointers and launch parameters the host fills, the shared-memory layout, and the
// small device helpers every phase uses (vector widening, block reductions), with the CUDA
// helpers the other parts share. Included by decode_layers.cu only (its anonymous namespace).
#pragma once

#include <cstdint>

#include "backends/cuda/bulk_copy.cuh"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/mailbox.cuh"
#include "backends/cuda/mma.cuh"
#include "backends/cuda/small_divisor.h"

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
  int split_keys;         // keys per attention split to aim for
  int single_split_keys;  // up to this many keys a head takes one split: no combine
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

}  // namespace
}  // namespace anvil::cuda
