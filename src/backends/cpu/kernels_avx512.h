// The AVX-512 kernels (kernels_avx512.cc, compiled with -mavx512f/bw/vl/dq/vnni and reached
// only when cpu::isa() is Isa::avx512). Kept free of other headers so no inline code compiled
// for AVX-512 can leak into the generic build.
#pragma once

#include <cstddef>
#include <cstdint>

namespace anvil::cpu {

struct Lanes;  // side_by_side.h

/// Activations quantized per 32-value block to int8, as llama.cpp's Q8_0/Q8_1 (d = max|x| / 127,
/// q = round(x / d)): `q` holds rows of k int8 values; `d` and `s` (the sum of the block's q)
/// and `ds` (d * s) one entry per block, kb = k / 32 per row.
struct Q8Rows {
  int8_t* q;
  float* d;
  int32_t* s;
  float* ds;
  int64_t k;
  /// Prefill only, optional: the rows interleaved tile by tile for the 512-bit tiles
  /// (interleave_q8_tiles_avx512); products of the types they take use them when present.
  const uint8_t* tiles = nullptr;
  /// Batched decode only, optional: each row's operands for the 512-bit decode rows, block by
  /// block (attach_lane_words_avx512); packed_lanes takes 2 to kMaxLaneRows rows with them.
  const void* lane_words = nullptr;
};

/// Quantizes n rows of k floats (k a multiple of 32) into `out`.
void quantize_rows_q8_avx512(const float* x, int64_t n, const Q8Rows& out);

/// Block types the int8 kernels read.
enum class QuantKind { q8_0, q4_0, q4_1, q5_0, q5_1, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs };

/// Whether the 512-bit prefill tiles take repacked weights of `kind` (every repacked type: Q8_0,
/// Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), and for n activation rows of k values: the bytes of
/// Q8Rows::tiles, the number of tiles (their rows depend on `kind`), and tiles [t0, t1) written
/// into `out` for products with weights of `kind` (the threads can split them).
bool wide_tiles_take(QuantKind kind);
size_t q8_tiles_bytes(int64_t n, int64_t k);
int64_t q8_tile_count(int64_t n, QuantKind kind);
/// The 8-row groups the 512-bit prefill tiles take at a time for `kind` (2 or 4): how the threads
/// split a product's groups, so that no thread's share ends inside a span.
int64_t wide_span_groups(QuantKind kind);
void interleave_q8_tiles_avx512(const Q8Rows& x, int64_t n, QuantKind kind, int64_t t0, int64_t t1,
                                uint8_t* out);

/// out[j * ldo + r] = dot(weight row r, activation row j) (+ bias[r] when bias is non-null) for
/// weight rows [0, rows) (`row_bytes` apart) and activation rows [0, nx) of `x`.
void gemm_quant_avx512(QuantKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                       const Q8Rows& x, int64_t nx, const float* bias, float* out, int64_t ldo);

/// The same for the K types (Q4_K, Q6_K; 256-value super-blocks, k a multiple of 256), row by
/// row from the stored layout.
void gemm_kquant_avx512(QuantKind kind, const uint8_t* w, size_t row_bytes, int64_t rows,
                        const Q8Rows& x, int64_t nx, const float* bias, float* out, int64_t ldo);

/// The same over repacked weights (repack.h): 8-row groups [g0, g1) of a matrix with `rows`
/// rows and kb blocks per row, `block_bytes` per group block, starting at `packed`; writes
/// out[j * ldo + r] for the rows r of those groups (r < rows).
void gemm_packed_avx512(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                        int64_t g0, int64_t g1, const Q8Rows& x, int64_t nx, const float* bias,
                        float* out, int64_t ldo);

/// Decode (nx activation rows) over the repacked groups of `lanes` (side_by_side.h): out[j * ldo +
/// r] for the rows r of those groups, the lanes read side by side where the kernels stream (one
/// row, or up to kMaxLaneRows with x.lane_words attached).
void packed_lanes_avx512(QuantKind kind, const uint8_t* packed, size_t block_bytes, int64_t rows,
                         const Lanes& lanes, const Q8Rows& x, int64_t nx, const float* bias,
                         float* out, int64_t ldo);

/// Attaches x.lane_words for its rows [0, nx) and weights of `kind` (a buffer of the calling
/// thread, valid until its next call): false, and none attached, where the 512-bit decode rows
/// do not take that many rows or that kind.
bool attach_lane_words_avx512(QuantKind kind, int64_t nx, Q8Rows& x);

/// Attention of `rows` query vectors over keys [0, n_keys) of one KV head (flash-attention
/// style: keys in blocks of 16, in runs of 64 for up to four rows; online softmax; each key and
/// value vector read once for all the rows). Row r: query q[r] (dim floats), sees key t when t <=
/// last[r] and key_mask[t] != 0 (and t > last[r] - window under a sliding window, window > 0);
/// out[r] gets the softmax-weighted sum of the values (zeros when it sees no key). k and v hold
/// n_keys vectors of dim floats, consecutive. `scratch` holds 64 * dim + 288 floats, 64-byte
/// aligned.
void attention_rows_avx512(int rows, const float* const* q, float* const* out, const int64_t* last,
                           int64_t window, const float* k, const float* v, const int32_t* key_mask,
                           int64_t n_keys, int64_t dim, float scale, float* scratch);
/// The same over a half-precision cache (k and v as IEEE half bits).
void attention_rows_avx512(int rows, const float* const* q, float* const* out, const int64_t* last,
                           int64_t window, const uint16_t* k, const uint16_t* v,
                           const int32_t* key_mask, int64_t n_keys, int64_t dim, float scale,
                           float* scratch);

/// Keys the decode attention kernel takes per softmax update; its scratch holds this many
/// floats per query row.
constexpr int kAttentionRunKeys = 64;

/// Decode attention split over keys (flash-decoding): `rows` query vectors as above, keys
/// [begin, end) only. Leaves each row's unnormalised state for the caller to merge with the other
/// key ranges: acc[r * dim ..] = sum_t exp(s_t - m[r]) v_t, m[r] = the largest visible score
/// (-inf when none), l[r] = sum_t exp(s_t - m[r]). `scratch` holds kAttentionRunKeys * rows
/// floats.
void attention_rows_partial_avx512(int rows, const float* const* q, const int64_t* last,
                                   int64_t window, const float* k, const float* v,
                                   const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                                   float scale, float softcap, float* acc, float* m, float* l,
                                   float* scratch);
/// The same over a half-precision cache.
void attention_rows_partial_avx512(int rows, const float* const* q, const int64_t* last,
                                   int64_t window, const uint16_t* k, const uint16_t* v,
                                   const int32_t* key_mask, int64_t begin, int64_t end, int64_t dim,
                                   float scale, float softcap, float* acc, float* m, float* l,
                                   float* scratch);

/// out[i] = silu(gate[i]) * up[i] = gate / (1 + exp(-gate)) * up, i < n (out may alias).
void swiglu_avx512(const float* gate, const float* up, float* out, int64_t n);
/// out[i] = gelu_tanh(gate[i]) * up[i] (GeGLU), as swiglu_avx512.
void geglu_avx512(const float* gate, const float* up, float* out, int64_t n);

constexpr int kDensePanelRows = 64;
constexpr int64_t kDensePanelMinRows = 16;

/// The same for float32 / bfloat16 / IEEE half weights (row stride k elements; the 16-bit
/// types as their bits) and float32 activations (row stride k); any k. From kDensePanelMinRows
/// activation rows the weights are packed per call in panels of kDensePanelRows rows (callers
/// that split the rows among threads split them in whole panels).
void gemm_f32_avx512(const float* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                     const float* bias, float* out, int64_t ldo);
void gemm_bf16_avx512(const uint16_t* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                      const float* bias, float* out, int64_t ldo);
void gemm_f16_avx512(const uint16_t* w, int64_t rows, const float* x, int64_t nx, int64_t k,
                     const float* bias, float* out, int64_t ldo);

}  // namespace anvil::cpu
