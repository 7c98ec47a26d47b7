// generate(): greedy or sampled decoding over a batch, stopping rows on any eos id.
#include "generate/generate.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <span>
#include <unordered_set>
#include <utility>

#include "anvil/error.h"
#include "generate/assistant_drafter.h"
#include "generate/beam_search.h"
#include "generate/generation_settings.h"
#include "generate/logits_processor.h"
#include "generate/prompt_cache.h"
#include "generate/prompt_lookup.h"
#include "generate/shared_prefill.h"
#include "generate/speculative.h"
#include "generate/step_chain.h"
#include "generate/stop_strings.h"
#include "generate/text_bridge_drafter.h"
#include "ops/ops.h"

namespace anvil {

std::vector<std::vector<int64_t>> checked_mask(const Batch& batch) {
  if (batch.input_ids.empty()) throw Error("input_ids: the batch is empty");
  const size_t len = batch.input_ids[0].size();
  if (len == 0) throw Error("input_ids: a row is empty");
  for (size_t r = 0; r < batch.input_ids.size(); ++r) {
    if (batch.input_ids[r].size() != len) {
      throw Error("input_ids: row " + std::to_string(r) + " has " +
                  std::to_string(batch.input_ids[r].size()) + " ids, row 0 has " +
                  std::to_string(len) + " (pad the rows to one length)");
    }
  }
  if (batch.attention_mask.empty()) {
    return std::vector<std::vector<int64_t>>(batch.input_ids.size(), std::vector<int64_t>(len, 1));
  }
  if (batch.attention_mask.size() != batch.input_ids.size()) {
    throw Error("attention_mask: " + std::to_string(batch.attention_mask.size()) + " rows for " +
                std::to_string(batch.input_ids.size()) + " rows of input_ids");
  }
  for (size_t r = 0; r < batch.attention_mask.size(); ++r) {
    const auto& row = batch.attention_mask[r];
    if (row.size() != len) {
      throw Error("attention_mask: row " + std::to_string(r) + " has " +
                  std::to_string(row.size()) + " values, input_ids rows have " +
                  std::to_string(len));
    }
    for (int64_t v : row) {
      if (v != 0 && v != 1) {
        throw Error("attention_mask: values must be 0 or 1, got " + std::to_string(v));
      }
    }
  }
  return batch.attention_mask;
}

std::vector<int32_t> positions_from_mask(const std::vector<int64_t>& mask_row) {
  std::vector<int32_t> pos(mask_row.size());
  int32_t seen = 0;
  for (size_t i = 0; i < mask_row.size(); ++i) {
    seen += static_cast<int32_t>(mask_row[i]);
    pos[i] = mask_row[i] ? seen - 1 : 1;
  }
  return pos;
}

StepInput whole_rows_step(const std::vector<std::vector<int64_t>>& ids,
                          const std::vector<std::vector<int64_t>>& mask) {
  StepInput step;
  step.batch = static_cast<int64_t>(ids.size());
  step.seq = static_cast<int64_t>(ids[0].size());
  for (size_t r = 0; r < ids.size(); ++r) {
    step.ids.insert(step.ids.end(), ids[r].begin(), ids[r].end());
    const auto pos = positions_from_mask(mask[r]);
    step.positions.insert(step.positions.end(), pos.begin(), pos.end());
    step.key_mask.insert(step.key_mask.end(), mask[r].begin(), mask[r].end());
  }
  return step;
}

namespace {

// The largest top-k + 1 of this many candidates a device's top_k kernel is asked for.
constexpr int64_t kMaxCandidates = 128;

struct Candidates {
  std::vector<float> values;     // [rows, K], largest first
  std::vector<int64_t> indices;  // [rows, K]
};

// Whether sampling with top-k reads each row's candidates (ops::top_k on the logits' device)
// instead of the whole rows: wherever a top_k kernel and a top-k it can return, unless
// ANVIL_SAMPLE_ON_HOST is set (whole rows, for measuring one against the other). The CPU too:
// its logits are host memory, but the warpers over a whole 152k row (a copy, the temperature's
// pass, a heap, the live tokens' scan) cost more than its one-pass top-k.
bool reads_candidates(const Tensor& logits, int64_t top_k) {
  const Device d = logits.device();
  if (std::getenv("ANVIL_SAMPLE_ON_HOST") != nullptr) return false;
  return top_k >= 1 && top_k + 1 <= kMaxCandidates && top_k + 1 <= logits.size(-1) &&
         logits.dtype() == DType::f32 && logits.is_contiguous() &&
         supports(ops::kTopK, d.type, DType::f32, DType::f32);
}

// Whether a step's repetition penalty edits the logits in place on their device
// (ops::repetition_penalty), so that the pick stays there too (the argmax, or top-k
// candidates): wherever the kernel is, unless ANVIL_SAMPLE_ON_HOST is set. Otherwise the whole
// row comes to the host, which applies it (transformers' default configs for Qwen2.5's instruct
// models set a penalty).
bool penalises_in_place(const Tensor& logits, float penalty) {
  const Device d = logits.device();
  return penalty != 1.0f && logits.dtype() == DType::f32 && logits.is_contiguous() &&
         std::getenv("ANVIL_SAMPLE_ON_HOST") == nullptr &&
         supports(ops::kRepetitionPenalty, d.type, DType::f32, DType::f32);
}

// Each row's distinct token ids so far (prompt and continuation, in first-seen order), kept
// up to date step by step, as the [rows, M] list (padded with -1) ops::repetition_penalty takes.
class ContextIds {
 public:
  /// `padding`: each row's left padding, which the penalty skips.
  ContextIds(const std::vector<std::vector<int64_t>>& sequences,
             const std::vector<int64_t>& padding)
      : seen_(sequences.size()), ids_(sequences.size()) {
    for (size_t r = 0; r < sequences.size(); ++r) {
      for (size_t i = static_cast<size_t>(padding[r]); i < sequences[r].size(); ++i) {
        add(r, sequences[r][i]);
      }
    }
  }
  void add(size_t row, int64_t id) {
    if (seen_[row].insert(id).second) ids_[row].push_back(id);
  }
  Tensor on(Device device) const {
    size_t m = 0;
    for (const auto& row : ids_) m = std::max(m, row.size());
    std::vector<int64_t> flat(ids_.size() * m, -1);
    for (size_t r = 0; r < ids_.size(); ++r) {
      std::copy(ids_[r].begin(), ids_[r].end(), flat.begin() + static_cast<int64_t>(r * m));
    }
    return Tensor::from_i64(flat, {static_cast<int64_t>(ids_.size()), static_cast<int64_t>(m)})
        .to(device);
  }

 private:
  std::vector<std::unordered_set<int64_t>> seen_;
  std::vector<std::vector<int64_t>> ids_;
};

// How many candidates sampling with top-k reads from a device: top_k + 1 would do but for ties
// at the cut, which top-k keeps and bf16 logits often have; each such step read the whole row
// (Qwen2.5-0.5B-shaped bf16 on the H200 at top-k 20: 1.26-1.32 ms a token with top_k + 1
// candidates, 0.74 with these and no row read whole in 512 steps). So the read goes that far
// past the cut again, plus 16.
int64_t candidate_count(int64_t top_k, int64_t vocab) {
  return std::min({kMaxCandidates, vocab, 2 * top_k + 16});
}

// Whether the warpers and the draw over the candidates run on the logits' device
// (ops::sample_candidates), so that a sampled step returns one id a row instead of its
// candidates: on every device but the CPU (whose candidates are host memory already) with the
// kernel, unless ANVIL_SAMPLE_ON_HOST (whole rows) or ANVIL_DRAW_ON_HOST (the candidates to the
// host, which draws; for measuring one against the other) is set.
bool samples_on_device(const Tensor& logits) {
  const Device d = logits.device();
  return d.type != DeviceType::cpu && std::getenv("ANVIL_SAMPLE_ON_HOST") == nullptr &&
         std::getenv("ANVIL_DRAW_ON_HOST") == nullptr &&
         supports(ops::kSampleCandidates, d.type, DType::f32, DType::f32);
}

// Each row's k largest logits (values, then indices) on the logits' device.
std::pair<Tensor, Tensor> candidates_on_device(const Tensor& logits, int64_t k) {
  const int64_t vocab = logits.size(-1), rows = logits.numel() / vocab;
  Tensor values = Tensor::empty({rows, k}, DType::f32, logits.device());
  Tensor indices = Tensor::empty({rows, k}, DType::i64, logits.device());
  ops::top_k(logits.view({rows, vocab}), values, indices);
  return {values, indices};
}

// Each row's token drawn on the device from its k largest logits with the row's uniform draw,
// or -1 where those cannot decide it.
std::vector<int64_t> device_samples(const Tensor& logits, int64_t k, const SamplingParams& sp,
                                    const std::vector<double>& uniforms) {
  const auto [values, indices] = candidates_on_device(logits, k);
  Tensor host_u = Tensor::empty({static_cast<int64_t>(uniforms.size())}, DType::f64);
  std::copy(uniforms.begin(), uniforms.end(), host_u.data<double>());
  Tensor picks = Tensor::empty({host_u.size(0)}, DType::i64, logits.device());
  ops::sample_candidates(values, indices, host_u.to(logits.device()), sp.temperature, sp.top_k,
                         sp.top_p, sp.min_p, picks);
  return picks.to_i64_vector();
}

// Each row's k largest logits and their indices, on the host.
Candidates top_candidates(const Tensor& logits, int64_t k) {
  const auto [values, indices] = candidates_on_device(logits, k);
  return {values.to_f32_vector(), indices.to_i64_vector()};
}

}  // namespace

std::vector<int64_t> greedy_tokens(const Tensor& logits) {
  const int64_t vocab = logits.size(-1), rows = logits.numel() / vocab;
  const Tensor flat = logits.view({rows, vocab});
  const Device d = logits.device();
  if (d.type != DeviceType::cpu && supports(ops::kArgmax, d.type, flat.dtype(), flat.dtype())) {
    Tensor ids = Tensor::empty({rows}, DType::i64, d);
    ops::argmax(flat, ids);
    return ids.to_i64_vector();
  }
  // Host float32 logits are read in place (a decode step's row is 600 KB for a 150k vocabulary).
  std::vector<float> copy;
  const float* host = nullptr;
  if (d.type == DeviceType::cpu && flat.dtype() == DType::f32 && flat.is_contiguous()) {
    host = flat.data<float>();
  } else {
    copy = flat.to_f32_vector();
    host = copy.data();
  }
  std::vector<int64_t> out(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    out[r] = argmax(std::span<const float>(host + r * vocab, static_cast<size_t>(vocab)));
  }
  return out;
}

std::vector<std::vector<int64_t>> run_generate(const Decoder& decoder, const GenerationConfig& gen,
                                               const Batch& batch, const GenerateOptions& opts,
                                               std::atomic<int64_t>* carried_assistant_tokens) {
  std::vector<std::vector<int64_t>> mask = checked_mask(batch);
  const auto prompt = static_cast<int64_t>(batch.input_ids[0].size());
  const GenerationSettings settings =
      resolve_settings(gen, opts, prompt, decoder.config().max_position_embeddings);
  PromptCache::State* reuse_from = opts.prompt_cache ? &opts.prompt_cache->state() : nullptr;
  if (reuse_from) {
    if (batch.input_ids.size() != 1) {
      throw Error("prompt_cache: takes one prompt a call, got " +
                  std::to_string(batch.input_ids.size()));
    }
    if (std::find(mask[0].begin(), mask[0].end(), 0) != mask[0].end()) {
      throw Error("prompt_cache: takes a prompt without padding (its attention mask has zeros)");
    }
    if (settings.num_beams > 1 || settings.num_return_sequences > 1) {
      throw Error("prompt_cache: not with beam search or num_return_sequences > 1 (num_beams " +
                  std::to_string(settings.num_beams) + ", num_return_sequences " +
                  std::to_string(settings.num_return_sequences) + ")");
    }
  }
  // Steps' scores or logits kept for the caller (output_scores / output_logits): every step
  // takes its rows to the host and edits them there.
  const bool keeps_scores = opts.scores || opts.logits;
  const int64_t early_exit = settings.assistant_early_exit;
  if (settings.prompt_lookup > 0 || opts.assistant_model || early_exit > 0) {
    // As transformers' assisted decoding: one sequence, its steps' lengths its own.
    const std::string name = early_exit > 0         ? "assistant_early_exit"
                             : opts.assistant_model ? "assistant_model"
                                                    : "prompt_lookup_num_tokens";
    const auto refuse = [&](const std::string& what) { throw Error(name + ": not with " + what); };
    if (early_exit > 0 && opts.assistant_model) {
      refuse("assistant_model (the model's own first layers are the assistant)");
    }
    if ((opts.assistant_model || early_exit > 0) && settings.prompt_lookup > 0) {
      refuse("prompt lookup");
    }
    if (early_exit > 0 && opts.assistant_tokenizer) refuse("assistant_tokenizer");
    if (batch.input_ids.size() != 1) {
      refuse("a batch of " + std::to_string(batch.input_ids.size()) + " prompts (one a call)");
    }
    if (settings.num_beams > 1) refuse("beam search");
    if (settings.num_return_sequences > 1) refuse("num_return_sequences > 1");
    if (keeps_scores || opts.sequences_scores || opts.beam_indices) {
      refuse("per-step scores or logits");
    }
    if (decoder.config().recompute_cache_past) {
      refuse("a model that recomputes its cache past a length (Phi-3's longrope)");
    }
    if (!opts.assistant_model && early_exit == 0) {
      LookupDrafter lookup(settings, leading_padding(mask[0]), decoder.config().vocab_size);
      return run_speculative(decoder, settings, batch, mask, opts, reuse_from, lookup);
    }
    const Decoder& assistant =
        early_exit > 0 ? decoder.first_layers(early_exit) : opts.assistant_model->decoder();
    if (assistant.config().recompute_cache_past) refuse("an assistant that recomputes its cache");
    // The heuristic schedule starts where the assistant's last such call left it, unless the
    // call sets num_assistant_tokens (transformers keeps that count in the assistant's config).
    const bool carries = settings.assistant_schedule == AssistantTokensSchedule::heuristic;
    const int64_t carried = carries && carried_assistant_tokens && !opts.num_assistant_tokens
                                ? carried_assistant_tokens->load()
                                : 0;
    const int64_t first_tokens = carried > 0 ? carried : settings.assistant_tokens;
    if (opts.assistant_tokenizer) {  // another tokenizer: drafts pass through text
      if (!opts.tokenizer) {
        throw Error(
            "assistant_tokenizer: needs tokenizer, the model's own (transformers' "
            "generate(tokenizer=, assistant_tokenizer=))");
      }
      TextBridgeDrafter drafter(*opts.tokenizer, *opts.assistant_tokenizer, assistant, settings,
                                opts.assistant_model->generation_config().eos_token_ids,
                                leading_padding(mask[0]), batch.input_ids[0], opts.seed,
                                first_tokens, decoder.config().vocab_size);
      auto rows = run_speculative(decoder, settings, batch, mask, opts, reuse_from, drafter);
      if (carries && carried_assistant_tokens) carried_assistant_tokens->store(drafter.tokens());
      if (opts.speculation_stats) {
        opts.speculation_stats->assistant_confidence_threshold =
            settings.assistant_confidence_threshold;
      }
      return rows;
    }
    if (settings.ensemble_weight && assistant.config().vocab_size != decoder.config().vocab_size) {
      refuse("assistant_ensemble_weight and an assistant of another vocabulary size (" +
             std::to_string(assistant.config().vocab_size) + " against " +
             std::to_string(decoder.config().vocab_size) +
             "): the ensemble mixes the two models' probabilities token by token");
    }
    if (settings.sampling.do_sample &&
        assistant.config().vocab_size != decoder.config().vocab_size) {
      refuse("sampling from an assistant of another vocabulary size (" +
             std::to_string(assistant.config().vocab_size) + " against " +
             std::to_string(decoder.config().vocab_size) +
             "): speculative sampling compares "
             "the two models' probabilities token by token");
    }
    AssistantDrafter drafter(assistant, settings, mask[0], prompt + settings.max_new,
                             decoder.config().vocab_size, opts.seed, first_tokens);
    auto rows = run_speculative(decoder, settings, batch, mask, opts, reuse_from, drafter);
    if (carries && carried_assistant_tokens) carried_assistant_tokens->store(drafter.tokens());
    if (opts.speculation_stats) {
      opts.speculation_stats->assistant_confidence_threshold = drafter.confidence_threshold();
    }
    return rows;
  }
  if (settings.num_beams > 1) {
    BeamSearchResult beams =
        run_beam_search(decoder, settings, batch, mask, opts.scores, opts.logits);
    if (opts.sequences_scores) *opts.sequences_scores = std::move(beams.scores);
    if (opts.beam_indices) *opts.beam_indices = std::move(beams.beam_indices);
    return std::move(beams.sequences);
  }
  if (opts.sequences_scores || opts.beam_indices) {
    throw Error("sequences_scores / beam_indices: beam search only (num_beams is 1)");
  }
  if (settings.num_return_sequences > 1) {
    // Independent samples: each prompt repeated, as transformers' _expand_inputs_for_generation.
    Batch expanded;
    for (size_t r = 0; r < batch.input_ids.size(); ++r) {
      for (int64_t i = 0; i < settings.num_return_sequences; ++i) {
        expanded.input_ids.push_back(batch.input_ids[r]);
        expanded.attention_mask.push_back(mask[r]);
      }
    }
    GenerateOptions one = opts;
    one.num_return_sequences = 1;
    if (opts.prefix_allowed_tokens) {  // its batch id stays the prompt's, as transformers'
      const int64_t n = settings.num_return_sequences;
      one.prefix_allowed_tokens = [f = opts.prefix_allowed_tokens, n](
                                      int64_t row, const std::vector<int64_t>& ids) {
        return f(row / n, ids);
      };
    }
    return run_generate(decoder, gen, expanded, one);
  }
  const SamplingParams& sp = settings.sampling;
  const auto rows = static_cast<int64_t>(batch.input_ids.size());
  const int64_t max_new = settings.max_new, min_new = settings.min_new;
  const bool host_edits = settings.host_edits() || keeps_scores;
  const std::vector<int64_t>& eos = settings.eos;
  const int64_t pad = settings.pad;
  const int64_t vocab = decoder.config().vocab_size;
  std::vector<int64_t> padding(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) padding[r] = leading_padding(mask[r]);
  std::optional<StopStrings> stops;
  if (!settings.stop_strings.empty()) stops.emplace(*settings.tokenizer, settings.stop_strings);

  std::vector<std::vector<int64_t>> sequences = batch.input_ids;
  if (max_new == 0) return sequences;

  // With a prompt cache, its keys and values of the prompt's reusable prefix stay and only the
  // rest of the prompt runs (its key mask still covers the whole prompt).
  KvCache own_cache;
  const int64_t reused =
      reuse_from ? start_prompt_cache(*reuse_from, decoder, batch.input_ids[0], prompt + max_new)
                 : 0;
  if (!reuse_from) own_cache = decoder.new_cache(rows, prompt + max_new);
  KvCache& cache = reuse_from ? reuse_from->cache : own_cache;
  StepInput step;
  step.batch = rows;
  // A step over whole rows (the prompt, or every id so far), positions from the mask.
  const auto whole_rows = [&](const std::vector<std::vector<int64_t>>& ids) {
    step = whole_rows_step(ids, mask);
  };
  whole_rows(batch.input_ids);
  if (reused > 0) {
    step.ids.erase(step.ids.begin(), step.ids.begin() + reused);
    step.positions.erase(step.positions.begin(), step.positions.begin() + reused);
    step.seq = prompt - reused;
  }
  // Repeated rows (num_return_sequences' copies of a prompt) take one prompt step between them
  // (shared_prefill.h); ANVIL_NO_SHARED_PREFILL=1 runs every copy, for measuring one against the
  // other.
  const DistinctRows distinct = distinct_rows(batch.input_ids, mask);
  const bool shared_prefill = static_cast<int64_t>(distinct.rows.size()) < rows &&
                              std::getenv("ANVIL_NO_SHARED_PREFILL") == nullptr;

  std::mt19937_64 rng(opts.seed);
  std::vector<bool> finished(rows, false);
  std::vector<int64_t> chosen(rows);
  // ANVIL_GENERATE_TRACE=1: where a decode step's time goes on the host (queueing the step,
  // picking the tokens, the rest of the loop), printed at the end; as ANVIL_BENCH_TRACE.
  const bool trace = std::getenv("ANVIL_GENERATE_TRACE") != nullptr;
  using Clock = std::chrono::steady_clock;
  double t_forward = 0, t_pick = 0, t_rest = 0;
  int64_t traced = 0, from_candidates = 0, undecided = 0;  // rows sampled from candidates
  const auto now = [trace] { return trace ? Clock::now() : Clock::time_point(); };
  // The next step: one new token per row, its position the count of real tokens so far.
  const auto advance = [&] {
    step.seq = 1;
    step.positions.assign(rows, 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t real = 0;
      for (int64_t m : mask[r]) real += m;
      step.positions[r] = static_cast<int32_t>(real);
      mask[r].push_back(1);
    }
    step.key_mask.clear();
    for (int64_t r = 0; r < rows; ++r) {
      step.key_mask.insert(step.key_mask.end(), mask[r].begin(), mask[r].end());
    }
  };
  // Plain greedy one-token steps, and plain sampled ones whose candidates and draw the device
  // takes (decided after the first step, from its logits), go through a chain (step_chain.h)
  // where the device runs behind the host: the next step is queued, taking its ids from the
  // device's picks, before this step's tokens are read. Finished rows then get the pick instead
  // of the pad token as their next input, which changes nothing: rows do not see each other, and
  // a finished row's outputs are replaced by pad. A sampled step whose candidates leave a row
  // undecided is taken again: the step queued ahead of it (on a stand-in id) leaves the cache,
  // and the step runs once more for its whole rows, with the same draws.
  // Phi-3 with longrope: the step that takes the sequence past its original context runs the
  // whole sequence again on an emptied cache (recompute_cache_past); no step is queued ahead of
  // it, so a generation that reaches it runs without the chain.
  const std::optional<int64_t> recompute_past = decoder.config().recompute_cache_past;
  const bool recomputes =
      recompute_past && prompt <= *recompute_past && prompt + max_new > *recompute_past + 1;
  const bool chains = std::getenv("ANVIL_NO_GREEDY_CHAIN") == nullptr && !recomputes;
  const bool chain_greedy = !sp.do_sample && sp.repetition_penalty == 1.0f && !host_edits &&
                            StepChain::available(decoder, rows, false) && chains;
  bool chain_sample = false;
  std::optional<StepChain> chain;
  std::vector<std::vector<double>> carried;  // draws of steps dropped ahead of one taken again
  // ANVIL_CHAIN_RETAKE_EVERY=N (for tests): every N-th chained sampled step is taken again from
  // its whole rows, as one with an undecided row is, so that path runs without waiting for ties.
  const char* retake_env = std::getenv("ANVIL_CHAIN_RETAKE_EVERY");
  const int64_t retake_every = retake_env ? std::max<int64_t>(0, std::atoll(retake_env)) : 0;
  // A chained sampled step's draws: those of a dropped step it replaces, else fresh ones.
  const auto chain_draws = [&] {
    std::vector<double> d;
    if (!chain_sample) return d;
    if (!carried.empty()) {
      d = std::move(carried.front());
      carried.erase(carried.begin());
      return d;
    }
    d.resize(static_cast<size_t>(rows));
    for (double& u : d) u = draw_uniform(rng);
    return d;
  };
  std::optional<ContextIds> context;  // with a penalty applied on the device
  auto t_end = now();
  for (int64_t t = 0; t < max_new; ++t) {
    const auto t_begin = now();
    if (t > 0) t_rest += std::chrono::duration<double>(t_begin - t_end).count();
    // Plain greedy steps pick on the device; plain top-k sampling reads each row's largest
    // logits (candidate_count) from the device, and so do steps whose repetition penalty the
    // device applies; anything else that edits the scores runs on the whole row on the host.
    const bool plain = sp.repetition_penalty == 1.0f && t >= min_new && !host_edits;
    const bool plain_greedy = plain && !sp.do_sample;
    const bool chained =
        t > 0 && ((chain_greedy && plain_greedy) || (chain_sample && plain && sp.do_sample));
    bool advanced = false;  // the next step's positions and mask are already set
    std::vector<int64_t> greedy;
    std::vector<float> logits;
    Candidates candidates;
    std::vector<int64_t> device_picks;  // sampled on the device: a token, or -1 (undecided)
    std::vector<double> uniforms;       // their draws, which an undecided row's whole row uses
    Tensor step_logits;
    StepInput current;  // a chained step's inputs, should it be taken again
    if (recomputes && t > 0 && cache.length == *recompute_past) {
      whole_rows(sequences);
      cache.length = 0;
    }
    if (chained) {
      if (!chain) {
        std::optional<ChainSampling> sampling;
        if (chain_sample) sampling = ChainSampling{sp, candidate_count(sp.top_k, vocab)};
        chain.emplace(decoder, rows, sampling);
      }
      if (chain_sample) current = step;
      if (chain->pending() == 0) chain->queue(step, cache, false, chain_draws());
      if (t + 1 < max_new) {
        advance();
        advanced = true;
        chain->queue(step, cache, true, chain_draws());
      }
    } else if (t == 0 && shared_prefill) {
      step_logits = prefill_distinct(decoder, step, distinct, cache);
    } else {
      step_logits = decoder.forward(step, cache);
    }
    // Sampling from candidates where the device returns them; the penalty on the device where
    // the pick then stays there too.
    const bool candidates_ok = !chained && sp.do_sample && reads_candidates(step_logits, sp.top_k);
    const bool penalised = !chained && t >= min_new && !host_edits &&
                           penalises_in_place(step_logits, sp.repetition_penalty) &&
                           (!sp.do_sample || candidates_ok);
    if (penalised) {
      if (!context) context.emplace(sequences, padding);
      ops::repetition_penalty(step_logits.view({rows, vocab}), context->on(step_logits.device()),
                              sp.repetition_penalty);
    }
    if (t == 0) {
      chain_sample = sp.do_sample && sp.repetition_penalty == 1.0f && !host_edits && chains &&
                     reads_candidates(step_logits, sp.top_k) && samples_on_device(step_logits) &&
                     StepChain::available(decoder, rows, true);
    }
    const auto t_queued = now();
    if (chained) {
      StepChain::Taken taken = chain->take();
      const bool all_decided =
          std::all_of(taken.decided.begin(), taken.decided.end(), [](int64_t d) { return d != 0; });
      const bool forced = chain_sample && retake_every > 0 && t % retake_every == 0;
      if (all_decided && !forced) {
        greedy = std::move(taken.picks);
      } else {
        carried = chain->drop(cache);
        --cache.length;  // this step too: it runs again for its whole rows
        step_logits = decoder.forward(current, cache);
        uniforms = std::move(taken.draws);
        device_picks = std::move(taken.picks);
        for (size_t r = 0; r < device_picks.size(); ++r) {
          if (forced || taken.decided[r] == 0) device_picks[r] = -1;
        }
      }
      if (chain_sample && all_decided && !forced) from_candidates += rows;  // else counted below
    } else if (plain_greedy || (penalised && !sp.do_sample)) {
      greedy = greedy_tokens(step_logits);
    } else if ((plain || penalised) && candidates_ok && samples_on_device(step_logits)) {
      // One draw a row, in row order, as the host's path takes them.
      uniforms.resize(static_cast<size_t>(rows));
      for (double& u : uniforms) u = draw_uniform(rng);
      device_picks = device_samples(step_logits, candidate_count(sp.top_k, vocab), sp, uniforms);
    } else if ((plain || penalised) && candidates_ok) {
      candidates = top_candidates(step_logits, candidate_count(sp.top_k, vocab));
    } else {
      logits = step_logits.to_f32_vector();
    }
    std::vector<float> step_scores(opts.scores ? static_cast<size_t>(rows * vocab) : 0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t token;
      std::optional<int64_t> picked;
      if (!device_picks.empty() || !candidates.values.empty()) {
        if (!device_picks.empty()) {
          if (device_picks[r] >= 0) picked = device_picks[r];
        } else {
          const size_t n = candidates.values.size() / static_cast<size_t>(rows);
          const size_t at = static_cast<size_t>(r) * n;
          picked = sample_from_candidates(std::span(candidates.values).subspan(at, n),
                                          std::span(candidates.indices).subspan(at, n), sp, rng);
        }
        // Undecided from the candidates (a tie at the cut, NaN): the whole logits, once.
        if (!picked && logits.empty()) logits = step_logits.to_f32_vector();
        ++from_candidates;
        if (!picked) ++undecided;
      }
      if (!greedy.empty()) {
        token = greedy[r];
      } else if (picked) {
        token = *picked;
      } else {
        std::vector<float> scores(logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab);
        // (A step penalised on the device comes here only when its candidates could not decide,
        // with the penalised row.)
        settings.process(scores, sequences[r], padding[r], t, r, penalised);
        if (sp.do_sample) apply_warpers(scores, sp);
        if (opts.scores) {
          std::copy(scores.begin(), scores.end(), step_scores.begin() + r * vocab);
          if (settings.renormalize_logits) {  // LogitNormalization, the last processor
            log_softmax(std::span(step_scores)
                            .subspan(static_cast<size_t>(r * vocab), static_cast<size_t>(vocab)));
          }
        }
        if (sp.do_sample) {
          token = uniforms.empty() ? sample(scores, rng) : sample(scores, uniforms[r]);
        } else {
          token = argmax(scores);
        }
      }
      // transformers pads finished rows only when eos is among its stopping criteria; a row
      // that stop strings finished goes on with its own tokens otherwise.
      if (finished[r] && !eos.empty()) token = pad;
      chosen[r] = token;
      sequences[r].push_back(token);
      if (context) context->add(static_cast<size_t>(r), token);
      if (std::find(eos.begin(), eos.end(), token) != eos.end()) finished[r] = true;
      if (stops && !finished[r] && stops->hit(sequences[r])) finished[r] = true;
    }
    if (opts.scores) opts.scores->push_back(Tensor::from_f32(step_scores, {rows, vocab}));
    if (opts.logits) opts.logits->push_back(Tensor::from_f32(logits, {rows, vocab}));
    if (t > 0) {  // decode steps only (the first is the prefill)
      t_forward += std::chrono::duration<double>(t_queued - t_begin).count();
      t_pick += std::chrono::duration<double>(now() - t_queued).count();
      ++traced;
    }
    const bool out_of_time =
        settings.max_time &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - settings.started).count() >
            *settings.max_time;
    const bool stop = (opts.streamer && !opts.streamer(chosen)) ||
                      std::all_of(finished.begin(), finished.end(), [](bool f) { return f; }) ||
                      t + 1 == max_new || out_of_time;
    if (stop) {
      if (chain) chain->drop(cache);  // a step queued ahead of the stop
      break;
    }
    step.ids = chosen;
    if (!advanced) advance();
    t_end = now();
  }
  if (trace && traced > 0) {
    const double n = static_cast<double>(traced);
    std::fprintf(stderr,
                 "trace: per decode step %.1f us queueing the step, %.1f us picking the tokens "
                 "(on the device and the host), "
                 "%.1f us in the rest of the loop (%lld steps)\n",
                 1e6 * t_forward / n, 1e6 * t_pick / n, 1e6 * t_rest / n,
                 static_cast<long long>(traced));
    if (from_candidates > 0) {
      std::fprintf(stderr,
                   "trace: %lld of %lld rows sampled from device candidates read the whole row\n",
                   static_cast<long long>(undecided), static_cast<long long>(from_candidates));
    }
  }
  if (reuse_from) finish_prompt_cache(*reuse_from, sequences[0]);
  return sequences;
}

}  // namespace anvil
