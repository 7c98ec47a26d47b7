// Prompt lookup decoding (transformers' prompt_lookup_num_tokens, llama.cpp's lookup decoding):
// each step drafts the tokens that followed the first earlier occurrence of the sequence's last
// n-gram, runs the last token and the draft through the model in one forward pass, and keeps
// the drafted tokens for as long as they are what the model picks itself, then the model's own
// pick after them. Decode reads every weight once a step whatever the step's length, so a step
// that keeps several drafted tokens costs little more than one that keeps none.
#pragma once

#include <cstdint>
#include <vector>

#include "anvil/model.h"
#include "generate/generation_settings.h"
#include "generate/prompt_cache.h"
#include "models/decoder.h"

namespace anvil {

/// transformers' PromptLookupCandidateGenerator: for n from max_ngram (at most size - 1) down to
/// 1, the first earlier place where the last n ids occur that has ids after it gives up to
/// `max_tokens` of them, cut before the first eos; empty where no n matches.
std::vector<int64_t> lookup_draft(const std::vector<int64_t>& ids, int64_t max_ngram,
                                  int64_t max_tokens, const std::vector<int64_t>& eos);

/// generate() for one prompt with settings.prompt_lookup > 0 (no beams, no repeats, no
/// per-step scores: run_generate refuses those first). `mask`: the prompt's checked mask.
/// `prompt_cache`: where not null, claimed by `decoder`, whose keys the prompt reuses and which
/// keeps the sequence's after.
std::vector<std::vector<int64_t>> run_prompt_lookup(const Decoder& decoder,
                                                    const GenerationSettings& settings,
                                                    const Batch& batch,
                                                    const std::vector<std::vector<int64_t>>& mask,
                                                    const GenerateOptions& opts,
                                                    PromptCache::State* prompt_cache);

}  // namespace anvil
