// Attention over the KV cache on AVX2 + FMA + F16C CPUs (no AVX-512): query rows that share a
// KV head walk a range of its keys together, in blocks of 8, so each key and value is read and
// widened once for all of them (flash-decoding's partial states, merged by the caller). The
// portable loop it replaces read the cache once per query row and widened each half element in
// scalar code: a quarter of a Qwen2.5-0.5B decode step at ~150 keys. Compiled with -mavx2 -mfma
// -mf16c and called only after runtime detection; free of other headers, like
// kernels_avx512.h.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// Whether the kernels below take head size `dim` (whole 256-bit vectors).
constexpr bool attention_avx2_takes(int64_t dim) {
  return dim > 0 && dim % 8 == 0;
}

/// For `rows` query rows (q[r]: dim floats; row r sees keys t <= last[r] whose key_mask[t] is
/// not 0, and under a sliding window (window > 0) none before last[r] - window + 1), over keys
/// [begin, end) of the head's cache k, v (dim elements per key) only: leaves each row's
/// unnormalised state for the caller to merge: acc[r * dim ..] = sum_t exp(s_t - m[r]) v_t, m[r] =
/// the largest visible score (-inf when none), l[r] = sum_t exp(s_t - m[r]). Scores are q.k *
/// scale, then softcap * tanh(s / softcap) where softcap > 0 (Gemma 2). `scratch` is not used
/// (the AVX-512 kernel, which shares the signature, uses it).
void attention_rows_partial_avx2(int rows, const float* const* q, const int64_t* last,
                                 int64_t window, const float* k, const float* v,
                                 const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                                 float scale, float softcap, float* acc, float* m, float* l,
                                 float* scratch);
/// The same over a half-precision cache (IEEE half bits).
void attention_rows_partial_avx2(int rows, const float* const* q, const int64_t* last,
                                 int64_t window, const uint16_t* k, const uint16_t* v,
                                 const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                                 float scale, float softcap, float* acc, float* m, float* l,
                                 float* scratch);

}  // namespace anvil::cpu
