#include "generate/assistant_drafter.h"

#include <algorithm>
#include <string>

#include "anvil/error.h"
#include "generate/generate.h"
#include "generate/logits_processor.h"

namespace anvil {

AssistantDrafter::AssistantDrafter(const Decoder& assistant, const GenerationSettings& settings,
                                   const std::vector<int64_t>& mask, int64_t capacity,
                                   int64_t vocab, uint64_t seed, int64_t tokens)
    : tokens_(tokens),
      assistant_(assistant),
      settings_(settings),
      prompt_mask_(mask),
      vocab_(vocab),
      cache_(assistant.new_cache(1, capacity)),
      rng_(seed ^ 0x9e3779b97f4a7c15ULL) {
  if (settings.assistant_adaptive_confidence) {
    adaptive_.emplace(settings.assistant_confidence_threshold);
  }
}

Draft AssistantDrafter::draft(const std::vector<int64_t>& seq, int64_t t, int64_t max_tokens) {
  Draft out;
  const int64_t max = std::min(tokens_, max_tokens);
  if (max < 1) return out;
  const int64_t vocab = assistant_.config().vocab_size;
  for (int64_t id : seq) {
    if (id >= vocab) {
      throw Error("assistant_model: token " + std::to_string(id) +
                  " is outside the assistant's vocabulary of " + std::to_string(vocab) +
                  " (the assistant must share the model's tokenizer)");
    }
  }
  // Keep the keys of the ids the sequence still begins with (a rejected draft's are dropped),
  // at most all but the last id, and run the rest.
  size_t held = 0;
  while (held < held_.size() && held + 1 < seq.size() && held_[held] == seq[held]) ++held;
  held_.resize(held);
  cache_.length = static_cast<int64_t>(held);
  std::vector<int64_t> mask = prompt_mask_;
  mask.resize(seq.size(), 1);
  const std::vector<int32_t> positions = positions_from_mask(mask);
  const auto step_over = [&](size_t from, size_t to) {  // ids [from, to) of `current`
    StepInput step;
    step.batch = 1;
    step.seq = static_cast<int64_t>(to - from);
    for (size_t i = from; i < to; ++i) {
      step.ids.push_back(i < seq.size() ? seq[i] : out.tokens[i - seq.size()]);
      step.positions.push_back(i < positions.size()
                                   ? positions[i]
                                   : positions.back() + static_cast<int32_t>(i + 1 - seq.size()));
    }
    step.key_mask.assign(mask.begin(), mask.end());
    step.key_mask.resize(to, 1);
    const Tensor logits = assistant_.forward(step, cache_);
    for (size_t i = from; i < to; ++i) {
      held_.push_back(i < seq.size() ? seq[i] : out.tokens[i - seq.size()]);
    }
    return logits.to_f32_vector();
  };
  std::vector<float> scores = step_over(held, seq.size());
  std::vector<int64_t> current = seq;
  const SamplingParams& sp = settings_.sampling;
  for (int64_t j = 0; j < max; ++j) {
    settings_.process(scores, current, leading_padding(prompt_mask_), t + j, 0);
    if (sp.do_sample) apply_warpers(scores, sp);
    const int64_t token = sp.do_sample ? sample(scores, rng_) : argmax(scores);
    if (token >= vocab_) break;  // a padded row of a larger vocabulary: the model has no such id
    // The pick's probability: for speculative sampling (every entry) and the threshold.
    const float threshold = confidence_threshold();
    const bool keeps_probs = sp.do_sample || settings_.ensemble_weight.has_value();
    std::vector<float> p =
        keeps_probs || threshold > 0 || adaptive_ ? softmax(scores) : std::vector<float>();
    const bool unsure = threshold > 0 && p[token] < threshold;
    if (adaptive_) adaptive_->drafted(p[token]);
    out.tokens.push_back(token);
    if (keeps_probs) out.probs.push_back(std::move(p));
    current.push_back(token);
    const bool eos =
        std::find(settings_.eos.begin(), settings_.eos.end(), token) != settings_.eos.end();
    if (eos || unsure || j + 1 == max) break;
    scores = step_over(current.size() - 1, current.size());
  }
  return out;
}

void AssistantDrafter::update(int64_t drafted, int64_t matches) {
  if (settings_.assistant_schedule != AssistantTokensSchedule::constant) {
    tokens_ = matches == drafted ? tokens_ + 2 : std::max<int64_t>(1, tokens_ - 1);
  }
  if (adaptive_) adaptive_->checked(matches);
}

}  // namespace anvil
