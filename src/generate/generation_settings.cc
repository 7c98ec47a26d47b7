// generate()'s settings from generation_config.json and GenerateOptions.
#include "generate/generation_settings.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "anvil/error.h"

namespace anvil {

namespace {

SamplingParams sampling_params(const GenerationConfig& gen, const GenerateOptions& o) {
  SamplingParams p;
  p.do_sample = o.do_sample.value_or(gen.do_sample);
  p.temperature = o.temperature.value_or(gen.temperature);
  p.top_k = o.top_k.value_or(gen.top_k);
  p.top_p = o.top_p.value_or(gen.top_p);
  p.min_p = o.min_p.value_or(gen.min_p);
  p.repetition_penalty = o.repetition_penalty.value_or(gen.repetition_penalty);
  p.typical_p = o.typical_p.value_or(gen.typical_p);
  p.epsilon_cutoff = o.epsilon_cutoff.value_or(gen.epsilon_cutoff);
  p.eta_cutoff = o.eta_cutoff.value_or(gen.eta_cutoff);
  if (!(p.typical_p > 0 && p.typical_p <= 1)) throw Error("typical_p must be in (0, 1]");
  if (!(p.epsilon_cutoff >= 0 && p.epsilon_cutoff < 1)) {
    throw Error("epsilon_cutoff must be in [0, 1)");
  }
  if (!(p.eta_cutoff >= 0 && p.eta_cutoff < 1)) throw Error("eta_cutoff must be in [0, 1)");
  if (p.do_sample && !(p.temperature > 0)) {
    throw Error("temperature must be strictly positive when sampling (use greedy decoding for 0)");
  }
  if (p.top_k < 0) throw Error("top_k must not be negative");
  if (!(p.top_p > 0 && p.top_p <= 1)) throw Error("top_p must be in (0, 1]");
  if (!(p.min_p >= 0 && p.min_p <= 1)) throw Error("min_p must be in [0, 1]");
  if (!(p.repetition_penalty > 0)) throw Error("repetition_penalty must be strictly positive");
  return p;
}

}  // namespace

GenerationSettings resolve_settings(const GenerationConfig& gen, const GenerateOptions& opts,
                                    int64_t prompt, int64_t max_positions) {
  if (!gen.unimplemented.empty()) throw Error(gen.unimplemented);
  GenerationSettings s;
  s.started = std::chrono::steady_clock::now();
  s.sampling = sampling_params(gen, opts);
  // _prepare_generated_length / _validate_generated_length: max_new_tokens wins; else a
  // max_length the file sets counts the prompt; else 20 new tokens, within the model's
  // positions. A prompt that already reaches the limit is refused, not returned as it is.
  if (opts.max_new_tokens || gen.max_new_tokens) {
    s.max_new = opts.max_new_tokens ? *opts.max_new_tokens : *gen.max_new_tokens;
  } else {
    const int64_t limit = gen.max_length
                              ? *gen.max_length
                              : std::min(prompt + 20, std::max<int64_t>(1, max_positions));
    if (prompt >= limit) {
      throw Error("the prompt has " + std::to_string(prompt) + " ids but max_length is " +
                  std::to_string(limit) + (gen.max_length ? "" : " (max_position_embeddings)") +
                  ": set max_new_tokens (or a larger max_length)");
    }
    s.max_new = limit - prompt;
  }
  if (s.max_new < 0) throw Error("max_new_tokens must not be negative");
  if (opts.min_new_tokens < 0) throw Error("min_new_tokens must not be negative");
  // MinLength- and MinNewTokensLengthLogitsProcessor: eos suppressed for the first min_new
  // tokens. min_new_tokens (the options', else generation_config's) replaces min_length, which
  // counts the prompt, as transformers' _prepare_generated_length does.
  const std::optional<int64_t> min_new_set =
      opts.min_new_tokens > 0 ? std::optional<int64_t>(opts.min_new_tokens) : gen.min_new_tokens;
  s.min_new = min_new_set ? *min_new_set : std::max<int64_t>(0, gen.min_length - prompt);
  s.no_repeat_ngram_size = opts.no_repeat_ngram_size.value_or(gen.no_repeat_ngram_size);
  if (s.no_repeat_ngram_size < 0) throw Error("no_repeat_ngram_size must not be negative");
  s.eos = opts.eos_token_ids.value_or(gen.eos_token_ids);
  s.pad = opts.pad_token_id.value_or(gen.pad_token_id.value_or(s.eos.empty() ? 0 : s.eos[0]));
  s.bad_words_ids = gen.bad_words_ids;
  s.suppress_tokens = gen.suppress_tokens;
  s.begin_suppress_tokens = gen.begin_suppress_tokens;
  s.forced_eos_token_ids = gen.forced_eos_token_ids;
  s.sequence_bias = gen.sequence_bias;
  s.forced_bos_token_id = gen.forced_bos_token_id;
  s.exponential_decay_length_penalty = gen.exponential_decay_length_penalty;
  if (s.exponential_decay_length_penalty && s.eos.empty()) {
    throw Error("exponential_decay_length_penalty needs an eos token to favour, and there is none");
  }
  s.renormalize_logits = gen.renormalize_logits;
  s.max_time = opts.max_time ? opts.max_time : gen.max_time;
  if (s.max_time && !(*s.max_time >= 0)) throw Error("max_time must not be negative");
  s.prompt = prompt;
  s.stop_strings = opts.stop_strings.value_or(gen.stop_strings);
  s.prefix_allowed_tokens = opts.prefix_allowed_tokens;
  s.logits_processors = opts.logits_processors;
  s.tokenizer = opts.tokenizer;
  if (!s.stop_strings.empty() && !s.tokenizer) {
    throw Error(
        "stop_strings are set (in the options or generation_config.json) but no tokenizer is "
        "given to match them: set GenerateOptions::tokenizer");
  }
  s.num_beams = opts.num_beams.value_or(gen.num_beams);
  s.num_return_sequences = opts.num_return_sequences.value_or(gen.num_return_sequences);
  s.length_penalty = opts.length_penalty.value_or(gen.length_penalty);
  s.early_stopping = opts.early_stopping.value_or(gen.early_stopping);
  s.seed = opts.seed;
  if (s.num_beams < 1) throw Error("num_beams must be at least 1");
  if (s.num_return_sequences < 1) throw Error("num_return_sequences must be at least 1");
  // transformers' GenerationConfig.validate.
  if (s.num_beams == 1 && s.num_return_sequences > 1 && !s.sampling.do_sample) {
    throw Error("greedy decoding without beam search returns one sequence per prompt, not " +
                std::to_string(s.num_return_sequences) +
                " (num_return_sequences > 1 needs sampling or num_beams >= num_return_sequences)");
  }
  if (s.num_beams > 1 && s.num_return_sequences > s.num_beams) {
    throw Error("num_return_sequences (" + std::to_string(s.num_return_sequences) +
                ") must not exceed num_beams (" + std::to_string(s.num_beams) + ")");
  }
  if (s.num_beams > 1 && opts.streamer) {
    throw Error("a streamer cannot follow beam search: a beam's tokens can still be replaced");
  }
  // transformers' PromptLookupCandidateGenerator refuses values below 1.
  const auto lookup =
      opts.prompt_lookup_num_tokens ? opts.prompt_lookup_num_tokens : gen.prompt_lookup_num_tokens;
  const auto ngram =
      opts.max_matching_ngram_size ? opts.max_matching_ngram_size : gen.max_matching_ngram_size;
  if (lookup && *lookup < 1) {
    throw Error("prompt_lookup_num_tokens must be at least 1, got " + std::to_string(*lookup));
  }
  if (ngram && *ngram < 1) {
    throw Error("max_matching_ngram_size must be at least 1, got " + std::to_string(*ngram));
  }
  s.prompt_lookup = lookup.value_or(0);
  s.max_matching_ngram = ngram.value_or(2);
  s.assistant_early_exit = opts.assistant_early_exit.value_or(gen.assistant_early_exit.value_or(0));
  if ((opts.assistant_early_exit || gen.assistant_early_exit) && s.assistant_early_exit < 1) {
    throw Error("assistant_early_exit must be at least 1 (the layers that draft), got " +
                std::to_string(s.assistant_early_exit));
  }
  // An assistant's settings: the call's, else its own generation config's (transformers reads
  // them from the assistant's config alone; an early exit's assistant is this model), else
  // transformers' defaults.
  static const GenerationConfig kNoAssistant;
  const GenerationConfig& assistant_gen = opts.assistant_model
                                              ? opts.assistant_model->generation_config()
                                          : s.assistant_early_exit > 0 ? gen
                                                                       : kNoAssistant;
  s.assistant_tokens =
      opts.num_assistant_tokens.value_or(assistant_gen.num_assistant_tokens.value_or(20));
  if (s.assistant_tokens < 1) {
    throw Error("num_assistant_tokens must be at least 1, got " +
                std::to_string(s.assistant_tokens));
  }
  s.assistant_schedule = opts.num_assistant_tokens_schedule.value_or(
      assistant_gen.num_assistant_tokens_schedule.value_or(AssistantTokensSchedule::constant));
  s.assistant_confidence_threshold = opts.assistant_confidence_threshold.value_or(
      assistant_gen.assistant_confidence_threshold.value_or(0.4f));
  if (!(s.assistant_confidence_threshold >= 0 && s.assistant_confidence_threshold <= 1)) {
    throw Error("assistant_confidence_threshold must be in [0, 1], got " +
                std::to_string(s.assistant_confidence_threshold));
  }
  // Options that work on an assistant's own drafts and probabilities: a model's (of this
  // tokenizer) or the early exit's, never prompt lookup's or another tokenizer's.
  const auto needs_own_assistant = [&](const std::string& name) {
    if (s.prompt_lookup > 0) {
      throw Error(name + ": not with prompt lookup (it needs the assistant's probabilities)");
    }
    if (!opts.assistant_model && s.assistant_early_exit == 0) {
      throw Error(name + ": needs assistant_model or assistant_early_exit");
    }
    if (opts.assistant_tokenizer) {
      throw Error(name +
                  ": not with an assistant of another tokenizer (its drafts reach this model as "
                  "text, and its probabilities are over its own vocabulary; transformers does "
                  "not take them there either)");
    }
  };
  s.ensemble_weight = opts.assistant_ensemble_weight ? opts.assistant_ensemble_weight
                                                     : gen.assistant_ensemble_weight;
  if (s.ensemble_weight) {
    if (!(*s.ensemble_weight > 0 && *s.ensemble_weight < 1)) {
      throw Error("assistant_ensemble_weight must be in (0, 1), got " +
                  std::to_string(*s.ensemble_weight) +
                  " (unset keeps speculative decoding lossless)");
    }
    needs_own_assistant("assistant_ensemble_weight");
  }
  s.assistant_adaptive_confidence = opts.assistant_adaptive_confidence;
  if (s.assistant_adaptive_confidence) {
    needs_own_assistant("assistant_adaptive_confidence");
    if (s.assistant_confidence_threshold <= 0) {
      throw Error(
          "assistant_adaptive_confidence: needs assistant_confidence_threshold above 0 (0 turns "
          "the threshold off, and transformers then adapts nothing)");
    }
  }
  return s;
}

bool GenerationSettings::host_edits() const {
  return no_repeat_ngram_size > 0 || sampling.needs_whole_rows() || !bad_words_ids.empty() ||
         !suppress_tokens.empty() || !begin_suppress_tokens.empty() ||
         !forced_eos_token_ids.empty() || !sequence_bias.empty() || forced_bos_token_id ||
         exponential_decay_length_penalty || prefix_allowed_tokens || !logits_processors.empty();
}

void GenerationSettings::process(std::span<float> scores, const std::vector<int64_t>& row,
                                 int64_t padding, int64_t t, int64_t batch_id,
                                 bool penalised) const {
  if (!sequence_bias.empty()) apply_sequence_bias(scores, row, sequence_bias);
  if (!penalised && sampling.repetition_penalty != 1.0f) {
    const std::vector<int64_t> context(
        row.begin() + std::min<int64_t>(padding, static_cast<int64_t>(row.size())), row.end());
    apply_repetition_penalty(scores, context, sampling.repetition_penalty);
  }
  ban_repeated_ngrams(scores, row, no_repeat_ngram_size);
  ban_bad_words(scores, row, bad_words_ids, eos);
  if (t < min_new) anvil::suppress_tokens(scores, eos);
  if (prefix_allowed_tokens) {
    // PrefixConstrainedLogitsProcessor: -inf but where allowed (ids outside the vocabulary
    // ignored, as a masked index_fill past the end would fail in torch: refused instead).
    const std::vector<int64_t> allowed = prefix_allowed_tokens(batch_id, row);
    if (allowed.empty()) {
      throw Error("prefix_allowed_tokens returned an empty list for batch id " +
                  std::to_string(batch_id) + ": the constraint is unsatisfiable");
    }
    std::vector<float> kept(allowed.size());
    for (size_t i = 0; i < allowed.size(); ++i) {
      if (allowed[i] < 0 || allowed[i] >= static_cast<int64_t>(scores.size())) {
        throw Error("prefix_allowed_tokens returned id " + std::to_string(allowed[i]) +
                    ", outside the vocabulary of " + std::to_string(scores.size()));
      }
      kept[i] = scores[allowed[i]];
    }
    std::fill(scores.begin(), scores.end(), -std::numeric_limits<float>::infinity());
    for (size_t i = 0; i < allowed.size(); ++i) scores[allowed[i]] = kept[i];
  }
  // ForcedBOSTokenLogitsProcessor acts where the ids so far number 1: a one-token prompt's first
  // step (and SuppressTokensAtBegin then waits one step more, as transformers sets it up).
  const bool forces_bos = forced_bos_token_id && prompt == 1;
  if (forces_bos && t == 0) force_tokens(scores, {*forced_bos_token_id});
  if (!forced_eos_token_ids.empty() && t == max_new - 1) force_tokens(scores, forced_eos_token_ids);
  if (exponential_decay_length_penalty && t > exponential_decay_length_penalty->first) {
    apply_length_decay(scores, eos, t - exponential_decay_length_penalty->first,
                       exponential_decay_length_penalty->second);
  }
  anvil::suppress_tokens(scores, suppress_tokens);
  if (t == (forces_bos ? 1 : 0)) anvil::suppress_tokens(scores, begin_suppress_tokens);
  for (const auto& processor : logits_processors) processor(row, scores);
}

int64_t leading_padding(const std::vector<int64_t>& mask_row) {
  const auto first =
      std::find_if(mask_row.begin(), mask_row.end(), [](int64_t m) { return m != 0; });
  return first == mask_row.end() ? 0 : first - mask_row.begin();
}

}  // namespace anvil
