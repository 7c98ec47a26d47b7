// Reading a decode attention task's keys and values ahead of its arithmetic. A task walks a
// few KB to a few hundred KB of one KV head's cache, which a decode step's weight stream has
// pushed out to DRAM. Walked block by block, the lines came at the pace of the core's few
// outstanding misses (~5-7 GB/s on Zen 4, software prefetch a block or more ahead changing
// nothing: the arithmetic between blocks leaves the out-of-order window no room), while a bare
// read of the same lines runs at the stream's rate (~15 GB/s a core). Compiled for the baseline
// ISA and called once per window, so the AVX2 and AVX-512 kernels share it without inline code
// built for two ISAs.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// Loads one word of every 64-byte line of [k, k + bytes) and [v, v + bytes), the two in step.
void touch_key_value_lines(const void* k, const void* v, int64_t bytes);

/// Keys per touched window for a cache of row_bytes per key (keys and values together ~128 KB,
/// which stays in L2 on every CPU the kernels run on), a multiple of `block` keys.
int64_t touch_window_keys(int64_t row_bytes, int64_t block);

}  // namespace anvil::cpu
