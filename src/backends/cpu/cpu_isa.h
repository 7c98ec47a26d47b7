// Which instruction-set level the CPU kernels use: detected once, lowered (never raised) by
// ANVIL_CPU_ISA=baseline|avx2|avxvnni|avx512|avx512bf16|amx so every kernel path can be tested on a
// machine that has more.
#pragma once

#include <cstdint>

namespace anvil::cpu {

// Ordered: each level includes the ones before it.
//   avx2:   AVX2 + FMA + F16C (Haswell, Zen 1 and later)
//   avxvnni: avx2 + AVX-VNNI (256-bit int8 dot products, VEX-encoded: Alder Lake and later
//           client cores, Zen 5); it matters only where avx512 is not reached, and a CPU
//           without it that is held to this level runs at avx2
//   avx512: AVX-512 F/BW/VL/DQ + VNNI (int8 dot products) on top of avx2 (Ice Lake, Zen 4 and
//           later; Skylake-X has no VNNI and stays at avx2)
//   avx512bf16: avx512 + AVX512_BF16 (bf16 pair dot products: Cooper Lake, Sapphire Rapids,
//           Zen 4). bf16 weights then multiply bf16-rounded activations, as llama.cpp's and
//           transformers' bf16 paths do; below it their products are exact in float32.
//   amx:    avx512bf16 + AMX tiles with int8 and bf16 multiplies (Sapphire Rapids and later
//           Xeons), once Linux grants the process the tile state (arch_prctl): prefill
//           products of the repacked 32-value block types and of bf16 weights run on tiles.
enum class Isa { baseline, avx2, avxvnni, avx512, avx512bf16, amx };

Isa isa();
const char* isa_name(Isa isa);

/// Whether batch-1 products of the 4- to 6-bit repacked block types (Q4_0, Q4_1, Q5_0, Q5_1,
/// Q4_K, Q5_K, Q6_K) take the 512-bit decode rows at avx512 and above (a zmm holds two steps of
/// a group's rows, their activation words picked by vpermd) rather than the 256-bit ones (one
/// step, each word a broadcast). True except on CPUs that execute a 512-bit instruction as two
/// 256-bit halves (AMD family 19h: Zen 4), where the 256-bit rows do the same work in fewer
/// micro-ops (Q4_0 +8%, Q5_0 and Q6_K +23-25% a thread in cache on Zen 4; on a Sapphire Rapids
/// Xeon the 512-bit rows are ~6% faster).
/// ANVIL_CPU_DECODE_ROWS=256|512 chooses, so both are tested on any AVX-512 machine.
bool wide_decode_rows();

/// Whether decode attention reads each ~128 KB window of a task's cached keys and values before
/// its arithmetic (cache_touch.h) rather than prefetching one block of keys ahead. True on AMD
/// family 19h, where a walk from DRAM otherwise ran at a core's few outstanding misses (Zen 4:
/// Qwen3-0.6B's attention 65-81 -> 41-42 us a layer; Zen 3 not measured); false elsewhere (a
/// Sapphire Rapids Xeon's streamer follows the walk: there the windows made it 10-15% slower).
/// ANVIL_CPU_ATTENTION_READS=window|prefetch chooses.
bool attention_window_reads();

/// How far ahead (bytes) a batch-1 product of the repacked block types and of bf16 weights (the
/// pair products at avx512bf16 and above) requests its weights, a block's lines as the block
/// begins (both decode row widths); 0 for none. The requests go to L2 (prefetcht1): on a second
/// Xeon (480 MB L3) requests into L1 held the rows to 18-21 GB/s on two threads and depended on
/// the distance (bf16 rows 104% of the floor at 2 KB, 79% at 4 KB or more), requests into L2
/// streamed 23 (Q4_0) to 30 GB/s (Q8_0) at any distance from 2 to 16 KB; L1's few fill
/// buffers, not L2's queue, held those. 4 KB, except on AMD family 19h: a Sapphire Rapids Xeon
/// guest (512-bit rows) ran 1.40-1.56x for Q4_0, Q4_1 and Q4_K_M, 1.20-1.24x for Q8_0 and 1.25x
/// for bf16 with it, while on Zen 4 (256-bit rows) the hardware prefetcher alone kept up: Q8_0
/// and bf16 3-4% slower with the requests, and in the hours when the machine read at 55-59
/// GB/s Qwen2.5-0.5B Q4_0 decoded 127-134 tok/s with them against 146-163 without (Q4_K_M
/// 98-103 against 112), equal within noise at 33-38 GB/s (docs/perf.md, thirty-first session).
/// ANVIL_CPU_DECODE_READ_AHEAD=BYTES chooses (0 turns it off).
long decode_read_ahead();

/// Whether products of bf16 weights with two or more activation rows (prefill, batched decode;
/// without AMX) take AVX512_BF16's pair dot products (the activations rounded to bf16) rather
/// than the weights widened to float32 and float32 FMA (the activations as they are: packed
/// panels from 16 rows, 4 x 4 tiles below). Only at avx512bf16 and above, and decided by which
/// multiplies faster on this core, timed once (kernels_bf16dot.h: bf16_pair_speedup, ~0.3 ms):
/// the pair products where they reach at least 0.8 of FMA's multiply-adds per second (the pair
/// tiles keep ~95% of theirs, the widened panels ~80% of FMA's after the packing). Zen 4 issues
/// vdpbf16ps as fast as FMA (twice its multiply-adds); a Sapphire Rapids-class Xeon guest
/// without AMX issues it once every two cycles (0.49 of FMA's rate), where widening made a
/// Qwen2.5-0.5B bf16 prefill of 128 tokens 1.6x faster and batched decode of 2-8 rows 1.5x
/// (docs/perf.md, forty-seventh session). ANVIL_CPU_BF16_PRODUCTS=pairs|widened chooses, so
/// both are tested on any avx512bf16 machine. Batch-1 decode keeps the pair products either
/// way: it is bound by the weights' bytes, not by the multiplies.
bool bf16_pair_products();

/// Whether a CPU product of bf16 weights with `rows` activation rows rounds the activations to
/// bf16 first: AMX's tiles do (amx, from kAmxMinRows rows), and so do the pair products (from
/// avx512bf16: batch-1 decode, and several rows where bf16_pair_products); the widened weights
/// do not. The tests' references round where this says the kernels do.
bool bf16_rows_rounded(int64_t rows);

/// Why the CPU runs below amx although it has AMX (the OS refused the tile state), else empty.
const char* amx_refusal();

}  // namespace anvil::cpu
