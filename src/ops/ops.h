// The device-neutral ops the decoder is written in. Each op has an Args struct (what a kernel
// receives), a front end here that checks shapes, dtypes and devices and dispatches to the
// kernel registered for (op, device, activation dtype, weight dtype), and a plain reference
// implementation (ops/reference.h) that the op tests use as the oracle.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "anvil/tensor.h"

namespace anvil::ops {

/// out[n, :] = table[ids[n], :] * scale. ids: [N] i64 (validated against the table by the
/// caller), table: [V, H] weight dtype, out: [N, H] activation dtype. The product is taken in
/// float32 and rounded once (Gemma's sqrt(hidden_size) normalizer; 1 for the others).
struct EmbeddingArgs {
  Tensor ids, table, out;
  float scale = 1.0f;
};
void embedding(const Tensor& ids, const Tensor& table, const Tensor& out, float scale = 1.0f);

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
/// `scaling`. x: [N, heads, head_dim]; positions: [N] i32; inv_freq: [head_dim/2] f32. An
/// inv_freq of exactly 0 (no real frequency is) marks a pair that does not rotate, partial
/// rotary's pass-through dimensions: it stays as it is, unscaled. Every RoPE kernel (rope_store,
/// rope_attention, decode_layers) follows the same rule.
struct RopeArgs {
  Tensor x, positions, inv_freq;
  float scaling;
};
void rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq, float scaling);

/// The activation of a gated MLP's gate: SiLU (Llama, Qwen, Mistral, Phi-3: SwiGLU) or GELU's
/// tanh approximation (Gemma: GeGLU), 0.5 g (1 + tanh(sqrt(2 / pi) (g + 0.044715 g^3))) as
/// torch's gelu(approximate="tanh").
enum class GluActivation { silu, gelu_tanh };

/// out = act(gate) * up, elementwise. All [N, I]; out may alias gate. A device registers
/// kGluGeluTanh beside its kernel where the kernel takes gelu_tanh.
struct SwigluArgs {
  Tensor gate, up, out;
  GluActivation act = GluActivation::silu;
};
void swiglu(const Tensor& gate, const Tensor& up, const Tensor& out,
            GluActivation act = GluActivation::silu);

/// x = x * factor in place, rounded to x's dtype (torch's `x * factor` with a Python float):
/// Granite's residual and logit multipliers.
struct ScaleArgs {
  Tensor x;
  float factor;
};
void scale(const Tensor& x, float factor);

/// x = tanh(x / cap) * cap in place, float32 (Gemma 2's final logit softcapping). cap > 0.
struct SoftcapArgs {
  Tensor x;
  float cap;
};
void softcap(const Tensor& x, float cap);

/// out = a + b, elementwise over equal shapes; out may alias a or b.
struct AddArgs {
  Tensor a, b, out;
};
void add(const Tensor& a, const Tensor& b, const Tensor& out);

/// Writes new keys or values into a cache: cache[b, h, start + s, :] = src[b, s, h, :].
/// src: [B, S, kv_heads, head_dim]; cache: [B, kv_heads, capacity, head_dim].
/// `start_on_device` (i32 [1], optional) is for graph replay: when defined, kernels read the
/// start position from it instead of `start` (which only the front end's checks use).
struct StoreKvArgs {
  Tensor src, cache;
  int64_t start;
  Tensor start_on_device = Tensor();
};
void store_kv(const Tensor& src, const Tensor& cache, int64_t start,
              const Tensor& start_on_device = Tensor());

enum class AttentionImpl { eager, sdpa };

/// Causal attention of new queries over a KV cache, grouped-query aware.
/// q: [B, S, heads, head_dim] with query s at cache position past + s;
/// k_cache, v_cache: [B, kv_heads, capacity, head_dim], positions [0, past + S) filled;
/// key_mask: [B, past + S] i32, 0 where a key is padding; out: [B, S, heads, head_dim].
/// For graph replay, `past_on_device` (i32 [1]) holds the past length the kernels use and
/// key_mask may be wider than past + S (its row stride is its width).
/// Query s of row b sees key t when t <= past + s and key_mask[b, t] != 0, and with a sliding
/// window (window > 0) only when also t > past + s - window (transformers' sliding-window mask,
/// on cache indices, padding included); a query that sees no key gets zeros. eager materialises
/// the score matrix (the reference); sdpa is fused.
struct AttentionArgs {
  Tensor q, k_cache, v_cache, key_mask, out;
  int64_t past;
  float scale;
  AttentionImpl impl;
  Tensor past_on_device = Tensor();
  int64_t window = 0;
  /// Scores (after `scale`) pass through tanh(s / softcap) * softcap before the mask and the
  /// softmax when softcap > 0 (Gemma 2's attn_logit_softcapping); a device registers
  /// kAttentionSoftcap where its kernel takes it.
  float softcap = 0.0f;
};

/// The first key a query at cache index `at` sees under a sliding window of `window` keys (0:
/// none).
inline int64_t first_visible_key(int64_t at, int64_t window) {
  return window > 0 && at >= window ? at - window + 1 : 0;
}
void attention(const AttentionArgs& args);

/// out = src converted to out's dtype (floating types), same shape, both contiguous, same device.
struct CastArgs {
  Tensor src, out;
};
void cast(const Tensor& src, const Tensor& out);

/// out[n] = index of the largest value of row n (the first one on ties, as torch.argmax).
/// x: [N, V] floating; out: [N] i64.
struct ArgmaxArgs {
  Tensor x, out;
};
void argmax(const Tensor& x, const Tensor& out);

/// out[n] = -log softmax(logits[n])[targets[n]] = logsumexp(row n) - logits[n, targets[n]]: one
/// row's cross-entropy, perplexity's per-token loss, so that a window returns a float a scored
/// position instead of its whole vocabulary of logits. A negative target is ignored (out 0, as
/// torch's ignore_index); a target of V or more gives NaN on a device (whose kernel cannot
/// refuse it: callers check their ids), an error on the host. The exponentials' sum is taken
/// in float32 per lane or thread and combined in double. Devices without a kernel (OpenCL)
/// copy the rows to the host for it. logits: [N, V] f32; targets: [N] i64; out: [N] f32.
struct TokenNllArgs {
  Tensor logits, targets, out;
};
void token_nll(const Tensor& logits, const Tensor& targets, const Tensor& out);

/// How far a model's next-token distribution lies from a reference model's, per row (a
/// quantized model against its source, llama.cpp's --kl-divergence): kl[n] = KL(P || Q) =
/// sum_v P(v) (log P(v) - log Q(v)), P = softmax(reference[n]), Q = softmax(logits[n]), and
/// same_top[n] = 1 where both rows' largest entries are the same (the first one on ties, as
/// torch.argmax), else 0. Sums combined in double; a NaN anywhere in a row gives kl NaN.
/// Devices without a kernel copy the rows to the host. reference, logits: [N, V] f32; kl: [N]
/// f32; same_top: [N] i64.
struct TokenKlArgs {
  Tensor reference, logits, kl, same_top;
};
void token_kl(const Tensor& reference, const Tensor& logits, const Tensor& kl,
              const Tensor& same_top);

/// values[n], indices[n] = the K = values.size(1) largest entries of row n of x, largest first,
/// equal values in index order; NaN counts as larger than any number (torch.topk). Which of
/// several entries equal to the K-th largest are returned is unspecified (their values are
/// not). Sampling reads a step's candidates instead of its whole vocabulary of logits.
/// x: [N, V] f32 with 1 <= K <= V; values: [N, K] f32; indices: [N, K] i64.
struct TopKArgs {
  Tensor x, values, indices;
};
void top_k(const Tensor& x, const Tensor& values, const Tensor& indices);

/// transformers' RepetitionPenaltyLogitsProcessor on a device's logits, in place: for each id
/// of row n's context, logits[n, id] is multiplied by the penalty where negative and divided by
/// it otherwise. ids lists each row's distinct context ids (an id listed twice would be
/// penalised twice), padded with -1; entries outside [0, V) are skipped, as the host's
/// processor skips them. Sampling with a penalty then reads a step's candidates instead of its
/// whole vocabulary of logits. logits: [N, V] f32; ids: [N, M] i64; penalty > 0.
struct RepetitionPenaltyArgs {
  Tensor logits, ids;
  float penalty;
};
void repetition_penalty(const Tensor& logits, const Tensor& ids, float penalty);

/// Sampling's warpers (temperature, top-k, top-p, min-p) and draw over each row's candidates
/// on the device that holds them: out[n] = the token sample_from_candidates
/// (generate/logits_processor.h) gives for row n's candidates with the uniform draw
/// uniforms[n], or -1 where the candidates cannot decide it (a NaN among them, or every one
/// still at or above the top_k-th after the temperature). values / indices: ops::top_k's output
/// ([N, C] f32 / i64, largest first, C from top_k + 1 to 128); uniforms: [N] f64 in [0, 1);
/// out: [N] i64. temperature > 0, top_k >= 1, top_p in (0, 1], min_p in [0, 1]. With
/// `decided` ([N] i64, optional): decided[n] = 1 where the candidates decide, else 0 and out[n]
/// the first candidate's index instead of -1, so that out can feed a step queued behind it
/// (which the caller then takes again).
struct SampleCandidatesArgs {
  Tensor values, indices, uniforms, out;
  float temperature;
  int64_t top_k;
  float top_p, min_p;
  Tensor decided;
};
void sample_candidates(const Tensor& values, const Tensor& indices, const Tensor& uniforms,
                       float temperature, int64_t top_k, float top_p, float min_p,
                       const Tensor& out, const Tensor& decided = Tensor());

/// mask[b, index] = values[b] with the column index read from device memory (graph replay
/// appends a key column per step without a host round trip). mask: [B, W] i32; values: [B] i32;
/// index: [1] i32.
struct MaskColumnArgs {
  Tensor mask, values, index;
};
void write_mask_column(const Tensor& mask, const Tensor& values, const Tensor& index);

// Fused ops. Each has a composed definition in terms of the ops above, which ops.cc runs when a
// device registers no fused kernel, so a backend fuses only what pays for it.

/// residual += rms_norm(y) * weight, the norm rounded to the activations' dtype as rms_norm
/// rounds it, then the sum (Gemma 2 / 3's and OLMo 2's normalised block outputs). y is scratch:
/// devices without a fused kernel normalise it in place. y, residual: [N, D]; weight: [D].
struct RmsNormAddArgs {
  Tensor y, weight, residual;
  float eps;
};
void rms_norm_add(const Tensor& y, const Tensor& weight, float eps, const Tensor& residual);

/// x += delta, then out = rms_norm(x) * weight: a block's residual add and the next norm.
struct AddRmsNormArgs {
  Tensor x, delta, weight, out;
  float eps;
};
void add_rms_norm(const Tensor& x, const Tensor& delta, const Tensor& weight, float eps,
                  const Tensor& out);

/// outs[i] = x' @ weights[i]^T + biases[i] for up to three products of one input (q, k, v),
/// where x' = rms_norm(x) * norm_weight when norm_weight is defined (the block's input norm,
/// written to `normed` where the op is composed), else x itself. With keep_normed, `normed`
/// holds x' afterwards on every device (a later op reads it: the experts after their router).
struct LinearGroupArgs {
  Tensor x;
  Tensor weights[3], biases[3], outs[3];
  int count;
  Tensor norm_weight = Tensor();
  float eps = 0.0f;
  Tensor normed = Tensor();
  bool keep_normed = false;
};
void linear_group(const LinearGroupArgs& args);

/// out = act(x @ gate^T + gate_bias) * (x @ up^T + up_bias), each product rounded to the
/// activation type first. `scratch` ([N, I], like out) holds up's product where the op is composed.
/// With norm_weight defined, x is normalised first, as in linear_group. `act` replaces silu by
/// another gate activation (a fused kernel takes it where its device registers
/// kLinearSwigluGeluTanh; elsewhere the op runs composed).
struct LinearSwigluArgs {
  Tensor x, gate, gate_bias, up, up_bias, out, scratch;
  Tensor norm_weight = Tensor();
  float eps = 0.0f;
  Tensor normed = Tensor();
  GluActivation act = GluActivation::silu;
};
void linear_swiglu(const LinearSwigluArgs& args);

/// linear_group and linear_swiglu written in the unfused ops (norm into `normed`, one product
/// each, SwiGLU over `scratch`): what runs where no fused kernel is registered, and what a fused
/// kernel runs for the cases it does not take.
void composed_linear_group(const LinearGroupArgs& args);
void composed_linear_swiglu(const LinearSwigluArgs& args);

/// residual += x @ weight^T + bias, the product rounded to the activation type before the add (a
/// block's output projection and its residual connection). `scratch` ([N, O]) holds the product
/// where the op is composed. With out_norm defined the product is RMS-normalised with it first
/// (Gemma 2 / 3's and OLMo 2's post-attention and post-feedforward norms): residual +=
/// rms_norm(x @ weight^T + bias) * out_norm, always composed (no kernel sees out_norm). With
/// scale other than 1 the (normalised) product is multiplied by it and rounded again before the
/// add (Granite's residual multiplier, torch's `residual + h * m`); a device's kernel takes that
/// where it registers kLinearScaleAdd, elsewhere the op runs composed.
struct LinearAddArgs {
  Tensor x, weight, bias, residual, scratch;
  Tensor out_norm = Tensor();
  float eps = 0.0f;
  float scale = 1.0f;
};
void linear_add(const LinearAddArgs& args);

/// A step's attention inputs: optional per-head RMSNorm of q and k (Qwen3), RoPE on both, then
/// k and v written to the caches at `start` (or `start_on_device`). q: [N, heads, D] (rotated in
/// place); k, v: [B, S, kv_heads, D] with N = B * S; caches as in store_kv.
struct RopeStoreArgs {
  Tensor q, k, v, q_norm, k_norm;
  float eps;
  Tensor positions, inv_freq;
  float scaling;
  Tensor k_cache, v_cache;
  int64_t start;
  Tensor start_on_device = Tensor();
};
void rope_store(const RopeStoreArgs& args);

/// A layer's attention from its q/k/v products: rope_store, then attention of the rotated q over
/// the caches. One op so that a device can do both in one launch at decode, where the launch is
/// the cost. The attention's q must be the rope's q (viewed [B, S, heads, D]), its caches the
/// rope's caches, and its past the rope's start (from the same device scalar, if any); q's
/// contents afterwards are unspecified (the composed definition leaves the rotated q there).
struct RopeAttentionArgs {
  RopeStoreArgs rope;
  AttentionArgs attention;
};
void rope_attention(const RopeAttentionArgs& args);
void composed_rope_attention(const RopeAttentionArgs& args);

/// out[i, :] = x[index[i], :]. x: [N, D] activations; index: [M] i32, each in [0, N), on the
/// device (the CPU's kernels refuse an index out of range; a device's skips its row, since its
/// indices are on the device); out: [M, D] of x's dtype.
struct GatherRowsArgs {
  Tensor x, index, out;
};
void gather_rows(const Tensor& x, const Tensor& index, const Tensor& out);

/// out[index[i], :] = out[index[i], :] + weight[i] * y[i, :], the product rounded to out's dtype
/// before the sum, and the sum rounded again (torch's `out.index_add_(0, index, (y *
/// weight).to(out.dtype))`). y: [M, D]; index: [M] i32, distinct, each in [0, N); weight: [M]
/// f32; out: [N, D] of y's dtype.
struct ScatterAddRowsArgs {
  Tensor y, index, weight, out;
};
void scatter_add_rows(const Tensor& y, const Tensor& index, const Tensor& weight,
                      const Tensor& out);

/// A sparse mixture-of-experts MLP (Qwen2/3-MoE, Mixtral, OLMoE): the router [experts, hidden]
/// picks top_k experts a token by its softmax (renormalised over the picked ones with
/// norm_topk; the weights rounded to the activations' dtype with weights_in_act_dtype), each a
/// SwiGLU MLP (gate / up [width, hidden], down [hidden, width]); Qwen2-MoE's shared expert is
/// added, gated by sigmoid(x . shared_expert_gate) ([1, hidden]).
struct MoeTensors {
  Tensor router;
  std::vector<Tensor> gate, up, down;
  int64_t top_k = 0;
  bool norm_topk = false;
  bool weights_in_act_dtype = true;
  Tensor shared_gate, shared_up, shared_down, shared_expert_gate;
};

/// The routed experts of a sparse MoE MLP with the router's picks made where the products run:
/// for each row of `in`, the softmax of its router logits in float32, the top_k largest (ties to
/// the lower expert), renormalised over them with norm_topk, rounded to the activations' dtype
/// with weights_in_act_dtype; then out = zeros, each picked expert's gated MLP of the row
/// (`act`, as linear_swiglu and linear compute it) weighted, rounded and added in ascending
/// expert order (torch's index_add_), then `shared` (the shared expert's output; undefined for
/// none) weighted by sigmoid(shared_logit) rounded to the activations' dtype (by 1 where
/// shared_logit is undefined); then out times residual_scale where it is not 1 (rounded, as
/// ops::scale) and, where `residual` is defined, residual += out (rounded, as ops::add): the
/// layer's residual add in the same launch. in: [N, H]; logits: [N, E] (activations); shared,
/// out, residual: [N, H]; shared_logit: [N, 1]. rows, y ([N * top_k, H]), hidden ([N * top_k,
/// width]) and plan (i32 [moe_plan_words(N, E, top_k)]) are the kernel's scratch for the call.
/// Devices register it where the picks need not go through the host (so a decode step with MoE
/// layers can be recorded); moe_experts_on_device says where it runs.
struct MoeExpertsArgs {
  Tensor in, logits;
  const MoeTensors* moe = nullptr;
  GluActivation act = GluActivation::silu;
  Tensor shared = Tensor(), shared_logit = Tensor(), out = Tensor();
  Tensor rows = Tensor(), hidden = Tensor(), y = Tensor(), plan = Tensor();
  Tensor residual = Tensor();
  float residual_scale = 1.0f;
};
void moe_experts(const MoeExpertsArgs& args);
/// The most rows, experts and picks a row that a device's moe_experts kernel takes.
inline constexpr int64_t kMoeDeviceMaxRows = 32;
inline constexpr int64_t kMoeDeviceMaxExperts = 256;
inline constexpr int64_t kMoeDeviceMaxTopK = 16;
/// Whether a MoE layer of these sizes runs moe_experts on `device` (a kernel registered for the
/// activations and weights, the sizes within its limits, hidden and expert widths multiples of 8)
/// rather than picking on the host.
bool moe_experts_on_device(DeviceType device, DType act, DType weight, int64_t rows,
                           int64_t experts, int64_t top_k, int64_t hidden, int64_t width);
/// moe_experts' plan: the words its kernel keeps between its launches.
inline int64_t moe_plan_words(int64_t rows, int64_t experts, int64_t top_k) {
  return 1 + 3 * experts + 2 * rows * top_k;
}

/// A decode step's MoE scratch (decode_layers' composed MoE layers use what is defined and
/// allocate the rest): the router's logits [N, E], moe_experts' rows / hidden / y / plan, the
/// experts' sum [N, H], the shared expert's gate and up [N, width], output [N, H] and gate
/// logit [N, 1].
struct MoeScratch {
  Tensor logits, rows, hidden, y, plan, sum;
  Tensor shared_gate, shared_up, shared_y, shared_logit;
};

/// One decoder layer's weights (biases, q/k norms undefined where the architecture has none)
/// and its KV caches, as decode_layers reads them.
struct DecoderLayerTensors {
  Tensor input_norm, q, k, v, q_bias, k_bias, v_bias, q_norm, k_norm, o, o_bias;
  Tensor post_norm, gate, gate_bias, up, up_bias, down, down_bias;
  Tensor k_cache, v_cache;
  int64_t window = 0;  // the layer's sliding window (AttentionArgs::window), 0 for none
  /// Norms of the attention's and the MLP's outputs before their residual adds (Gemma 2 / 3,
  /// OLMo 2: LinearAddArgs::out_norm); undefined for the others. input_norm and post_norm may
  /// be undefined (OLMo 2: the attention and the MLP read x as it is).
  Tensor attn_out_norm = Tensor(), mlp_out_norm = Tensor();
  /// The layer's own RoPE frequencies and cos/sin scaling where they differ from the step's
  /// (Gemma 3's sliding layers); undefined: DecodeLayersArgs::inv_freq and rope_scaling.
  Tensor inv_freq = Tensor();
  float rope_scaling = 1.0f;
  /// RMSNorm weights of the whole q ([heads * D]) and k ([kv_heads * D]) products, applied before
  /// RoPE (OLMo 2); undefined for the others (per-head norms are q_norm / k_norm).
  Tensor q_full_norm = Tensor(), k_full_norm = Tensor();
  /// A sparse MoE MLP in place of gate / up / down (then undefined), else null. Such a stack
  /// runs the composed ops (the router's picks on the device where moe_experts_on_device says
  /// so, else through the host).
  std::shared_ptr<const MoeTensors> moe = nullptr;
};

/// Every layer of a Llama/Qwen-style decoder over the residual stream x ([B * S, hidden],
/// updated in place): per layer linear_group (input norm, q/k/v), rope_attention, linear_add
/// (o), linear_swiglu (post-attention norm, gate/up) and linear_add (down), with the inputs of
/// rope_store and attention as in those ops. One op so that a device can run a whole decode
/// step's layers as one launch, where launches and the gaps between them are the cost. The
/// scratch tensors (normed [N, hidden], q/attn [N, heads * D], k/v [N, kv_heads * D], proj
/// [N, hidden], gate/up [N, intermediate]) are what the composed definition works in; their
/// contents afterwards are unspecified.
struct DecodeLayersArgs {
  Tensor x;
  std::span<const DecoderLayerTensors> layers;  // the caller's, alive for the call
  int64_t batch, seq, heads, kv_heads, head_dim;
  float eps, scale;
  Tensor positions, inv_freq;
  float rope_scaling;
  Tensor key_mask;
  int64_t past;
  Tensor past_on_device;
  AttentionImpl impl;
  Tensor normed, q, k, v, attn, proj, gate, up;
  GluActivation act = GluActivation::silu;  // the MLP's gate activation
  float softcap = 0.0f;                     // AttentionArgs::softcap
  /// Each block's output is multiplied by this (rounded to the activations' dtype) before its
  /// residual add (Granite's residual_multiplier); 1: none.
  float residual_scale = 1.0f;
  MoeScratch moe = {};  // for stacks with MoE layers
};
/// Whether a stack uses anything past the Llama/Qwen layer (another activation, output norms,
/// missing input norms, whole-projection q/k norms, per-layer RoPE, softcapping, a residual
/// scale): a device's fused kernel takes such a stack only where the device registers
/// kDecodeLayersExtended; elsewhere it runs composed.
bool decode_layers_extended(const DecodeLayersArgs& args);
void decode_layers(const DecodeLayersArgs& args);
void composed_decode_layers(const DecodeLayersArgs& args);
/// A layer's sparse MoE MLP (layer.moe) over args.x, added into it: post-attention norm into
/// args.normed, the router's logits, the shared expert's products, moe_experts (the picks on
/// the device, or read back to the host where moe_experts_on_device says no), the residual add.
void composed_moe_mlp(const DecodeLayersArgs& args, const DecoderLayerTensors& layer);

/// Op names as registered in the kernel table.
inline constexpr const char* kEmbedding = "embedding";
inline constexpr const char* kRmsNorm = "rms_norm";
inline constexpr const char* kLinear = "linear";
inline constexpr const char* kRope = "rope";
inline constexpr const char* kSwiglu = "swiglu";
inline constexpr const char* kAdd = "add";
inline constexpr const char* kStoreKv = "store_kv";
inline constexpr const char* kAttention = "attention";
inline constexpr const char* kCast = "cast";
inline constexpr const char* kArgmax = "argmax";
inline constexpr const char* kTopK = "top_k";
inline constexpr const char* kTokenNll = "token_nll";
inline constexpr const char* kTokenKl = "token_kl";
inline constexpr const char* kRepetitionPenalty = "repetition_penalty";
inline constexpr const char* kSampleCandidates = "sample_candidates";
inline constexpr const char* kMaskColumn = "write_mask_column";
inline constexpr const char* kAddRmsNorm = "add_rms_norm";
inline constexpr const char* kRmsNormAdd = "rms_norm_add";
inline constexpr const char* kLinearGroup = "linear_group";
inline constexpr const char* kLinearSwiglu = "linear_swiglu";
inline constexpr const char* kLinearAdd = "linear_add";
inline constexpr const char* kLinearScaleAdd = "linear_add/scaled";
inline constexpr const char* kRopeStore = "rope_store";
// Registered (device, activations, cache dtype) where a device's rope_store kernel also writes
// caches of another dtype than the activations' (the CPU's f16 cache); the function is the same
// rope_store kernel.
inline constexpr const char* kRopeStoreOtherCache = "rope_store/other_cache";
inline constexpr const char* kRopeAttention = "rope_attention";
inline constexpr const char* kDecodeLayers = "decode_layers";
inline constexpr const char* kSoftcap = "softcap";
inline constexpr const char* kScale = "scale";
inline constexpr const char* kMoeExperts = "moe_experts";
// Capabilities, registered (device, activations, weights) beside the kernel they describe; the
// function is that kernel.
inline constexpr const char* kGluGeluTanh = "swiglu/gelu_tanh";
inline constexpr const char* kLinearSwigluGeluTanh = "linear_swiglu/gelu_tanh";
inline constexpr const char* kAttentionSoftcap = "attention/softcap";
inline constexpr const char* kDecodeLayersExtended = "decode_layers/extended";
inline constexpr const char* kGatherRows = "gather_rows";
inline constexpr const char* kScatterAddRows = "scatter_add_rows";

}  // namespace anvil::ops
