// The one decoder-only transformer behind every supported architecture: embedding (optionally
// scaled), N blocks of (RMSNorm, attention with optional q/k norm, biases, window and softcap,
// optional output norm, RMSNorm, SwiGLU or GeGLU MLP, optional output norm), final norm, head
// (optionally softcapped).
// It is written only in device-neutral ops; it never names a backend.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "anvil/config.h"
#include "anvil/tensor.h"
#include "generate/kv_cache.h"
#include "models/weights.h"
#include "ops/ops.h"

namespace anvil {

/// One forward step over `seq` new tokens per row.
struct StepInput {
  int64_t batch = 0, seq = 0;
  std::vector<int64_t> ids;        ///< [batch * seq]
  std::vector<int32_t> positions;  ///< [batch * seq] rotary positions
  std::vector<int32_t> key_mask;   ///< [batch * (cache.length + seq)], 0 for padding keys
  bool all_logits = false;         ///< logits of every position, else only the last of each row
  /// With all_logits: each row's logits from this position on (0 <= logits_from < seq), so
  /// positions that only give context skip the head (perplexity's overlapping windows).
  int64_t logits_from = 0;
  /// Instead of logits: the last hidden states (after the final norm, transformers'
  /// last_hidden_state) of every position, float32 [batch, seq, hidden].
  bool hidden_states = false;
  /// One-token steps: i64 [batch] on the decoder's device, taken as the ids instead of `ids`
  /// (which may then be empty), so a step can follow the device-side pick of the previous one
  /// without the host reading it first. Ids from the device are not range-checked.
  Tensor device_ids;
};

class Decoder {
 public:
  /// kv_dtype: the KV cache's dtype; unset = the backend's default for these weights.
  Decoder(ModelConfig config, ModelWeights weights, DType dtype, Device device,
          ops::AttentionImpl attention, std::optional<DType> kv_dtype = std::nullopt);

  const ModelConfig& config() const { return config_; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  DType activation_dtype() const { return act_dtype_; }
  DType kv_cache_dtype() const { return kv_dtype_; }
  /// What identifies the keys and values this decoder makes (weights_fingerprint.h): a saved
  /// prompt cache is taken only by a decoder with the same one.
  const std::string& fingerprint() const { return fingerprint_; }

  KvCache new_cache(int64_t batch, int64_t capacity) const;
  /// Bytes of weights one decode step reads: every layer's matrices and norms, the final norm,
  /// the head, and one embedding row per token.
  int64_t decode_weight_bytes() const;

  /// Runs the step, appending its keys and values to `cache`. Returns float32 logits
  /// [batch, seq - logits_from or 1, vocab] on the decoder's device, valid until the next step
  /// on `cache`.
  /// Not thread-safe (shared scratch).
  ///
  /// One-token steps on a backend with graphs are recorded once per cache and replayed: the
  /// inputs go to fixed device buffers in one queued copy (the host does not wait for the
  /// device), positions and the past length are read by the kernels from device memory.
  Tensor forward(const StepInput& step, KvCache& cache) const;

  /// The first `layers` layers (1 to num_hidden_layers), then the final norm and the head, as a
  /// decoder of their own: the weights shared, scratch, recorded steps and caches its own
  /// (transformers' assistant_early_exit drafts with them). Made once per count, then kept.
  const Decoder& first_layers(int64_t layers) const;

  /// Whether one-token steps of `rows` rows are queued without the host waiting for the device
  /// (graph replay), so that a step can be queued before the previous one's tokens are read.
  bool queues_steps(int64_t rows) const;
  /// Whether the MoE layers of a step of `rows` rows make their picks on the device
  /// (ops::moe_experts_on_device); false without MoE layers.
  bool moe_on_device(int64_t rows) const;

 private:
  /// The device tensors of one step's inputs.
  struct StepTensors {
    Tensor ids, positions, key_mask;
    Tensor past;  ///< i32 [1] on the device for graph replay, else undefined
  };
  struct GraphState;

  Tensor scratch(const std::string& slot, const Shape& shape) const;
  /// A sparse MoE layer's tensors as the ops take them (null for a dense layer).
  std::shared_ptr<const ops::MoeTensors> moe_tensors(const LayerWeights& layer) const;
  /// float32 scratch whatever the activation dtype (the logits handed back).
  Tensor scratch_f32(const std::string& slot, const Shape& shape) const;
  /// i32 scratch (moe_experts' plan).
  Tensor scratch_i32(const std::string& slot, const Shape& shape) const;
  /// The MoE scratch of a step of n rows (empty for a dense model).
  ops::MoeScratch moe_scratch(int64_t n) const;
  /// The first layer with a sparse MoE MLP, or null.
  const LayerWeights* first_moe_layer() const;
  Tensor upload_i32(const std::vector<int32_t>& v, const Shape& shape) const;
  void check_step(const StepInput& step, const KvCache& cache) const;
  /// The layers, final norm and head; writes float32 logits of each row's positions from
  /// first_logit on to `logits`. `hidden_states`: `logits` is [n, hidden] and takes every row's
  /// final-normed hidden state.
  void run(const StepTensors& in, int64_t b, int64_t s, int64_t past, int64_t first_logit,
           KvCache& cache, const Tensor& logits, bool hidden_states = false) const;
  Tensor forward_graph(const StepInput& step, KvCache& cache) const;
  /// Dynamic NTK and longrope RoPE: the frequencies for this step's sequence (its largest
  /// position + 1), rewritten in place (queued behind earlier steps, so recorded steps read
  /// them) when they change.
  void follow_rope_length(const std::vector<int32_t>& positions) const;

  ModelConfig config_;
  ModelWeights weights_;
  DType dtype_, act_dtype_, kv_dtype_;
  std::string fingerprint_;
  Device device_;
  ops::AttentionImpl attention_;
  Tensor inv_freq_;
  float rope_scaling_ = 1.0f;
  // The sliding layers' own RoPE (ModelConfig::sliding_rope), else undefined.
  Tensor sliding_inv_freq_;
  // All-zero frequencies, which rotate nothing: SmolLM3's NoPE layers (else undefined).
  Tensor no_rope_inv_freq_;
  float sliding_rope_scaling_ = 1.0f;
  float embedding_scale_ = 1.0f;
  // The sequence length the current frequencies were computed for: dynamic NTK's state as
  // transformers keeps it on the rotary module (grows, or resets to the original); longrope's
  // set (past the original length or not).
  mutable int64_t rope_length_ = 0;
  mutable std::map<std::string, Tensor> scratch_;  // grown on demand, reused across steps
  // Every layer's weights as decode_layers reads them, built once (no allocation per token);
  // a step sets the caches' fields for its call only.
  mutable std::vector<ops::DecoderLayerTensors> layer_tensors_;
  mutable std::map<std::string, Tensor> scratch_f32_;
  mutable std::map<std::string, Tensor> scratch_i32_;
  mutable std::map<int64_t, std::unique_ptr<Decoder>> first_layers_;
};

}  // namespace anvil
