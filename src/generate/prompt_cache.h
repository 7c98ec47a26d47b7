// PromptCache's state (include/anvil/model.h): the keys and values generate() keeps between
// calls, the tokens they belong to, and the choice of the prefix a call reuses.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "anvil/model.h"
#include "generate/kv_cache.h"
#include "models/decoder.h"

namespace anvil {

struct PromptCache::State {
  KvCache cache;                       ///< one row; positions [0, tokens.size()) hold `tokens`
  std::vector<int64_t> tokens;         ///< the tokens whose keys and values `cache` holds
  std::weak_ptr<const Decoder> owner;  ///< the decoder that made them
  int64_t reused = 0;
};

/// How many leading tokens of `prompt` a call may take from `held`: their common prefix, at
/// most all but the prompt's last token (a step must run to give the next token's logits); 0
/// where the decoder's RoPE depends on the sequence's length (dynamic NTK, longrope, or
/// recompute_cache_past), whose earlier keys a fresh prefill would rotate differently.
int64_t reusable_prefix(const ModelConfig& config, const std::vector<int64_t>& held,
                        const std::vector<int64_t>& prompt);

/// Binds the cache to `decoder` (CausalLM::generate, which holds it shared): refuses a cache
/// that a live other decoder filled; empties one whose decoder is gone.
void claim_prompt_cache(PromptCache::State& state, const std::shared_ptr<const Decoder>& decoder);

/// Readies the cache (claimed by `decoder`) for one call on `prompt` that needs `capacity`
/// positions: keeps the reusable prefix (in a larger cache when this one is too small) and
/// returns its length, with the cache's length set to it. Until finish_prompt_cache, the cache
/// holds no tokens (a call that throws leaves it empty).
int64_t start_prompt_cache(PromptCache::State& state, const Decoder& decoder,
                           const std::vector<int64_t>& prompt, int64_t capacity);

/// Records what the cache holds after a call: the first cache.length tokens of `sequence`.
void finish_prompt_cache(PromptCache::State& state, const std::vector<int64_t>& sequence);

}  // namespace anvil
