/// @file model.h
/// Causal language models, named after transformers' classes:
///
///     auto model = anvil::AutoModelForCausalLM::from_pretrained("Qwen/Qwen3-0.6B",
///                    {.dtype = anvil::DType::bf16, .device_map = "cpu"});
///     auto out = model.generate(ids, {.max_new_tokens = 50});
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "anvil/config.h"
#include "anvil/tensor.h"

namespace anvil {

class CausalLM;
class Decoder;
class Tokenizer;

/// Keys and values kept from one generate() call for the next, as transformers' generate takes
/// a cache in `past_key_values` and llama.cpp keeps its prompt cache: a prompt that begins with
/// tokens the cache holds runs only the tokens after them (a chat's next turn prefills the new
/// message, not the whole conversation). After a call the cache holds the prompt and its
/// continuation, all but the last token (whose keys no step has made yet).
///
///     anvil::PromptCache cache;
///     opts.prompt_cache = &cache;
///     model.generate(turn1_ids, opts);   // fills the cache
///     model.generate(turn2_ids, opts);   // runs only what follows the common prefix
///
/// One prompt without padding and without beam search per call; one model per cache (clear()
/// it to use another). Reused keys were made by the steps that first ran them, so the logits
/// can differ from a fresh prefill's in the last bits of rounding (as transformers' do). Models
/// whose RoPE follows the sequence's length (dynamic NTK, longrope) run every prompt whole.
/// Not thread-safe.
class PromptCache {
 public:
  PromptCache();
  ~PromptCache();
  PromptCache(PromptCache&&) noexcept;
  PromptCache& operator=(PromptCache&&) noexcept;
  PromptCache(const PromptCache&) = delete;
  PromptCache& operator=(const PromptCache&) = delete;

  /// The tokens whose keys and values the cache holds.
  const std::vector<int64_t>& tokens() const;
  /// How many of the last call's prompt tokens came from the cache instead of being run.
  int64_t reused() const;
  /// Forgets the tokens and frees the keys and values.
  void clear();
  /// Writes the tokens and their keys and values to `path` (a safetensors file, replaced whole)
  /// for load() in a later process, as llama.cpp's --prompt-cache keeps a long prompt's state.
  void save(const std::string& path) const;
  /// Replaces the contents with a file save() wrote, for `model`; refuses ("PATH: PROBLEM") a
  /// file that is not a prompt cache or that another model (other weights, dtype or KV cache
  /// dtype) made, and leaves the cache as it was.
  void load(const std::string& path, const CausalLM& model);

  struct State;  ///< generate()'s (src/generate/prompt_cache.h)
  State& state() const { return *state_; }

 private:
  std::unique_ptr<State> state_;
};

/// What speculative decoding did in one generate() call.
struct SpeculationStats {
  int64_t steps = 0;    ///< forward passes that checked a draft (steps without one not counted)
  int64_t drafted = 0;  ///< tokens proposed
  /// Of them, kept: as transformers' num_matches, the tokens each step added less the one the
  /// model picked itself (a kept draft token that ends the generation counts as that one).
  int64_t accepted = 0;
  /// With an assistant model: the confidence threshold its last draft stopped below (where
  /// assistant_adaptive_confidence moved it, where it ended; else the setting).
  float assistant_confidence_threshold = 0;
};

struct ModelOptions {
  /// Weight dtype; unset = "auto": the checkpoint's `dtype`/`torch_dtype`, else float32.
  std::optional<DType> dtype;
  /// Device string ("cpu", "cuda:0", ...).
  std::string device_map = "cpu";
  /// "sdpa" (fused, the default) or "eager" (materialised scores, the reference).
  std::string attn_implementation = "sdpa";
  /// KV cache dtype; unset = the device's default: f16 for quantized weights on the CPU (as
  /// llama.cpp), else the activations' dtype. f32 keeps the exact cache; f16 / bf16 halve it.
  std::optional<DType> kv_cache_dtype;
};

/// Token ids of a batch, each row of the same length, with 1/0 attention masks (0 = padding).
struct Batch {
  std::vector<std::vector<int64_t>> input_ids;
  std::vector<std::vector<int64_t>> attention_mask;  ///< empty: all ones

  /// Left-pads prompts of different lengths with `pad_id`, masking the padding.
  static Batch left_padded(const std::vector<std::vector<int64_t>>& prompts, int64_t pad_id);
};

/// Options of generate(); unset fields come from the model's generation_config.json, as in
/// transformers.
struct GenerateOptions {
  /// default: generation_config's max_new_tokens, else its max_length - prompt, else 20 (within
  /// max_position_embeddings), as transformers 5.
  std::optional<int64_t> max_new_tokens;
  int64_t min_new_tokens = 0;  ///< eos is suppressed until this many tokens are new
  std::optional<bool> do_sample;
  std::optional<float> temperature;
  std::optional<int64_t> top_k;  ///< 0 disables
  std::optional<float> top_p;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<float> typical_p;       ///< typical sampling's mass (1 off)
  std::optional<float> epsilon_cutoff;  ///< epsilon sampling (0 off)
  std::optional<float> eta_cutoff;      ///< eta sampling (0 off)
  /// Bans any token that would repeat an n-gram of this size already in the row (prompt
  /// included); default: generation_config, 0 off.
  std::optional<int64_t> no_repeat_ngram_size;
  /// Beam search with this many beams (1: greedy or sampling); with do_sample, beam sampling.
  std::optional<int64_t> num_beams;
  /// Rows returned per prompt, one after another: the best finished beams (at most num_beams),
  /// or independent samples (sampling only).
  std::optional<int64_t> num_return_sequences;
  std::optional<float> length_penalty;  ///< beam search: score = log-prob sum / length^this
  std::optional<EarlyStopping> early_stopping;
  /// Stop once this many seconds have passed (generation_config's max_time by default).
  std::optional<double> max_time;
  /// A row stops once its text ends with one of these (default: generation_config's); needs
  /// `tokenizer`, whose tokens' text they are matched against (transformers' stop_strings).
  std::optional<std::vector<std::string>> stop_strings;
  const Tokenizer* tokenizer = nullptr;
  /// transformers' prefix_allowed_tokens_fn: called with a row's prompt index (a prompt's beams
  /// and num_return_sequences repeats share it) and the row's ids so far, returns the only ids
  /// the next token may be; an empty list is an error (the constraint is unsatisfiable).
  std::function<std::vector<int64_t>(int64_t batch_id, const std::vector<int64_t>& input_ids)>
      prefix_allowed_tokens;
  /// Custom logits processors (transformers' `logits_processor=`): each edits one row's scores
  /// (log-probabilities under beam search) after the built-in processors, before the sampling
  /// warpers; they run on the host, every step.
  std::vector<std::function<void(const std::vector<int64_t>& input_ids, std::span<float> scores)>>
      logits_processors;
  /// Prompt lookup decoding (transformers' prompt_lookup_num_tokens, llama.cpp's lookup): each
  /// step drafts up to this many tokens that followed the first earlier occurrence of the
  /// sequence's last max_matching_ngram_size (or fewer) tokens, and one forward pass
  /// over them keeps those the model itself picks (greedy: the same tokens as without it, up
  /// to rounding: a step of several rows sums in another order than a one-token step, which
  /// can flip a near tie; sampling: each position drawn as usual, kept while it equals the
  /// draft). One prompt, no beams; default: generation_config.
  std::optional<int64_t> prompt_lookup_num_tokens;
  std::optional<int64_t> max_matching_ngram_size;
  /// Speculative decoding with a smaller model of this one's tokenizer (of another: see
  /// assistant_tokenizer) (transformers' assistant_model, llama.cpp's draft model): each step
  /// it drafts up to num_assistant_tokens tokens (default 20; fewer where its pick's probability
  /// falls below assistant_confidence_threshold, default 0.4), and one forward pass of this
  /// model keeps those it would produce itself (greedy: the same tokens as without it; sampling:
  /// speculative sampling, the same distribution, which needs equal vocabulary sizes). It must
  /// outlive the call; one prompt, no beams, not with prompt lookup. The three settings
  /// default to the assistant's generation config, as in transformers (which reads them there
  /// only); num_assistant_tokens_schedule (default constant) lets the draft length follow how
  /// many drafts are kept, and with `heuristic` the length reached carries over to the
  /// assistant's next call (held by the assistant object, as transformers keeps it in the
  /// assistant's generation_config).
  const CausalLM* assistant_model = nullptr;
  /// The assistant's tokenizer, where it is not this model's (transformers' universal assisted
  /// decoding, generate(tokenizer=, assistant_tokenizer=); needs `tokenizer`, this model's):
  /// each step the sequence's text is encoded with it, the assistant drafts greedily in its own
  /// ids, and its draft's text is encoded with `tokenizer` and checked as any draft. The model's
  /// tokens are its own either way (greedy: the same tokens; sampling: drafts kept while the
  /// model's draws equal them, any vocabulary sizes); the tokenizers decide how many are kept.
  /// Null: the assistant's ids are taken as this model's.
  const Tokenizer* assistant_tokenizer = nullptr;
  std::optional<int64_t> num_assistant_tokens;
  std::optional<AssistantTokensSchedule> num_assistant_tokens_schedule;
  std::optional<float> assistant_confidence_threshold;
  /// Move that threshold after every check step to the point of the ROC curve of the drafted
  /// tokens' probabilities (kept or not, so far in the call) with the least fpr + 3 fnr, as
  /// transformers does where scikit-learn is importable (without it, transformers keeps the
  /// threshold fixed, as here by default). Needs a threshold above 0 and an assistant of this
  /// model's tokenizer (transformers' universal assisted decoding does not adapt it).
  bool assistant_adaptive_confidence = false;
  /// Speculative decoding with the model's own first N layers as the assistant (transformers'
  /// assistant_early_exit; LayerSkip): they, the final norm and the head draft, with a cache of
  /// their own, and the whole model checks the drafts as an assistant's. Worth it for models
  /// trained to exit early (facebook/layerskip-llama3.2-1B, ...). The assistant settings above
  /// come from this model's generation config, as the assistant is this model; the heuristic
  /// schedule's draft length carries over to this model's next call. Default: generation_config;
  /// 1 to num_hidden_layers; not with assistant_model or prompt lookup.
  std::optional<int64_t> assistant_early_exit;
  /// Ensemble verification (transformers' assistant_ensemble_weight; DIVERSE, static ensemble):
  /// an assistant's drafts are checked against v = w p + (1 - w) q (p the model's probabilities,
  /// q the assistant's) instead of p: greedy picks argmax v at drafted positions (the token
  /// after the last draft still argmax p), sampling accepts a drafted token with probability
  /// min(1, 1 - w + w p/q). More drafts are kept, and the output is no longer the model's alone
  /// (biased toward the assistant). In (0, 1); default: generation_config, else off. Needs the
  /// assistant's probabilities over this model's vocabulary: an assistant model of the same
  /// vocabulary size or assistant_early_exit; not prompt lookup or another tokenizer.
  std::optional<double> assistant_ensemble_weight;
  /// Where not null, what speculative decoding (prompt lookup or an assistant) did: its
  /// verification steps, tokens drafted and kept.
  SpeculationStats* speculation_stats = nullptr;
  uint64_t seed = 0;
  std::optional<std::vector<int64_t>> eos_token_ids;  ///< stop on any of these
  std::optional<int64_t> pad_token_id;  ///< fills finished rows; default pad, else first eos
  /// Called once per step with the token chosen for each row (pad for finished rows); return
  /// false to stop early. Not with beam search (a beam's tokens can still be replaced).
  std::function<bool(const std::vector<int64_t>&)> streamer;
  /// Keys and values reused from the previous call and kept for the next (PromptCache); null:
  /// every call runs its whole prompt.
  PromptCache* prompt_cache = nullptr;
  /// transformers' output_scores (with return_dict_in_generate): each step appends its rows'
  /// scores as the token was picked from them, float32 [rows, vocab] on the host: the logits
  /// after the processors and, when sampling, the warpers (and a log-softmax with
  /// renormalize_logits). Finished rows' scores are kept too. Every step then edits its rows on
  /// the host. With beam search, a step's rows are its beams' (prompts x num_beams; the first
  /// step's are copies of the prompt's), log-probabilities after the processors, before the
  /// beams' running sums are added.
  std::vector<Tensor>* scores = nullptr;
  /// transformers' output_logits: each step's raw logits, float32 [rows, vocab] on the host.
  std::vector<Tensor>* logits = nullptr;
  /// Beam search only: each returned row's score, its log-probability sum / length^
  /// length_penalty (transformers' sequences_scores).
  std::vector<float>* sequences_scores = nullptr;
  /// Beam search only: for each returned row and each of its new tokens, the beam (prompt x
  /// num_beams + beam) that the token extended; -1 past the row's end, up to the longest
  /// returned row (transformers' beam_indices, as compute_transition_scores reads them).
  std::vector<std::vector<int64_t>>* beam_indices = nullptr;
};

class CausalLM {
 public:
  /// Loads a model folder (config.json + safetensors), a .gguf file, or a Hub id from the
  /// Hugging Face cache.
  static CausalLM from_pretrained(const std::string& model, const ModelOptions& options = {});

  const ModelConfig& config() const;
  const GenerationConfig& generation_config() const;
  Device device() const;
  DType dtype() const;
  /// The KV cache's dtype (ModelOptions::kv_cache_dtype, else the device's default).
  DType kv_cache_dtype() const;

  /// Logits [batch, seq, vocab] as float32 on the CPU. Positions follow the attention mask
  /// (cumsum - 1) as transformers' generate derives them; rows at padded positions are
  /// meaningless.
  Tensor logits(const Batch& batch) const;
  /// The last hidden states [batch, seq, hidden] as float32 on the CPU: each position's output
  /// of the final norm, transformers' last_hidden_state (AutoModel, or output_hidden_states'
  /// last entry). Positions as for logits(). A base model's checkpoint (Qwen3Model, LlamaModel:
  /// names without "model.", no lm_head) loads too; untied, it gives only hidden states.
  Tensor hidden_states(const Batch& batch) const;

  /// Continues every row; returns prompt + new tokens per row (left padding kept, finished rows
  /// filled with the pad id), as transformers' generate returns them: num_return_sequences rows
  /// per prompt, one prompt's after another.
  std::vector<std::vector<int64_t>> generate(const Batch& batch, const GenerateOptions& opts) const;
  /// One unpadded prompt, one row back (the best beam with beam search; more than one
  /// return sequence needs the batch form).
  std::vector<int64_t> generate(const std::vector<int64_t>& input_ids,
                                const GenerateOptions& opts) const;

  /// The decoder itself (for benchmarks and tools inside anvil).
  const Decoder& decoder() const { return *decoder_; }

 private:
  static CausalLM from_gguf(const std::string& path, const ModelOptions& options);
  /// Where the assistant of `opts` keeps its carried draft length (this model's own without
  /// one: an early exit's).
  std::atomic<int64_t>* carried_assistant_tokens(const GenerateOptions& opts) const;
  friend class PromptCache;  // load() binds the cache to the decoder, as generate() does

  std::shared_ptr<Decoder> decoder_;
  GenerationConfig generation_config_;
  /// The draft length the heuristic schedule reached when this model last assisted (0: not
  /// yet), where its next call as an assistant starts; copies share it, as they share the
  /// decoder.
  std::shared_ptr<std::atomic<int64_t>> carried_assistant_tokens_ =
      std::make_shared<std::atomic<int64_t>>(0);
};

/// transformers' name for the loader.
struct AutoModelForCausalLM {
  static CausalLM from_pretrained(const std::string& model, const ModelOptions& options = {}) {
    return CausalLM::from_pretrained(model, options);
  }
};

}  // namespace anvil
