// Beam search over the decoder, step for step as transformers' _beam_search (the float32 score
// arithmetic included, down to its -1e9 markers), with the KV cache's rows gathered to follow
// the beams.
#include "generate/beam_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <span>

#include "anvil/error.h"
#include "generate/generate.h"
#include "generate/stop_strings.h"

namespace anvil {

namespace {

// transformers' marker for a score that must not win (added in float32, as torch does).
constexpr float kLoses = -1.0e9f;

struct Hypothesis {
  std::vector<int64_t> tokens;   // the new tokens
  std::vector<int64_t> sources;  // the beam row each of them extended (beam_indices)
  float score = kLoses;
  bool finished = false;  // a real finished hypothesis, not a placeholder
};

// One prompt's beams.
struct BeamGroup {
  std::vector<std::vector<int64_t>> running;  // each running beam's new tokens
  std::vector<std::vector<int64_t>> sources;  // and the beam rows they extended
  std::vector<float> running_scores;          // their summed log-probabilities, best first
  std::vector<Hypothesis> done;               // num_beams slots, best first
  bool may_improve = true;                    // is_early_stop_heuristic_unsatisfied
};

// A continuation: accumulated score and its index in the group's [num_beams x vocab] scores.
struct Candidate {
  float value;
  int64_t index;
};

// Best first; ties by lower index (torch.topk's order on the CPU for ties in practice).
bool better(const Candidate& a, const Candidate& b) {
  return a.value > b.value || (a.value == b.value && a.index < b.index);
}

// `k` entries drawn without replacement from softmax(values) (torch.multinomial with
// replacement=False), then ordered best first as transformers sorts them.
std::vector<Candidate> draw_without_replacement(const std::vector<Candidate>& pool, int64_t k,
                                                std::mt19937_64& rng) {
  float m = -std::numeric_limits<float>::infinity();
  for (const Candidate& c : pool) m = std::max(m, c.value);
  std::vector<double> weight(pool.size());
  double total = 0;
  int64_t positive = 0;
  for (size_t i = 0; i < pool.size(); ++i) {
    weight[i] = std::exp(static_cast<double>(pool[i].value) - m);
    total += weight[i];
    positive += weight[i] > 0;
  }
  if (positive < k) {
    throw Error("beam sampling: only " + std::to_string(positive) +
                " continuations have a nonzero probability, " + std::to_string(k) +
                " are needed (2 x num_beams, or (1 + eos ids) x num_beams); loosen top_k / top_p "
                "or use fewer beams");
  }
  std::vector<Candidate> drawn;
  for (int64_t n = 0; n < k; ++n) {
    if (n > 0) {  // summed again, not decremented: a drawn weight near 1 would leave rounding
      total = 0;
      for (double w : weight) total += w;
    }
    const double u = draw_uniform(rng) * total;
    double cumulative = 0;
    size_t pick = pool.size();
    for (size_t i = 0; i < pool.size(); ++i) {
      if (weight[i] <= 0) continue;
      pick = i;  // the last positive one, should rounding leave u past the end
      cumulative += weight[i];
      if (cumulative > u) break;
    }
    drawn.push_back(pool[pick]);
    weight[pick] = 0;
  }
  std::stable_sort(drawn.begin(), drawn.end(),
                   [](const Candidate& a, const Candidate& b) { return a.value > b.value; });
  return drawn;
}

// The k best continuations of one beam's row, `scores[v] + base` at index offset + v, appended
// to `out` (in no order): one pass with a heap of k, no vocabulary-sized buffer.
void append_best_of_row(std::span<const float> scores, float base, int64_t offset, int64_t k,
                        std::vector<Candidate>& out) {
  const auto worse = [](const Candidate& a, const Candidate& b) { return better(a, b); };
  const size_t start = out.size();
  for (size_t v = 0; v < scores.size(); ++v) {
    const Candidate c{scores[v] + base, offset + static_cast<int64_t>(v)};
    const auto heap_begin = out.begin() + static_cast<int64_t>(start);
    if (static_cast<int64_t>(out.size() - start) < k) {
      out.push_back(c);
      std::push_heap(out.begin() + static_cast<int64_t>(start), out.end(), worse);
    } else if (better(c, *heap_begin)) {  // the heap's front is its worst
      std::pop_heap(heap_begin, out.end(), worse);
      out.back() = c;
      std::push_heap(out.begin() + static_cast<int64_t>(start), out.end(), worse);
    }
  }
}

// The k best of `c` (better()), in order.
std::vector<Candidate> best_of(std::vector<Candidate> c, int64_t k) {
  const auto n = std::min<int64_t>(k, static_cast<int64_t>(c.size()));
  std::partial_sort(c.begin(), c.begin() + n, c.end(), better);
  c.resize(static_cast<size_t>(n));
  return c;
}

float length_normalised(float score, int64_t length, float penalty) {
  return score / static_cast<float>(std::pow(static_cast<double>(length), penalty));
}

}  // namespace

BeamSearchResult run_beam_search(const Decoder& decoder, const GenerationSettings& settings,
                                 const Batch& batch, const std::vector<std::vector<int64_t>>& mask,
                                 std::vector<Tensor>* step_scores,
                                 std::vector<Tensor>* step_logits) {
  const int64_t beams = settings.num_beams;
  const auto prompts = static_cast<int64_t>(batch.input_ids.size());
  const auto prompt = static_cast<int64_t>(batch.input_ids[0].size());
  const int64_t vocab = decoder.config().vocab_size;
  const int64_t max_new = settings.max_new;
  const bool sampling = settings.sampling.do_sample;
  const EarlyStopping early = settings.early_stopping;
  const float length_penalty = settings.length_penalty;
  // Candidates kept per step: enough that num_beams of them go on when the best all end.
  const int64_t keep = std::max<int64_t>(2, 1 + static_cast<int64_t>(settings.eos.size())) * beams;
  SamplingParams warpers = settings.sampling;
  warpers.min_tokens_to_keep = static_cast<int64_t>(settings.eos.size()) + 1;
  // The value transformers' output tensors start from: `pad or eos[0]` (a pad of 0 reads as
  // false), -1 without eos.
  const int64_t fill =
      settings.eos.empty() ? -1 : (settings.pad != 0 ? settings.pad : settings.eos[0]);

  BeamSearchResult result;
  if (max_new == 0) {
    for (int64_t b = 0; b < prompts; ++b) {
      for (int64_t i = 0; i < settings.num_return_sequences; ++i) {
        result.sequences.push_back(batch.input_ids[static_cast<size_t>(b)]);
        result.scores.push_back(0.0f);
      }
    }
    return result;
  }

  std::vector<int64_t> padding(static_cast<size_t>(prompts));
  std::vector<int32_t> past_real(static_cast<size_t>(prompts));  // real ids so far, per prompt
  for (int64_t b = 0; b < prompts; ++b) {
    padding[b] = leading_padding(mask[b]);
    past_real[b] = static_cast<int32_t>(std::count(mask[b].begin(), mask[b].end(), 1));
  }

  // The prompt once per prompt, its cache then copied to every beam.
  KvCache cache = decoder.new_cache(prompts * beams, prompt + max_new);
  // A step's float32 logits on the host: read in place on the CPU, else copied.
  std::vector<float> logits_copy;
  const float* logits = nullptr;
  const auto read_logits = [&](const Tensor& t) {
    if (t.device().type == DeviceType::cpu && t.dtype() == DType::f32 && t.is_contiguous()) {
      logits = t.data<float>();
    } else {
      logits_copy = t.to_f32_vector();
      logits = logits_copy.data();
    }
  };
  {
    KvCache prompt_cache = decoder.new_cache(prompts, prompt);
    // The logits are the decoder's scratch, which outlives the prompt's cache.
    read_logits(decoder.forward(whole_rows_step(batch.input_ids, mask), prompt_cache));
    std::vector<int64_t> source(static_cast<size_t>(prompts * beams));
    for (int64_t r = 0; r < prompts * beams; ++r) source[r] = r / beams;
    copy_cache_rows(prompt_cache, cache, source, prompt);
    cache.length = prompt;
  }

  std::vector<BeamGroup> groups(static_cast<size_t>(prompts));
  for (BeamGroup& g : groups) {
    g.running.assign(static_cast<size_t>(beams), {});
    g.sources.assign(static_cast<size_t>(beams), {});
    g.running_scores.assign(static_cast<size_t>(beams), kLoses);
    g.running_scores[0] = 0.0f;  // only the first beam's continuations count at first
    g.done.assign(static_cast<size_t>(beams), Hypothesis{});
  }
  std::mt19937_64 rng(settings.seed);
  std::optional<StopStrings> stops;
  if (!settings.stop_strings.empty()) stops.emplace(*settings.tokenizer, settings.stop_strings);
  std::optional<KvCache> scratch;  // the rows a reorder reads, copied out first
  const std::optional<int64_t> recompute_past = decoder.config().recompute_cache_past;
  std::vector<float> scores(static_cast<size_t>(vocab));
  // A group's continuations, reused from step to step (a vocabulary of them when sampling).
  std::vector<Candidate> pool;
  for (int64_t t = 0;; ++t) {
    // MaxTimeCriteria: every continuation of this step ends once the time is spent.
    const bool out_of_time =
        settings.max_time &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - settings.started).count() >
            *settings.max_time;
    bool all_end = true;  // every kept continuation hit a stopping criterion
    std::vector<int64_t> source(static_cast<size_t>(prompts * beams));
    std::vector<int64_t> next_ids(static_cast<size_t>(prompts * beams));
    // This step's rows for the caller (every beam's, the first step's copies of its prompt's).
    std::vector<float> kept_scores(step_scores ? static_cast<size_t>(prompts * beams * vocab) : 0);
    std::vector<float> kept_logits(step_logits ? static_cast<size_t>(prompts * beams * vocab) : 0);
    for (int64_t b = 0; b < prompts; ++b) {
      BeamGroup& g = groups[b];
      pool.clear();
      for (int64_t j = 0; j < beams; ++j) {
        // The first step's logits are the prompt's, the same for every beam.
        const int64_t row = t == 0 ? b : b * beams + j;
        std::copy(logits + row * vocab, logits + (row + 1) * vocab, scores.begin());
        const int64_t kept_at = (b * beams + j) * vocab;
        if (step_logits) std::copy(scores.begin(), scores.end(), kept_logits.begin() + kept_at);
        log_softmax(scores);
        std::vector<int64_t> ids = batch.input_ids[b];
        ids.insert(ids.end(), g.running[j].begin(), g.running[j].end());
        settings.process(scores, ids, padding[b], t, b);
        if (sampling) apply_warpers(scores, warpers);
        if (settings.renormalize_logits) log_softmax(scores);  // LogitNormalization, last
        if (step_scores) std::copy(scores.begin(), scores.end(), kept_scores.begin() + kept_at);
        const float base = g.running_scores[j];
        if (sampling) {
          for (int64_t v = 0; v < vocab; ++v) {
            const float value = scores[v] + base;
            if (value != -std::numeric_limits<float>::infinity())
              pool.push_back({value, j * vocab + v});
          }
        } else {  // only a row's own best `keep` can be among the group's best `keep`
          append_best_of_row(scores, base, j * vocab, keep, pool);
        }
      }
      const std::vector<Candidate> top =
          sampling ? draw_without_replacement(pool, keep, rng) : best_of(std::move(pool), keep);
      // Which continuations end here; the best num_beams that do not run on.
      std::vector<bool> ends(top.size());
      std::vector<Candidate> running_next(top.size());
      for (size_t i = 0; i < top.size(); ++i) {
        const int64_t token = top[i].index % vocab;
        ends[i] =
            std::find(settings.eos.begin(), settings.eos.end(), token) != settings.eos.end() ||
            t + 1 >= max_new || out_of_time;
        if (stops && !ends[i]) {  // StopStringCriteria on the candidate's whole row
          std::vector<int64_t> row = batch.input_ids[b];
          const auto& tokens = g.running[top[i].index / vocab];
          row.insert(row.end(), tokens.begin(), tokens.end());
          row.push_back(token);
          ends[i] = stops->hit(row);
        }
        all_end = all_end && ends[i];
        running_next[i] = {ends[i] ? top[i].value + kLoses : top[i].value, static_cast<int64_t>(i)};
      }
      running_next = best_of(std::move(running_next), beams);
      // Finished hypotheses: only the best num_beams of this step's may join, length-penalised,
      // and none once the group is full with early stopping or cannot improve.
      const bool full =
          std::all_of(g.done.begin(), g.done.end(), [](const Hypothesis& h) { return h.finished; });
      std::vector<Hypothesis> merged = g.done;
      for (size_t i = 0; i < top.size(); ++i) {
        const bool just_finished = ends[i] && static_cast<int64_t>(i) < beams;
        Hypothesis h;
        h.score = length_normalised(top[i].value, t + 1, length_penalty);
        if (full && early == EarlyStopping::when_beams_finished) h.score += kLoses;
        if (!g.may_improve) h.score += kLoses;
        if (!just_finished) h.score += kLoses;
        h.finished = just_finished;
        h.tokens = g.running[top[i].index / vocab];
        h.tokens.push_back(top[i].index % vocab);
        h.sources = g.sources[top[i].index / vocab];
        h.sources.push_back(b * beams + top[i].index / vocab);
        merged.push_back(std::move(h));
      }
      std::vector<Candidate> order(merged.size());
      for (size_t i = 0; i < merged.size(); ++i) {
        order[i] = {merged[i].score, static_cast<int64_t>(i)};
      }
      order = best_of(std::move(order), beams);
      for (int64_t i = 0; i < beams; ++i) g.done[i] = merged[order[i].index];
      // The running beams for the next step, and the cache rows they continue.
      std::vector<std::vector<int64_t>> running(static_cast<size_t>(beams));
      std::vector<std::vector<int64_t>> sources(static_cast<size_t>(beams));
      for (int64_t i = 0; i < beams; ++i) {
        const Candidate& c = top[running_next[i].index];
        const int64_t from = c.index / vocab;
        running[i] = g.running[from];
        running[i].push_back(c.index % vocab);
        sources[i] = g.sources[from];
        sources[i].push_back(b * beams + from);
        g.running_scores[i] = running_next[i].value;
        source[b * beams + i] = b * beams + from;
        next_ids[b * beams + i] = c.index % vocab;
      }
      g.running = std::move(running);
      g.sources = std::move(sources);
    }
    if (step_scores)
      step_scores->push_back(Tensor::from_f32(kept_scores, {prompts * beams, vocab}));
    if (step_logits)
      step_logits->push_back(Tensor::from_f32(kept_logits, {prompts * beams, vocab}));
    // transformers' stopping rule for the whole batch: a group may still improve, early stopping
    // does not hold them all, and some continuation could go on.
    const int64_t new_length = t + 1;
    bool any_may_improve = false, all_full = true;
    for (BeamGroup& g : groups) {
      const int64_t hypothetical =
          early == EarlyStopping::never && length_penalty > 0 ? max_new : new_length;
      const float best_possible =
          length_normalised(g.running_scores[0], hypothetical, length_penalty);
      float worst = std::numeric_limits<float>::infinity();
      for (const Hypothesis& h : g.done) worst = std::min(worst, h.score);
      bool beats_one = false;
      for (const Hypothesis& h : g.done) beats_one |= best_possible > (h.finished ? worst : kLoses);
      g.may_improve = g.may_improve && beats_one;
      any_may_improve |= g.may_improve;
      for (const Hypothesis& h : g.done) all_full &= h.finished;
    }
    const bool stop =
        !any_may_improve || (all_full && early == EarlyStopping::when_beams_finished) || all_end;
    if (stop) break;

    // Gather the cache rows the running beams continue: rows read by another row first go to
    // the scratch cache, as the copies overwrite one another.
    std::vector<int64_t> to_scratch(source.size(), -1), from_scratch(source.size(), -1);
    for (size_t r = 0; r < source.size(); ++r) {
      if (source[r] != static_cast<int64_t>(r)) {
        to_scratch[source[r]] = source[r];
        from_scratch[r] = source[r];
      }
    }
    if (std::any_of(from_scratch.begin(), from_scratch.end(), [](int64_t s) { return s >= 0; })) {
      if (!scratch)
        scratch = KvCache::allocate(decoder.config(), cache.batch, cache.capacity,
                                    decoder.kv_cache_dtype(), decoder.device());
      copy_cache_rows(cache, *scratch, to_scratch, cache.length);
      copy_cache_rows(*scratch, cache, from_scratch, cache.length);
    }

    StepInput step;
    step.batch = prompts * beams;
    if (recompute_past && cache.length == *recompute_past && prompt <= *recompute_past) {
      // Phi-3's longrope: past the original context the whole sequences run again.
      cache.length = 0;
      std::vector<std::vector<int64_t>> rows, row_masks;
      for (int64_t r = 0; r < prompts * beams; ++r) {
        const int64_t b = r / beams;
        rows.push_back(batch.input_ids[b]);
        const auto& tokens = groups[b].running[r % beams];
        rows.back().insert(rows.back().end(), tokens.begin(), tokens.end());
        row_masks.push_back(mask[b]);
        row_masks.back().resize(static_cast<size_t>(prompt + new_length), 1);
      }
      step = whole_rows_step(rows, row_masks);
    } else {
      step.seq = 1;
      step.ids = next_ids;
      for (int64_t r = 0; r < prompts * beams; ++r) {
        const int64_t b = r / beams;
        step.positions.push_back(past_real[b] + static_cast<int32_t>(t));
        step.key_mask.insert(step.key_mask.end(), mask[b].begin(), mask[b].end());
        step.key_mask.insert(step.key_mask.end(), static_cast<size_t>(new_length), 1);
      }
    }
    read_logits(decoder.forward(step, cache));
  }

  // The best num_return_sequences of each group, padded to the longest of them all.
  size_t longest = 0;
  for (const BeamGroup& g : groups) {
    for (int64_t i = 0; i < settings.num_return_sequences; ++i) {
      longest = std::max(longest, g.done[i].tokens.size());
    }
  }
  for (int64_t b = 0; b < prompts; ++b) {
    for (int64_t i = 0; i < settings.num_return_sequences; ++i) {
      const Hypothesis& h = groups[b].done[i];
      std::vector<int64_t> row = batch.input_ids[b];
      row.insert(row.end(), h.tokens.begin(), h.tokens.end());
      row.resize(static_cast<size_t>(prompt) + longest, fill);
      result.sequences.push_back(std::move(row));
      result.scores.push_back(h.score);
      std::vector<int64_t> sources = h.sources;
      sources.resize(longest, -1);
      result.beam_indices.push_back(std::move(sources));
    }
  }
  return result;
}

}  // namespace anvil
