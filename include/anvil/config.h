/// @file config.h
/// A model's `config.json` and `generation_config.json`, read as transformers reads them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "anvil/dtype.h"

namespace anvil {

enum class RopeType { standard, linear, llama3, yarn, dynamic, longrope };

struct RopeConfig {
  RopeType type = RopeType::standard;
  double theta = 10000.0;
  // linear, llama3, yarn and dynamic (NTK) scaling; dynamic keeps the original frequencies up to
  // original_max_position_embeddings (max_position_embeddings, as transformers does) and grows
  // the base with the longest sequence seen since (rope_table.h).
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  // yarn: the ramp between interpolated and extrapolated frequencies spans the dimensions whose
  // wavelengths make beta_fast .. beta_slow turns over the original context (floored and ceiled
  // when truncate); cos and sin are multiplied by attention_factor (0: derived from factor and
  // mscale / mscale_all_dim as transformers derives it; 0 for those means absent).
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  bool truncate = true;
  double attention_factor = 0.0;
  double mscale = 0.0;
  double mscale_all_dim = 0.0;
  /// Per-frequency divisors (GGUF's rope_freqs.weight, how llama.cpp stores Llama 3.1 scaling);
  /// empty when absent.
  std::vector<float> freq_factors;
  /// longrope (Phi-3): per-frequency divisors for sequences within the original context and
  /// past it (head_dim / 2 each); cos and sin scaled by attention_factor (0: derived from
  /// factor, which 0 derives from max_position_embeddings over the original context).
  std::vector<float> short_factor, long_factor;
  /// The leading dimensions of each head that rotate (int(head_dim * partial_rotary_factor),
  /// Phi-4-mini's 0.75); the rest pass through unrotated. 0: the whole head.
  int64_t rotary_dim = 0;
};

/// The gated MLP's activation: SiLU (SwiGLU: Llama, Qwen, Mistral, Phi-3) or GELU's tanh
/// approximation (GeGLU: Gemma's gelu_pytorch_tanh).
enum class Activation { silu, gelu_tanh };

/// The fields of config.json the decoder needs, architecture flags resolved.
struct ModelConfig {
  std::string architecture;  ///< "Qwen3ForCausalLM", ...
  std::string model_type;    ///< "qwen3", ...
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  bool tie_word_embeddings = false;
  bool qkv_bias = false;  ///< q/k/v projections carry a bias
  bool o_bias = false;    ///< the output projection carries a bias
  bool mlp_bias = false;
  bool qk_norm = false;  ///< per-head RMSNorm of q and k before RoPE (Qwen3)
  /// RMSNorm of the whole q and k projections (all heads at once) before RoPE (OLMo 2).
  bool qk_norm_full = false;
  /// The attention and the MLP read the residual stream without an input norm; their outputs
  /// are normalised instead (OLMo 2's post_attention_layernorm / post_feedforward_layernorm).
  bool output_norms_only = false;
  /// q/k/v stored as one qkv_proj and gate/up as one gate_up_proj (Phi-3), split at load.
  bool fused_projections = false;
  /// generate() drops the KV cache and recomputes the whole sequence at the step that takes it
  /// past this many positions, as Phi-3's prepare_inputs_for_generation does with longrope (so
  /// that the long factors rotate every key, not only the new ones).
  std::optional<int64_t> recompute_cache_past;
  /// A windowed layer's attention sees its own position and the sliding_window - 1 before it
  /// (Mistral, Phi-3-mini-4k, Qwen2 with use_sliding_window); unset: the whole causal past.
  std::optional<int64_t> sliding_window;
  /// Which layers the window applies to (transformers' layer_types, "sliding_attention"; Qwen2
  /// and Qwen3 derive them from max_window_layers); empty: every layer.
  std::vector<bool> sliding_layers;
  /// The MLP's gate activation (hidden_act; Gemma 2 and 3: hidden_activation).
  Activation hidden_act = Activation::silu;
  /// RMSNorm weights hold w of a (1 + w) scale, computed in float32 (GemmaRMSNorm); the loader
  /// adds the 1, so the decoder's norms are the usual ones.
  bool norm_plus_one = false;
  /// The embedding rows are multiplied by this (Gemma: sqrt(hidden_size); Granite:
  /// embedding_multiplier).
  double embedding_scale = 1.0;
  /// embedding_scale is rounded to the weights' dtype first (Gemma's embed_scale tensor); else
  /// it multiplies as a float (Granite's Python scalar).
  bool embedding_scale_rounded = false;
  /// Attention scores are scaled by this instead of head_dim^-0.5 (Granite's
  /// attention_multiplier).
  std::optional<double> attention_multiplier;
  /// The attention's and the MLP's outputs are multiplied by this before their residual adds
  /// (Granite's residual_multiplier); 1: no scaling.
  double residual_multiplier = 1.0;
  /// The logits are divided by this (Granite's logits_scaling); 1: none.
  double logits_scaling = 1.0;
  /// Attention scores are scaled by query_pre_attn_scalar^-0.5 instead of head_dim^-0.5 when set
  /// (Gemma 2 and 3).
  std::optional<double> query_pre_attn_scalar;
  /// tanh(s / cap) * cap on attention scores / final logits when positive (Gemma 2); 0: none.
  double attn_logit_softcapping = 0.0;
  double final_logit_softcapping = 0.0;
  /// Gemma 2 and 3's four norms a layer: post_attention_layernorm normalises the attention's
  /// output before its residual add, pre_feedforward_layernorm is the MLP's input norm and
  /// post_feedforward_layernorm normalises the MLP's output.
  bool sandwich_norms = false;
  /// The RoPE of the sliding-window layers where it differs from `rope` (Gemma 3's
  /// rope_local_base_freq, or rope_parameters.sliding_attention); unset: every layer rotates
  /// with `rope`.
  std::optional<RopeConfig> sliding_rope;
  /// Which layers rotate q and k at all (SmolLM3's no_rope_layers: 1 rotates, 0 is a NoPE
  /// layer); empty: every layer.
  std::vector<bool> rope_layers;
  /// Sparse mixture-of-experts MLPs (Qwen3-MoE, Qwen2-MoE, Mixtral, OLMoE): a router picks
  /// num_experts_per_tok of num_experts SwiGLU experts (moe_intermediate_size wide) per token,
  /// their outputs weighted by the router's softmax (renormalised over the picked ones with
  /// norm_topk_prob). 0 experts: every MLP is dense.
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  bool norm_topk_prob = false;
  /// The routing weights rounded to the activations' dtype before they scale the experts'
  /// outputs (Qwen2/3-MoE, OLMoE); Mixtral keeps them in float32.
  bool router_weights_in_act_dtype = true;
  /// Qwen2-MoE's shared expert beside the routed ones (its width; 0: none), gated per token by
  /// sigmoid(x . shared_expert_gate); GraniteMoeShared's ungated (shared_expert_gated false).
  int64_t shared_expert_intermediate_size = 0;
  bool shared_expert_gated = true;
  /// The experts stored as 3D stacks (GraniteMoe's block_sparse_moe.input_linear [experts,
  /// 2 x width, hidden], gate rows first, and output_linear [experts, hidden, width]) rather
  /// than a tensor per expert.
  bool stacked_experts = false;
  /// Which layers' MLPs are sparse (decoder_sparse_step, mlp_only_layers); empty: all of them
  /// when num_experts > 0.
  std::vector<bool> moe_layers;
  std::optional<DType> dtype;  ///< `torch_dtype` / `dtype`, when the file says
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> bos_token_id, pad_token_id;

  /// The leading dimensions of each head that RoPE rotates (rope.rotary_dim, else head_dim).
  int64_t rotary_dims() const { return rope.rotary_dim > 0 ? rope.rotary_dim : head_dim; }
  /// Layer `layer`'s sliding window in keys, 0 for the whole causal past.
  int64_t layer_window(int64_t layer) const {
    if (!sliding_window) return 0;
    const bool windowed =
        sliding_layers.empty() || (layer < static_cast<int64_t>(sliding_layers.size()) &&
                                   sliding_layers[static_cast<size_t>(layer)]);
    return windowed ? *sliding_window : 0;
  }
  /// Whether layer `layer` is one of the sliding-window layers (layer_types), whatever the
  /// window: the layers Gemma 3 rotates with sliding_rope.
  bool is_sliding_layer(int64_t layer) const {
    return sliding_layers.empty() ? sliding_window.has_value()
                                  : layer < static_cast<int64_t>(sliding_layers.size()) &&
                                        sliding_layers[static_cast<size_t>(layer)];
  }
  /// Whether layer `layer`'s MLP is a sparse mixture of experts.
  bool is_moe_layer(int64_t layer) const {
    if (num_experts <= 0) return false;
    return moe_layers.empty() || (layer < static_cast<int64_t>(moe_layers.size()) &&
                                  moe_layers[static_cast<size_t>(layer)]);
  }
  /// Whether layer `layer` applies RoPE (false for SmolLM3's NoPE layers).
  bool layer_rotates(int64_t layer) const {
    return rope_layers.empty() || layer >= static_cast<int64_t>(rope_layers.size()) ||
           rope_layers[static_cast<size_t>(layer)];
  }
  /// Whether any layer has a sliding window.
  bool has_sliding_window() const {
    for (int64_t l = 0; l < num_hidden_layers; ++l) {
      if (layer_window(l) > 0) return true;
    }
    return false;
  }

  /// Reads `path` (a config.json); throws anvil::Error naming the file and the field at fault.
  static ModelConfig from_file(const std::string& path);
  /// Parses config.json text; `source` names it in errors.
  static ModelConfig from_json_text(const std::string& text, const std::string& source);
};

/// How an assistant model's draft length changes between steps, generation_config.json's
/// `num_assistant_tokens_schedule` (transformers' names).
enum class AssistantTokensSchedule {
  constant,   ///< num_assistant_tokens every step (transformers' default)
  heuristic,  ///< +2 after a step that kept every drafted token, else -1 (at least 1); the
              ///< count carries over to the assistant's next generate() call
  heuristic_transient,  ///< as heuristic, each call starting from num_assistant_tokens again
};

/// The schedule of that name ("constant", "heuristic", "heuristic_transient"); nullopt for any
/// other.
std::optional<AssistantTokensSchedule> assistant_tokens_schedule_named(const std::string& name);

/// Beam search's stopping rule, generation_config.json's `early_stopping`.
enum class EarlyStopping {
  heuristic,            ///< false: stop once the best running beam, at its current length, cannot
                        ///< beat the worst finished hypothesis (transformers' default)
  when_beams_finished,  ///< true: stop as soon as num_beams hypotheses have finished
  never,  ///< "never": the canonical rule, which bounds the running beams at max_length too
};

/// generation_config.json: defaults for generate().
struct GenerationConfig {
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id, bos_token_id;
  bool do_sample = false;
  float temperature = 1.0f;
  int64_t top_k = 50;
  float top_p = 1.0f;
  float min_p = 0.0f;
  float repetition_penalty = 1.0f;
  float typical_p = 1.0f;       ///< typical sampling's mass; 1 off
  float epsilon_cutoff = 0.0f;  ///< epsilon sampling's probability floor; 0 off
  float eta_cutoff = 0.0f;      ///< eta sampling's; 0 off
  std::optional<int64_t> max_new_tokens;
  /// The total length (prompt included) generation stops at, when the file sets it; unset,
  /// transformers 5 generates 20 new tokens (within max_position_embeddings).
  std::optional<int64_t> max_length;
  /// eos suppressed until this many tokens are new; when set (even to 0) it replaces min_length,
  /// as transformers' _prepare_generated_length does.
  std::optional<int64_t> min_new_tokens;
  int64_t min_length = 0;            ///< eos suppressed until rows (prompt included) are this long
  int64_t no_repeat_ngram_size = 0;  ///< no n-gram of this size occurs twice in a row; 0 off
  std::vector<int64_t> suppress_tokens;        ///< never generated
  std::vector<int64_t> begin_suppress_tokens;  ///< not generated as the first new token
  std::vector<int64_t> forced_eos_token_ids;   ///< the only choice at the last step (max length)
  /// Banned sequences: a one-token one is never generated (unless it is an eos id), a longer
  /// one's last token not after the rest of it.
  std::vector<std::vector<int64_t>> bad_words_ids;
  /// Added to a token's score where it would complete the sequence (a one-token sequence:
  /// always), before every other processor; pairs of (ids, bias).
  std::vector<std::pair<std::vector<int64_t>, float>> sequence_bias;
  /// The only choice for the first token of a one-token prompt.
  std::optional<int64_t> forced_bos_token_id;
  /// (start, factor): from `start` new tokens on, the eos scores grow by |score| x
  /// (factor^(new - start) - 1).
  std::optional<std::pair<int64_t, float>> exponential_decay_length_penalty;
  /// A row stops once its text ends with one of these (generate() needs
  /// GenerateOptions::tokenizer to read them, as transformers' needs `tokenizer=`).
  std::vector<std::string> stop_strings;
  /// Beam search: the processed scores log-softmaxed again before they are summed.
  bool renormalize_logits = false;
  /// Stop once this many seconds have passed since generate() began (the step then running
  /// completes).
  std::optional<double> max_time;
  int64_t num_beams = 1;  ///< beam search when > 1
  /// Prompt lookup decoding: each step drafts up to this many tokens by finding the sequence's
  /// last n-gram earlier in it, and one forward pass checks them all (unset: off).
  std::optional<int64_t> prompt_lookup_num_tokens;
  /// The longest n-gram prompt lookup matches (it tries shorter ones down to 1); default 2.
  std::optional<int64_t> max_matching_ngram_size;
  /// An assistant model's drafted tokens a step at most (transformers' default 20). As in
  /// transformers, generate() reads this, the schedule and the threshold from the assistant's
  /// generation config, not the main model's.
  std::optional<int64_t> num_assistant_tokens;
  std::optional<AssistantTokensSchedule> num_assistant_tokens_schedule;
  /// An assistant's draft stops at a token it gives less than this probability (default 0.4).
  std::optional<float> assistant_confidence_threshold;
  /// The model's first N layers (then its final norm and head) draft for it (transformers'
  /// assistant_early_exit, LayerSkip's self-speculation).
  std::optional<int64_t> assistant_early_exit;
  /// Ensemble verification (transformers' assistant_ensemble_weight, DIVERSE): drafts are
  /// checked against w * p_model + (1 - w) * q_assistant instead of p_model; in (0, 1).
  std::optional<double> assistant_ensemble_weight;
  int64_t num_return_sequences = 1;  ///< rows returned per prompt (best beams, or samples)
  /// Finished hypotheses are ranked by sum of log-probabilities / new_tokens^length_penalty.
  float length_penalty = 1.0f;
  EarlyStopping early_stopping = EarlyStopping::heuristic;

  /// The first field that would change what generate() returns and that anvil does not
  /// implement (beam search, sequence bias, ...), set to other than its default: generate()
  /// refuses with this message; empty when none.
  std::string unimplemented;

  /// Reads `path`; throws anvil::Error naming the file and field at fault.
  static GenerationConfig from_file(const std::string& path);
  static GenerationConfig from_json_text(const std::string& text, const std::string& source);
  /// What transformers derives from config.json when a model has no generation_config.json.
  static GenerationConfig from_model_config(const ModelConfig& config);
};

}  // namespace anvil
