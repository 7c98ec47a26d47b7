// What one generate() call runs with: generation_config.json's fields with GenerateOptions'
// overrides, checked as transformers checks them, the prompt's length turned into counts of new
// tokens, and the processors that edit a row's scores on the host in transformers' order.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "anvil/config.h"
#include "anvil/model.h"
#include "anvil/tokenizer.h"
#include "generate/logits_processor.h"

namespace anvil {

struct GenerationSettings {
  SamplingParams sampling;
  int64_t max_new = 0;  ///< new tokens at most
  int64_t min_new = 0;  ///< eos suppressed for the first min_new new tokens
  int64_t no_repeat_ngram_size = 0;
  std::vector<int64_t> eos;
  int64_t pad = 0;
  std::vector<std::vector<int64_t>> bad_words_ids;
  std::vector<int64_t> suppress_tokens, begin_suppress_tokens, forced_eos_token_ids;
  std::vector<std::pair<std::vector<int64_t>, float>> sequence_bias;
  std::optional<int64_t> forced_bos_token_id;
  std::optional<std::pair<int64_t, float>> exponential_decay_length_penalty;
  bool renormalize_logits = false;
  std::optional<double> max_time;
  /// When generate() began (resolve_settings' call): MaxTimeCriteria's start, the prefill included.
  std::chrono::steady_clock::time_point started;
  std::vector<std::string> stop_strings;  ///< non-empty only with a tokenizer
  std::function<std::vector<int64_t>(int64_t, const std::vector<int64_t>&)> prefix_allowed_tokens;
  std::vector<std::function<void(const std::vector<int64_t>&, std::span<float>)>> logits_processors;
  const Tokenizer* tokenizer = nullptr;
  int64_t prompt = 0;  ///< ids per prompt row, padding included
  int64_t num_beams = 1, num_return_sequences = 1;
  int64_t prompt_lookup = 0;       ///< prompt lookup's drafted tokens a step; 0 off
  int64_t max_matching_ngram = 2;  ///< the longest n-gram it matches
  int64_t assistant_tokens = 20;   ///< an assistant model's drafted tokens a step at most
  AssistantTokensSchedule assistant_schedule = AssistantTokensSchedule::constant;
  float assistant_confidence_threshold = 0.4f;  ///< its drafts stop below this probability
  bool assistant_adaptive_confidence = false;   ///< the threshold follows the drafts' ROC curve
  int64_t assistant_early_exit = 0;             ///< the model's first N layers draft; 0 off
  std::optional<double> ensemble_weight;        ///< drafts checked against w p + (1 - w) q
  float length_penalty = 1.0f;
  EarlyStopping early_stopping = EarlyStopping::heuristic;
  uint64_t seed = 0;

  /// Whether a processor other than the repetition penalty edits rows on the host (n-gram ban,
  /// bad words, suppressions, forced eos, the warpers that read whole rows): a generation with
  /// any runs every step there.
  bool host_edits() const;

  /// The processors at new token `t` (0 for the first), on the scores of a row of prompt
  /// `batch_id`, in transformers' order: sequence bias, repetition penalty (unless `penalised`
  /// already), n-grams, bad words, minimum lengths, allowed prefixes, forced bos, forced eos,
  /// the length decay, suppressions, then the caller's own processors. `row` is every id so
  /// far; the repetition penalty skips its first `padding` (the prompt's left padding, as
  /// transformers ignores it).
  void process(std::span<float> scores, const std::vector<int64_t>& row, int64_t padding, int64_t t,
               int64_t batch_id, bool penalised = false) const;
};

/// `gen` with `opts` over it for prompts of `prompt` ids on a model of `max_positions`
/// positions; throws anvil::Error for values transformers refuses (and for generation_config
/// fields anvil does not implement).
GenerationSettings resolve_settings(const GenerationConfig& gen, const GenerateOptions& opts,
                                    int64_t prompt, int64_t max_positions);

/// How many ids a mask row's left padding holds (transformers' argmax of mask != 0).
int64_t leading_padding(const std::vector<int64_t>& mask_row);

}  // namespace anvil
