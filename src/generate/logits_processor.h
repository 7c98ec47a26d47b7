// The logits processors and warpers of transformers' generate, applied on the host to one row
// of float32 scores, in transformers' order: repetition penalty, min-new-tokens eos
// suppression, then (sampling only) temperature, top-k, top-p, min-p, and the draw.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace anvil {

struct SamplingParams {
  bool do_sample = false;
  float temperature = 1.0f;
  int64_t top_k = 0;  ///< 0 disables
  float top_p = 1.0f;
  float min_p = 0.0f;  ///< 0 disables
  float repetition_penalty = 1.0f;
  float typical_p = 1.0f;       ///< 1 disables
  float epsilon_cutoff = 0.0f;  ///< 0 disables
  float eta_cutoff = 0.0f;      ///< 0 disables
  /// The warpers never cut a row to fewer tokens than this: 1, or the eos ids + 1 in beam
  /// sampling (so that a beam can always continue), as transformers sets it.
  int64_t min_tokens_to_keep = 1;
  /// Whether a warper needs every token's probability (typical, epsilon, eta): sampling then
  /// reads whole rows, not the device's candidates.
  bool needs_whole_rows() const {
    return typical_p < 1.0f || epsilon_cutoff > 0.0f || eta_cutoff > 0.0f;
  }
};

/// log_softmax of a float32 row in place: x - max - log(sum exp(x - max)), each exp in float32
/// as torch takes it (half the time of double's over a 150k vocabulary, the host's main cost of
/// a beam step), the sum in double. A row of -inf stays as it is.
void log_softmax(std::span<float> row);

/// softmax(scores) as float32 probabilities (-inf entries 0), exp(x - max) normalised by a
/// double sum: a drafter's and the model's distributions in speculative sampling.
std::vector<float> softmax(std::span<const float> scores);

/// RepetitionPenaltyLogitsProcessor: every id in `context` has its score divided by the
/// penalty when positive, multiplied when negative.
void apply_repetition_penalty(std::span<float> scores, const std::vector<int64_t>& context,
                              float penalty);
/// NoRepeatNGramLogitsProcessor: the tokens that would complete an n-gram of size n already in
/// `row` (every id so far, padding included) get -inf.
void ban_repeated_ngrams(std::span<float> scores, const std::vector<int64_t>& row, int64_t n);
/// NoBadWordsLogitsProcessor: a one-token sequence's id gets -inf (unless it is an eos id), a
/// longer one's last id where `row` ends with the rest of it.
void ban_bad_words(std::span<float> scores, const std::vector<int64_t>& row,
                   const std::vector<std::vector<int64_t>>& bad_words,
                   const std::vector<int64_t>& eos);
/// SequenceBiasLogitsProcessor: each pair's bias added to its last id's score where `row` ends
/// with the rest of its ids (a one-token pair: always); the biases a token gets summed first.
void apply_sequence_bias(std::span<float> scores, const std::vector<int64_t>& row,
                         const std::vector<std::pair<std::vector<int64_t>, float>>& biases);
/// ExponentialDecayLengthPenalty at `past_start` new tokens beyond its start (> 0): each eos
/// score with a finite value grows by |score| x (factor^past_start - 1).
void apply_length_decay(std::span<float> scores, const std::vector<int64_t>& eos,
                        int64_t past_start, float factor);
/// ForcedEOSTokenLogitsProcessor: every score -inf but the eos ids', which become 0.
void force_tokens(std::span<float> scores, const std::vector<int64_t>& ids);
/// Sets the scores of `ids` to -inf (MinNewTokensLengthLogitsProcessor).
void suppress_tokens(std::span<float> scores, const std::vector<int64_t>& ids);
/// Temperature, top-k, top-p, min-p, typical, epsilon and eta warpers in transformers' order;
/// removed entries become -inf.
void apply_warpers(std::span<float> scores, const SamplingParams& p);
/// Index of the largest score, the first on ties (torch.argmax).
int64_t argmax(std::span<const float> scores);
/// One uniform draw in [0, 1) from `rng`: what each sampled row of a step takes, once.
double draw_uniform(std::mt19937_64& rng);
/// Draws from softmax(scores): the first live token whose cumulative probability (index order)
/// exceeds u, a uniform draw in [0, 1) (draw_uniform).
int64_t sample(std::span<const float> scores, double u);
int64_t sample(std::span<const float> scores, std::mt19937_64& rng);

/// The warpers and the draw over a row's top-k candidates instead of the whole row: `values` /
/// `indices` hold its largest scores, largest first (ops::top_k), at least top_k + 1 of them.
/// Gives the token apply_warpers + sample would give on the whole row, with the same draw from
/// `rng`; returns nothing (and draws nothing) when the candidates cannot decide that: a NaN
/// among them, or every candidate still at or above the top_k-th score after the temperature
/// (top-k keeps ties at its cut, and more of them may lie past the candidates).
/// Needs p.do_sample and p.top_k >= 1.
std::optional<int64_t> sample_from_candidates(std::span<const float> values,
                                              std::span<const int64_t> indices,
                                              const SamplingParams& p, std::mt19937_64& rng);
/// The same with the draw given: u from draw_uniform.
std::optional<int64_t> sample_from_candidates(std::span<const float> values,
                                              std::span<const int64_t> indices,
                                              const SamplingParams& p, double u);

}  // namespace anvil
