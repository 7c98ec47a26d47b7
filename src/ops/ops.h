// The device-neutral ops the decoder is written in. Each op has an Args struct (what a kernel
// receives), a front end here that checks shapes, dtypes and devices and dispatches to the
// kernel registered for (op, device, activation dtype, weight dtype), and a plain reference
// implementation (ops/reference.h) that the op tests use as the oracle.
#pragma once

#include <cstdint>

#include "anvil/tensor.h"

namespace anvil::ops {

/// out[n, :] = table[ids[n], :]. ids: [N] i64 (validated against the table by the caller),
/// table: [V, H] weight dtype, out: [N, H] activation dtype.
struct EmbeddingArgs {
  Tensor ids, table, out;
};
void embedding(const Tensor& ids, const Tensor& table, const Tensor& out);

/// out = x / sqrt(mean(x^2) + eps) * weight over the last dimension. x, out: [N, D]; weight: [D].
/// x and out may alias.
struct RmsNormArgs {
  Tensor x, weight, out;
  float eps;
};
void rms_norm(const Tensor& x, const Tensor& weight, float eps, const Tensor& out);

/// out = x @ weight^T + bias. x: [N, K]; weight: [O, K] (Hugging Face's layout); bias: [O] or
/// undefined; out: [N, O].
struct LinearArgs {
  Tensor x, weight, bias, out;
};
void linear(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& out);

/// Rotary embedding in place, half-split layout (transformers' rotate_half): for each token n
/// and head h, angle_i = float(positions[n]) * inv_freq[i] in float32, and
/// (x_i, x_{i+d/2}) <- (x_i cos - x_{i+d/2} sin, x_{i+d/2} cos + x_i sin), cos/sin scaled by
/// `scaling`. x: [N, heads, head_dim]; positions: [N] i32; inv_freq: [head_dim/2] f32.
struct RopeArgs {
  Tensor x, positions, inv_freq;
  float scaling;
};
void rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq, float scaling);

/// out = silu(gate) * up, elementwise. All [N, I]; out may alias gate.
struct SwigluArgs {
  Tensor gate, up, out;
};
void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out);

/// out = a + b, elementwise over equal shapes; out may alias a or b.
struct AddArgs {
  Tensor a, b, out;
};
void add(const Tensor& a, const Tensor& b, const Tensor& out);

/// Writes new keys or values into a cache: cache[b, h, start + s, :] = src[b, s, h, :].
/// src: [B, S, kv_heads, head_dim]; cache: [B, kv_heads, capacity, head_dim].
struct StoreKvArgs {
  Tensor src, cache;
  int64_t start;
};
void store_kv(const Tensor& src, const Tensor& cache, int64_t start);

enum class AttentionImpl { eager, sdpa };

/// Causal attention of new queries over a KV cache, grouped-query aware.
/// q: [B, S, heads, head_dim] with query s at cache position past + s;
/// k_cache, v_cache: [B, kv_heads, capacity, head_dim], positions [0, past + S) filled;
/// key_mask: [B, past + S] i32, 0 where a key is padding; out: [B, S, heads, head_dim].
/// Query s of row b sees key t when t <= past + s and key_mask[b, t] != 0; a query that sees no
/// key gets zeros. eager materialises the score matrix (the reference); sdpa is fused.
struct AttentionArgs {
  Tensor q, k_cache, v_cache, key_mask, out;
  int64_t past;
  float scale;
  AttentionImpl impl;
};
void attention(const AttentionArgs& args);

/// Op names as registered in the kernel table.
inline constexpr const char* kEmbedding = "embedding";
inline constexpr const char* kRmsNorm = "rms_norm";
inline constexpr const char* kLinear = "linear";
inline constexpr const char* kRope = "rope";
inline constexpr const char* kSwiglu = "swiglu";
inline constexpr const char* kAdd = "add";
inline constexpr const char* kStoreKv = "store_kv";
inline constexpr const char* kAttention = "attention";

}  // namespace anvil::ops
