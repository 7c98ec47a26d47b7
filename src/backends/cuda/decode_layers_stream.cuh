// The one-launch decode kernel's weight stream (decode_layers.cu): each block's slices of every
// phase's rows, the bulk copies that stream them layer after layer into the ring of shared-
// memory slots, and a phase's products consumed chunk by chunk from the ring. Included by
// decode_layers.cu only.
#pragma once

#include "backends/cuda/decode_layers_params.cuh"
#include "backends/cuda/weight_stream.cuh"

namespace anvil::cuda {
namespace {

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
__device__ void issue_chunk(const Params& p, const Chunk& ch, char* dst, uint64_t* bar,
                            uint64_t l2_policy) {
  const LayerPointers& L = p.layer[ch.layer];
  const int k = phase_k(p, ch.phase);
  const unsigned bytes = static_cast<unsigned>(ch.rows) * k * sizeof(T);
  const long long at = static_cast<long long>(ch.row) * k;
  // Copies of at most piece_bytes each: several requests in flight per chunk.
  const auto copy = [&](char* to, const T* from, unsigned n) {
    const char* src = reinterpret_cast<const char*>(from);
    for (unsigned off = 0; off < n; off += p.piece_bytes) {
      bulk_copy_to_shared(to + off, src + off, min(n - off, static_cast<unsigned>(p.piece_bytes)),
                          bar, l2_policy);
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
  const uint64_t l2_policy = weight_stream_policy();
  Cursor c;
  Chunk ch;
  for (int i = 0; next_chunk(p, sh.slices, c, ch); ++i) {
    const int slot = i % p.slots;
    if (i >= p.slots) {
      mbarrier_wait(&sh.empty[slot], static_cast<unsigned>(i / p.slots - 1) & 1u);
    }
    async_proxy_fence();
    issue_chunk<T>(p, ch, sh.ring + static_cast<long long>(slot) * p.slot_bytes, &sh.bars[slot],
                   l2_policy);
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

}  // namespace
}  // namespace anvil::cuda
