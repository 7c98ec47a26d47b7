// The generate loop: prefill the (left-padded) prompts, then one decode step per new token,
// with transformers' position ids, eos handling and padding of finished rows.
#pragma once

#include <atomic>
#include <vector>

#include "anvil/model.h"
#include "models/decoder.h"

namespace anvil {

/// Validates a batch (rectangular, masks of 0/1 matching the ids) and returns its mask,
/// all ones when the batch gives none. `what` names the caller in errors.
std::vector<std::vector<int64_t>> checked_mask(const Batch& batch);

/// transformers' position ids for a mask row: cumsum(mask) - 1, and 1 where the mask is 0.
std::vector<int32_t> positions_from_mask(const std::vector<int64_t>& mask_row);

/// A step over whole rows (a prompt, or every id so far): `ids` and their `mask` rows, of one
/// length, positions from the masks.
StepInput whole_rows_step(const std::vector<std::vector<int64_t>>& ids,
                          const std::vector<std::vector<int64_t>>& mask);

/// The argmax of each row of logits [rows, 1, vocab] (or [rows, vocab]); on a device with an
/// argmax kernel only the chosen ids come back to the host.
std::vector<int64_t> greedy_tokens(const Tensor& logits);

/// `carried_assistant_tokens`: where the assistant (opts.assistant_model) keeps the draft length
/// its heuristic schedule reached (CausalLM); null without one.
std::vector<std::vector<int64_t>> run_generate(
    const Decoder& decoder, const GenerationConfig& gen, const Batch& batch,
    const GenerateOptions& opts, std::atomic<int64_t>* carried_assistant_tokens = nullptr);

}  // namespace anvil
