// A batch's prompt step when rows repeat (num_return_sequences' copies of one prompt, or a
// caller's duplicate rows): each distinct row is run once and its keys and values copied to its
// repeats, as llama.cpp's parallel sequences share a prompt. transformers runs every copy.
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/tensor.h"
#include "generate/kv_cache.h"
#include "models/decoder.h"

namespace anvil {

struct DistinctRows {
  std::vector<int64_t> rows;  ///< the first row of each distinct (ids, mask) pair, in order
  std::vector<int64_t> of;    ///< per batch row: the index in `rows` of the row it repeats
};

/// The batch's distinct rows: equal ids and equal masks.
DistinctRows distinct_rows(const std::vector<std::vector<int64_t>>& ids,
                           const std::vector<std::vector<int64_t>>& mask);

/// Runs the prompt `step` (whole rows, an empty `cache`) for the distinct rows only, copies
/// their keys and values to every row of `cache` (whose length becomes the prompt's), and
/// returns float32 logits [rows, 1, vocab] on the decoder's device, each row its distinct row's.
Tensor prefill_distinct(const Decoder& decoder, const StepInput& step, const DistinctRows& distinct,
                        KvCache& cache);

}  // namespace anvil
