#include "generate/prompt_lookup.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <random>
#include <span>

#include "generate/generate.h"
#include "generate/logits_processor.h"
#include "generate/stop_strings.h"

namespace anvil {

std::vector<int64_t> lookup_draft(const std::vector<int64_t>& ids, int64_t max_ngram,
                                  int64_t max_tokens, const std::vector<int64_t>& eos) {
  const auto size = static_cast<int64_t>(ids.size());
  if (max_tokens < 1) return {};
  for (int64_t n = std::min(max_ngram, size - 1); n >= 1; --n) {
    const auto tail = ids.end() - n;
    // The last window is the n-gram itself, with nothing after it.
    for (int64_t at = 0; at + n < size; ++at) {
      if (!std::equal(tail, ids.end(), ids.begin() + at)) continue;
      const int64_t from = at + n, to = std::min(from + max_tokens, size);
      std::vector<int64_t> draft(ids.begin() + from, ids.begin() + to);
      // A draft that ran past an eos would let the model keep tokens after the end.
      const auto end = std::find_first_of(draft.begin(), draft.end(), eos.begin(), eos.end());
      draft.erase(end, draft.end());
      return draft;  // the first match decides, even when its draft is cut to nothing
    }
  }
  return {};
}

std::vector<std::vector<int64_t>> run_prompt_lookup(const Decoder& decoder,
                                                    const GenerationSettings& settings,
                                                    const Batch& batch,
                                                    const std::vector<std::vector<int64_t>>& mask,
                                                    const GenerateOptions& opts,
                                                    PromptCache::State* prompt_cache) {
  std::vector<int64_t> seq = batch.input_ids[0];
  if (settings.max_new == 0) return {seq};
  const auto prompt = static_cast<int64_t>(seq.size());
  const int64_t vocab = decoder.config().vocab_size;
  const int64_t padding = leading_padding(mask[0]);
  const SamplingParams& sp = settings.sampling;
  std::vector<int32_t> key_mask(mask[0].begin(), mask[0].end());
  int32_t real = 0;  // real ids so far: the next id's position
  for (int64_t m : mask[0]) real += static_cast<int32_t>(m);
  std::optional<StopStrings> stops;
  if (!settings.stop_strings.empty()) stops.emplace(*settings.tokenizer, settings.stop_strings);
  std::mt19937_64 rng(opts.seed);
  SpeculationStats stats;

  // The cache holds every id but the last, whose keys the next step makes; with a prompt
  // cache, the prompt's reusable prefix is there already.
  KvCache own_cache;
  const int64_t reused =
      prompt_cache ? start_prompt_cache(*prompt_cache, decoder, seq, prompt + settings.max_new) : 0;
  if (!prompt_cache) own_cache = decoder.new_cache(1, prompt + settings.max_new);
  KvCache& cache = prompt_cache ? prompt_cache->cache : own_cache;
  StepInput first = whole_rows_step({seq}, mask);
  first.ids.erase(first.ids.begin(), first.ids.begin() + reused);
  first.positions.erase(first.positions.begin(), first.positions.begin() + reused);
  first.seq = prompt - reused;
  Tensor logits = decoder.forward(first, cache);
  std::vector<int64_t> draft;
  std::vector<float> host, scores(static_cast<size_t>(vocab));
  int64_t t = 0;  // new tokens so far
  for (;;) {
    // Row i of the step's logits picks the token after the step's input i; it is kept, and
    // the next row read, while it equals the draft's token i.
    host = logits.to_f32_vector();
    const auto rows = static_cast<int64_t>(host.size()) / vocab;
    bool stop = false;
    int64_t kept = 0;
    for (int64_t i = 0; i < rows && !stop; ++i) {
      std::copy(host.begin() + i * vocab, host.begin() + (i + 1) * vocab, scores.begin());
      settings.process(scores, seq, padding, t, 0);
      if (sp.do_sample) apply_warpers(scores, sp);
      const int64_t token = sp.do_sample ? sample(scores, rng) : argmax(scores);
      seq.push_back(token);
      ++t;
      const bool drafted = i < static_cast<int64_t>(draft.size()) && token == draft[i];
      kept += drafted;
      const bool out_of_time =
          settings.max_time &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - settings.started)
                  .count() > *settings.max_time;
      stop = std::find(settings.eos.begin(), settings.eos.end(), token) != settings.eos.end() ||
             (stops && stops->hit(seq)) || (opts.streamer && !opts.streamer({token})) ||
             t == settings.max_new || out_of_time;
      if (!drafted) break;
    }
    if (!draft.empty()) {
      ++stats.steps;
      stats.drafted += static_cast<int64_t>(draft.size());
      stats.accepted += kept;
    }
    if (stop) break;
    // The step's inputs that are now part of the sequence (the id before it and the kept draft
    // tokens) keep their keys; the rejected ones' are dropped. Again every id but the last.
    cache.length = static_cast<int64_t>(seq.size()) - 1;
    // The next step: the last id, then a draft of at most what may still be generated but one
    // (the model's own pick after the draft).
    draft = lookup_draft(seq, settings.max_matching_ngram,
                         std::min(settings.prompt_lookup, settings.max_new - t - 1), settings.eos);
    StepInput step;
    step.batch = 1;
    step.seq = 1 + static_cast<int64_t>(draft.size());
    step.ids.push_back(seq.back());
    step.ids.insert(step.ids.end(), draft.begin(), draft.end());
    key_mask.resize(seq.size() + draft.size(), 1);
    step.key_mask = key_mask;
    for (int64_t i = 0; i < step.seq; ++i) {
      step.positions.push_back(real + static_cast<int32_t>(t - 1 + i));
    }
    step.all_logits = !draft.empty();
    logits = decoder.forward(step, cache);
  }
  if (opts.speculation_stats) *opts.speculation_stats = stats;
  if (prompt_cache) {
    cache.length = static_cast<int64_t>(seq.size()) - 1;  // not the last step's rejected drafts
    finish_prompt_cache(*prompt_cache, seq);
  }
  return {seq};
}

}  // namespace anvil
