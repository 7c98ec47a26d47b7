// Speculative decoding's check: a drafter proposes tokens after the sequence (prompt lookup:
// prompt_lookup.h; a smaller model: assistant_drafter.h), one forward pass runs the last token
// and the draft, and the model keeps the drafted tokens it would have produced itself, then one
// token of its own. The first draft follows the prompt, as in transformers (whose first pass
// runs the prompt and the draft together; here the prompt but its last id runs first). Greedy picks
// keep a drafted token where the pick equals it; sampling keeps it by speculative sampling where
// the drafter gives its probabilities (accepted with probability min(1, p/q), else the token drawn
// from max(0, p - q)), or where it gives none (a draft taken from the text) while a draw from p
// equals it. Either way the tokens are distributed as one token a step would give them.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "anvil/model.h"
#include "generate/generation_settings.h"
#include "generate/prompt_cache.h"
#include "models/decoder.h"

namespace anvil {

struct Draft {
  std::vector<int64_t> tokens;
  /// The drafter's probabilities at each drafted position, [tokens][vocab] (a row sums to 1),
  /// where it sampled the tokens from them or ensemble verification needs them; empty
  /// otherwise.
  std::vector<std::vector<float>> probs;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  /// Up to `max_tokens` tokens to follow `seq` (`t` new tokens so far), none to go one token a
  /// step.
  virtual Draft draft(const std::vector<int64_t>& seq, int64_t t, int64_t max_tokens) = 0;
  /// After each check step: `drafted` tokens were drafted, `matches` of them kept (transformers'
  /// update_candidate_strategy and its num_matches: the tokens the step added, less one).
  virtual void update(int64_t drafted, int64_t matches) { (void)drafted, (void)matches; }
};

/// generate() for one prompt with a drafter (no beams, no repeats, no per-step scores:
/// run_generate refuses those first). `mask`: the prompt's checked mask. `prompt_cache`: where
/// not null, claimed by `decoder`; the prompt reuses its prefix and it keeps the sequence after.
std::vector<std::vector<int64_t>> run_speculative(
    const Decoder& decoder, const GenerationSettings& settings, const Batch& batch,
    const std::vector<std::vector<int64_t>>& mask, const GenerateOptions& opts,
    PromptCache::State* prompt_cache, Drafter& drafter);

/// Speculative sampling at one drafted position: the model's processed, warped scores, the
/// drafted token and the drafter's probabilities q there. The token stays with probability
/// min(1, p/q); else the pick is drawn from max(0, p - q), renormalised (p itself where that is
/// all zero, which rounding alone can make). A token drafted from q comes out distributed as p.
/// With `ensemble_weight` w (transformers' assistant_ensemble_weight) the token stays with
/// probability min(1, 1 - w + w p/q) (the target is w p + (1 - w) q); the residual is the same,
/// p itself where it sums to no more than the smallest normal float.
int64_t speculative_pick(std::span<const float> scores, int64_t drafted,
                         const std::vector<float>& q, std::mt19937_64& rng,
                         std::optional<double> ensemble_weight = std::nullopt);

/// Greedy ensemble verification at one drafted position: argmax of w p + (1 - w) q in float32,
/// as transformers computes it (p the softmax of the model's processed scores).
int64_t ensemble_pick(std::span<const float> scores, const std::vector<float>& q, double weight);

}  // namespace anvil
