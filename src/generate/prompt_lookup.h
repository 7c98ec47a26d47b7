// Prompt lookup decoding (transformers' prompt_lookup_num_tokens, llama.cpp's lookup decoding):
// the draft is the tokens that followed the first earlier occurrence of the sequence's last
// n-gram (speculative.h checks it). Text that quotes its prompt (code edits, extraction,
// summaries) repeats runs of tokens the model would produce anyway.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "generate/generation_settings.h"
#include "generate/speculative.h"

namespace anvil {

/// How many of a draft's first tokens may follow the sequence (null: all of them).
using AllowedPrefix = std::function<size_t(const std::vector<int64_t>& draft)>;

/// transformers' PromptLookupCandidateGenerator: for n from max_ngram (at most size - 1) down to
/// 1, the first earlier place where the last n ids occur that has ids after it gives up to
/// `max_tokens` of them, cut to the prefix `allowed` allows (where that leaves none, the next
/// place is tried), then before the first eos; empty where no n matches.
std::vector<int64_t> lookup_draft(const std::vector<int64_t>& ids, int64_t max_ngram,
                                  int64_t max_tokens, const std::vector<int64_t>& eos,
                                  const AllowedPrefix& allowed = nullptr);

/// The prefix of `draft` that the logits processors allow after `seq` (`t` new tokens so far,
/// `padding` ids of left padding): transformers runs them over logits of ones at each drafted
/// position and cuts the draft at the first token they set to -inf (or the lowest float).
size_t processors_allow(const GenerationSettings& settings, const std::vector<int64_t>& seq,
                        int64_t t, int64_t padding, int64_t vocab,
                        const std::vector<int64_t>& draft);

/// lookup_draft with the settings' prompt_lookup tokens, n-gram size and processors.
class LookupDrafter : public Drafter {
 public:
  /// `padding`: the prompt's left padding; `vocab`: the model's vocabulary size.
  LookupDrafter(const GenerationSettings& settings, int64_t padding, int64_t vocab);
  Draft draft(const std::vector<int64_t>& seq, int64_t t, int64_t max_tokens) override;

 private:
  const GenerationSettings& settings_;
  int64_t padding_, vocab_;
};

}  // namespace anvil
