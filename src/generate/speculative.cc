#include "generate/speculative.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <optional>
#include <random>
#include <span>

#include "anvil/error.h"
#include "generate/generate.h"
#include "generate/logits_processor.h"
#include "generate/stop_strings.h"

namespace anvil {

int64_t speculative_pick(std::span<const float> scores, int64_t drafted,
                         const std::vector<float>& q, std::mt19937_64& rng,
                         std::optional<double> ensemble_weight) {
  std::vector<float> p = softmax(scores);
  double ratio = q[drafted] > 0 ? static_cast<double>(p[drafted]) / q[drafted] : 0.0;
  if (ensemble_weight) ratio = 1.0 - *ensemble_weight + *ensemble_weight * ratio;
  if (draw_uniform(rng) < ratio) return drafted;
  double total = 0;
  std::vector<double> residual(p.size());
  for (size_t v = 0; v < p.size(); ++v) {
    residual[v] = std::max(0.0, static_cast<double>(p[v]) - q[v]);
    total += residual[v];
  }
  // The ensemble's residual w [p - q]+ normalises to the same; transformers falls back to p
  // there as soon as the residual is below the smallest normal float.
  if (!(total > 0) || (ensemble_weight && total <= std::numeric_limits<float>::min())) {
    for (size_t v = 0; v < p.size(); ++v) residual[v] = p[v];
    total = 1;
  }
  const double u = draw_uniform(rng) * total;
  double cumulative = 0;
  int64_t last = drafted;
  for (size_t v = 0; v < residual.size(); ++v) {
    if (residual[v] <= 0) continue;
    last = static_cast<int64_t>(v);
    cumulative += residual[v];
    if (cumulative > u) break;
  }
  return last;
}

int64_t ensemble_pick(std::span<const float> scores, const std::vector<float>& q, double weight) {
  const std::vector<float> p = softmax(scores);
  const auto w = static_cast<float>(weight), rest = static_cast<float>(1.0 - weight);
  int64_t best = 0;
  float best_v = -1;
  for (size_t x = 0; x < p.size(); ++x) {
    const float v = w * p[x] + rest * q[x];
    if (v > best_v) best_v = v, best = static_cast<int64_t>(x);
  }
  return best;
}

std::vector<std::vector<int64_t>> run_speculative(
    const Decoder& decoder, const GenerationSettings& settings, const Batch& batch,
    const std::vector<std::vector<int64_t>>& mask, const GenerateOptions& opts,
    PromptCache::State* prompt_cache, Drafter& drafter) {
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
  // cache, the prompt's reusable prefix is there already. The rest of the prompt but its last
  // id runs first: the first step then checks a draft that follows the prompt.
  KvCache own_cache;
  const int64_t reused =
      prompt_cache ? start_prompt_cache(*prompt_cache, decoder, seq, prompt + settings.max_new) : 0;
  if (!prompt_cache) own_cache = decoder.new_cache(1, prompt + settings.max_new);
  KvCache& cache = prompt_cache ? prompt_cache->cache : own_cache;
  if (prompt - 1 > reused) {
    StepInput head = whole_rows_step({std::vector<int64_t>(seq.begin(), seq.end() - 1)},
                                     {std::vector<int64_t>(mask[0].begin(), mask[0].end() - 1)});
    head.ids.erase(head.ids.begin(), head.ids.begin() + reused);
    head.positions.erase(head.positions.begin(), head.positions.begin() + reused);
    head.seq = prompt - 1 - reused;
    decoder.forward(head, cache);
  }
  std::vector<float> host, scores(static_cast<size_t>(vocab));
  int64_t t = 0;  // new tokens so far
  for (;;) {
    // The step: the last id, then a draft of at most what may still be generated but one (the
    // model's own pick after the draft).
    const Draft draft = drafter.draft(seq, t, settings.max_new - t - 1);
    for (int64_t id : draft.tokens) {
      if (id < 0 || id >= vocab) {
        throw Error("speculative decoding: a drafted token " + std::to_string(id) +
                    " is outside the model's vocabulary of " + std::to_string(vocab));
      }
    }
    StepInput step;
    step.batch = 1;
    step.seq = 1 + static_cast<int64_t>(draft.tokens.size());
    step.ids.push_back(seq.back());
    step.ids.insert(step.ids.end(), draft.tokens.begin(), draft.tokens.end());
    key_mask.resize(seq.size() + draft.tokens.size(), 1);
    step.key_mask = key_mask;
    for (int64_t i = 0; i < step.seq; ++i) {
      step.positions.push_back(real + static_cast<int32_t>(t - 1 + i));
    }
    step.all_logits = !draft.tokens.empty();
    host = decoder.forward(step, cache).to_f32_vector();
    // Row i of the step's logits picks the token after the step's input i; it is kept, and
    // the next row read, while it equals the draft's token i.
    const auto rows = static_cast<int64_t>(host.size()) / vocab;
    bool stop = false;
    int64_t added = 0;
    for (int64_t i = 0; i < rows && !stop; ++i) {
      std::copy(host.begin() + i * vocab, host.begin() + (i + 1) * vocab, scores.begin());
      settings.process(scores, seq, padding, t, 0);
      if (sp.do_sample) apply_warpers(scores, sp);
      const bool in_draft = i < static_cast<int64_t>(draft.tokens.size());
      int64_t token;
      if (sp.do_sample && in_draft && !draft.probs.empty()) {
        token = speculative_pick(scores, draft.tokens[i], draft.probs[i], rng,
                                 settings.ensemble_weight);
      } else if (settings.ensemble_weight && in_draft && !draft.probs.empty()) {
        token = ensemble_pick(scores, draft.probs[i], *settings.ensemble_weight);
      } else {
        token = sp.do_sample ? sample(scores, rng) : argmax(scores);
      }
      seq.push_back(token);
      ++t;
      ++added;
      const bool drafted = in_draft && token == draft.tokens[i];
      const bool out_of_time =
          settings.max_time &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - settings.started)
                  .count() > *settings.max_time;
      stop = std::find(settings.eos.begin(), settings.eos.end(), token) != settings.eos.end() ||
             (stops && stops->hit(seq)) || (opts.streamer && !opts.streamer({token})) ||
             t == settings.max_new || out_of_time;
      if (!drafted) break;
    }
    // Kept drafts as transformers' num_matches counts them: the tokens the step added, less
    // the one the model picked itself (a drafted token that ends the generation is that one).
    drafter.update(static_cast<int64_t>(draft.tokens.size()), added - 1);
    if (!draft.tokens.empty()) {
      ++stats.steps;
      stats.drafted += static_cast<int64_t>(draft.tokens.size());
      stats.accepted += added - 1;
    }
    if (stop) break;
    // The step's inputs that are now part of the sequence (the id before it and the kept draft
    // tokens) keep their keys; the rejected ones' are dropped. Again every id but the last.
    cache.length = static_cast<int64_t>(seq.size()) - 1;
  }
  if (opts.speculation_stats) *opts.speculation_stats = stats;
  if (prompt_cache) {
    cache.length = static_cast<int64_t>(seq.size()) - 1;  // not the last step's rejected drafts
    finish_prompt_cache(*prompt_cache, seq);
  }
  return {seq};
}

}  // namespace anvil
