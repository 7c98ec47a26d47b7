// transformers' adaptive assistant confidence threshold (AssistedCandidateGenerator where
// scikit-learn is importable): every drafted token's probability is kept with whether the model
// kept that token, and after each check step the threshold that stops the assistant's drafts
// becomes the point of their ROC curve with the least fpr + 3 fnr (a good draft cut short costs
// three times a wasted one). Drafts of a confident assistant then run longer, a poor one's
// shorter, without the user tuning the threshold.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace anvil {

class AdaptiveConfidence {
 public:
  explicit AdaptiveConfidence(float threshold) : threshold_(threshold) {}
  /// The probability the assistant gave a token it drafted (its processed scores' softmax).
  void drafted(float probability) { probs_.push_back(probability); }
  /// After a check step that kept `matches` of the draft (transformers' num_matches): the
  /// first rejected token counts as a miss, the tokens drafted after it are forgotten, and with
  /// more than five samples of both kinds the threshold moves.
  void checked(int64_t matches);
  /// The threshold the next draft stops below (+inf: after its first token).
  float threshold() const { return threshold_; }

 private:
  float threshold_;
  std::vector<float> probs_;
  std::vector<uint8_t> matches_;
};

/// sklearn.metrics.roc_curve(matches, probs) (drop_intermediate, its first point at +inf) and the
/// threshold at the first minimum of fpr + 3 (1 - tpr), as transformers picks it. Needs as many
/// of each, at least one match and one miss, and finite probabilities; refuses otherwise.
double roc_cost_threshold(std::span<const uint8_t> matches, std::span<const float> probs);

}  // namespace anvil
