// PromptCache: the keys and values one generate() call leaves for the next.
#include "generate/prompt_cache.h"

#include <algorithm>
#include <utility>

#include "anvil/error.h"

namespace anvil {

PromptCache::PromptCache() : state_(std::make_unique<State>()) {}
PromptCache::~PromptCache() = default;
PromptCache::PromptCache(PromptCache&&) noexcept = default;
PromptCache& PromptCache::operator=(PromptCache&&) noexcept = default;

const std::vector<int64_t>& PromptCache::tokens() const {
  return state_->tokens;
}

int64_t PromptCache::reused() const {
  return state_->reused;
}

void PromptCache::clear() {
  *state_ = State();
}

int64_t reusable_prefix(const ModelConfig& config, const std::vector<int64_t>& held,
                        const std::vector<int64_t>& prompt) {
  const RopeType rope = config.rope.type;
  if (rope == RopeType::dynamic || rope == RopeType::longrope || config.recompute_cache_past) {
    return 0;
  }
  const size_t limit = std::min(held.size(), prompt.empty() ? 0 : prompt.size() - 1);
  size_t n = 0;
  while (n < limit && held[n] == prompt[n]) ++n;
  return static_cast<int64_t>(n);
}

void claim_prompt_cache(PromptCache::State& state, const std::shared_ptr<const Decoder>& decoder) {
  const std::shared_ptr<const Decoder> held = state.owner.lock();
  if (held && held != decoder) {
    throw Error(
        "prompt_cache: it holds another model's keys and values (clear() it before using it "
        "with this model)");
  }
  if (!held) state = PromptCache::State();
  state.owner = decoder;
}

int64_t start_prompt_cache(PromptCache::State& state, const Decoder& decoder,
                           const std::vector<int64_t>& prompt, int64_t capacity) {
  const int64_t reuse = reusable_prefix(decoder.config(), state.tokens, prompt);
  state.tokens.clear();
  state.reused = 0;
  if (state.cache.capacity < capacity) {
    // Room to grow: a conversation's next turns reuse this allocation rather than copy again.
    const int64_t limit = decoder.config().max_position_embeddings;
    int64_t grown = std::max(capacity, 2 * state.cache.capacity);
    if (limit > 0) grown = std::max(capacity, std::min(grown, limit));
    KvCache bigger = decoder.new_cache(1, grown);
    if (reuse > 0) copy_cache_rows(state.cache, bigger, {0}, reuse);
    state.cache = std::move(bigger);
  }
  state.cache.length = reuse;
  state.reused = reuse;
  return reuse;
}

void finish_prompt_cache(PromptCache::State& state, const std::vector<int64_t>& sequence) {
  const auto held = static_cast<size_t>(std::max<int64_t>(0, state.cache.length));
  if (held > sequence.size()) {  // not a state generate() leaves; hold nothing rather than guess
    state.cache.length = 0;
    return;
  }
  state.tokens.assign(sequence.begin(), sequence.begin() + static_cast<int64_t>(held));
}

}  // namespace anvil
