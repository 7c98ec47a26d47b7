// Beam search and beam sampling as transformers' _beam_search runs them: each step scores every
// beam's continuations by accumulated log-probability (after the logits processors, and the
// warpers when sampling), keeps the best (1 + eos ids) x num_beams of them, moves those that end
// (eos or the length limit) among the finished hypotheses ranked by score / length^
// length_penalty, and continues the best num_beams that do not; early_stopping decides when no
// running beam can still win.
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/model.h"
#include "generate/generation_settings.h"
#include "models/decoder.h"

namespace anvil {

struct BeamSearchResult {
  /// num_return_sequences rows per prompt, best first: prompt, new tokens, then the fill value
  /// (pad, or the first eos where pad is 0, as transformers) up to the longest returned row.
  std::vector<std::vector<int64_t>> sequences;
  std::vector<float> scores;  ///< each row's length-penalised score (sequences_scores)
  /// Each row's beam index (prompt x num_beams + beam) that each of its new tokens extended,
  /// -1 past its end, as long as the longest returned row's new tokens (beam_indices).
  std::vector<std::vector<int64_t>> beam_indices;
};

/// `mask`: the batch's checked attention mask (checked_mask). Where not null, each step appends
/// its beams' scores (log-probabilities after the processors and warpers: output_scores) or raw
/// logits (output_logits) to `step_scores` / `step_logits`, float32 [prompts x num_beams, vocab].
BeamSearchResult run_beam_search(const Decoder& decoder, const GenerationSettings& settings,
                                 const Batch& batch, const std::vector<std::vector<int64_t>>& mask,
                                 std::vector<Tensor>* step_scores = nullptr,
                                 std::vector<Tensor>* step_logits = nullptr);

}  // namespace anvil
