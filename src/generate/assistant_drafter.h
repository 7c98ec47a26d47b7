// Drafts from a smaller model of the same tokenizer (transformers' assistant_model, llama.cpp's
// draft model): it keeps its own cache of the sequence, runs what the main model added since its
// last draft, then picks up to num_assistant_tokens tokens one step each (greedy, or sampled
// with its probabilities kept for speculative sampling), stopping early at an eos or where its
// pick's probability falls below assistant_confidence_threshold (transformers' ConfidenceCriteria).
// num_assistant_tokens_schedule's heuristics change that count from step to step, and
// assistant_adaptive_confidence that threshold (adaptive_confidence.h).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "generate/adaptive_confidence.h"
#include "generate/generation_settings.h"
#include "generate/kv_cache.h"
#include "generate/speculative.h"
#include "models/decoder.h"

namespace anvil {

class AssistantDrafter : public Drafter {
 public:
  /// `mask`: the prompt's mask (its left padding); `capacity`: prompt + max_new; `vocab`: the
  /// main model's vocabulary size (a draft stops before a token past it).
  /// `tokens`: the first step's draft length (settings.assistant_tokens, or what the heuristic
  /// schedule carried over from the assistant's last call).
  AssistantDrafter(const Decoder& assistant, const GenerationSettings& settings,
                   const std::vector<int64_t>& mask, int64_t capacity, int64_t vocab, uint64_t seed,
                   int64_t tokens);
  Draft draft(const std::vector<int64_t>& seq, int64_t t, int64_t max_tokens) override;
  /// transformers' update_candidate_strategy: the heuristic schedules take two more tokens
  /// after a step that kept its whole draft, else one fewer (at least one); an adaptive
  /// threshold moves.
  void update(int64_t drafted, int64_t matches) override;
  /// The draft length the next step would take.
  int64_t tokens() const { return tokens_; }
  /// The confidence threshold the next draft stops below.
  float confidence_threshold() const {
    return adaptive_ ? adaptive_->threshold() : settings_.assistant_confidence_threshold;
  }

 private:
  int64_t tokens_;
  std::optional<AdaptiveConfidence> adaptive_;
  const Decoder& assistant_;
  const GenerationSettings& settings_;
  std::vector<int64_t> prompt_mask_;
  int64_t vocab_;
  KvCache cache_;
  std::vector<int64_t> held_;  // the ids whose keys cache_ holds
  std::mt19937_64 rng_;
};

}  // namespace anvil
