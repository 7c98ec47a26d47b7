// How a decode attention task gets its cached keys and values from memory ahead of its
// arithmetic. A task walks a few KB to a few hundred KB of one KV head's cache, which the step's
// weight stream has pushed out to DRAM. Two ways, chosen per CPU (cpu::attention_window_reads):
//
// - prefetch: the keys one block ahead requested a few at a time as the block's arithmetic
//   reaches each group of keys. Intel's cores stream the walk so; the whole next block
//   requested at once as a block started (128 lines for Qwen3-0.6B's head size) ran 17-20%
//   slower from DRAM on a Xeon with AMX (docs/perf.md, twenty-ninth session).
// - window: each ~128 KB window of keys and values read (one word a line) before its
//   arithmetic. On Zen 4 a walk fetched block by block ran at the pace of a core's few
//   outstanding misses (~5-7 GB/s, however far ahead the prefetches went: the arithmetic between
//   blocks leaves the out-of-order window no room), while a bare read of the same lines runs at
//   the stream's rate (~15 GB/s a core).
//
// Compiled for the baseline ISA, so the AVX2 and AVX-512 kernels share it without inline code
// built for two ISAs; a call per block costs nothing beside a block's arithmetic.
#pragma once

#include <cstdint>

namespace anvil::cpu {

class KeyValueReadAhead {
 public:
  /// A walk over keys [begin, end) of a head's cache k, v (row_bytes per key), `block` keys at
  /// a time.
  KeyValueReadAhead(const void* k, const void* v, int64_t row_bytes, int64_t begin, int64_t end,
                    int64_t block);
  /// Called as the block starting at key t0 begins (window mode reads its window here).
  void before_block(int64_t t0) const;
  /// Called as the arithmetic reaches keys [t, t + n) of a block (prefetch mode requests the
  /// keys a block further on here).
  void before_keys(int64_t t, int64_t n) const;

 private:
  void prefetch_keys(int64_t from, int64_t to) const;

  const char *k_, *v_;
  int64_t row_bytes_, begin_, end_, block_, window_;
  bool windows_;
};

}  // namespace anvil::cpu
