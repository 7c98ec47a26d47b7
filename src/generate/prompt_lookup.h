// Prompt lookup decoding (transformers' prompt_lookup_num_tokens, llama.cpp's lookup decoding):
// the draft is the tokens that followed the first earlier occurrence of the sequence's last
// n-gram (speculative.h checks it). Text that quotes its prompt (code edits, extraction,
// summaries) repeats runs of tokens the model would produce anyway.
#pragma once

#include <cstdint>
#include <vector>

#include "generate/generation_settings.h"
#include "generate/speculative.h"

namespace anvil {

/// transformers' PromptLookupCandidateGenerator: for n from max_ngram (at most size - 1) down to
/// 1, the first earlier place where the last n ids occur that has ids after it gives up to
/// `max_tokens` of them, cut before the first eos; empty where no n matches.
std::vector<int64_t> lookup_draft(const std::vector<int64_t>& ids, int64_t max_ngram,
                                  int64_t max_tokens, const std::vector<int64_t>& eos);

/// lookup_draft with the settings' prompt_lookup tokens and n-gram size.
class LookupDrafter : public Drafter {
 public:
  explicit LookupDrafter(const GenerationSettings& settings);
  Draft draft(const std::vector<int64_t>& seq, int64_t t, int64_t max_tokens) override;

 private:
  const GenerationSettings& settings_;
};

}  // namespace anvil
