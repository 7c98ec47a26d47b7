#include "generate/adaptive_confidence.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "anvil/error.h"

namespace anvil {

double roc_cost_threshold(std::span<const uint8_t> matches, std::span<const float> probs) {
  const size_t n = probs.size();
  if (matches.size() != n) {
    throw Error("roc_cost_threshold: " + std::to_string(matches.size()) + " outcomes for " +
                std::to_string(n) + " probabilities");
  }
  for (float p : probs) {
    if (!std::isfinite(p)) {
      throw Error("adaptive assistant confidence: a drafted token's probability is " +
                  std::to_string(p) + " (the assistant's scores are not finite)");
    }
  }
  // Descending probability; within a run of equal ones the order does not matter, since the
  // curve has a point only where the probability changes.
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return probs[a] > probs[b]; });
  std::vector<double> tps, fps, thresholds;
  double kept = 0;
  for (size_t i = 0; i < n; ++i) {
    kept += matches[order[i]] ? 1.0 : 0.0;
    if (i + 1 == n || probs[order[i + 1]] != probs[order[i]]) {
      tps.push_back(kept);
      fps.push_back(static_cast<double>(i + 1) - kept);
      thresholds.push_back(probs[order[i]]);
    }
  }
  if (tps.back() <= 0 || fps.back() <= 0) {
    throw Error("roc_cost_threshold: needs at least one kept and one rejected draft");
  }
  // drop_intermediate: a point on the straight line between its neighbours adds nothing.
  if (tps.size() > 2) {
    size_t out = 1;
    for (size_t k = 1; k + 1 < tps.size(); ++k) {
      const bool corner =
          fps[k + 1] - 2 * fps[k] + fps[k - 1] != 0 || tps[k + 1] - 2 * tps[k] + tps[k - 1] != 0;
      if (corner) {
        tps[out] = tps[k], fps[out] = fps[k], thresholds[out] = thresholds[k];
        ++out;
      }
    }
    tps[out] = tps.back(), fps[out] = fps.back(), thresholds[out] = thresholds.back();
    tps.resize(out + 1), fps.resize(out + 1), thresholds.resize(out + 1);
  }
  // The curve's first point, (0, 0) at +inf, then the first minimum of the cost, computed as
  // numpy does: fpr = fps / fps[-1], fnr = 1 - tps / tps[-1], cost = fpr + 3 * fnr.
  double best_cost = 0.0 + 3 * (1 - 0.0);
  double best = std::numeric_limits<double>::infinity();
  for (size_t k = 0; k < tps.size(); ++k) {
    const double fpr = fps[k] / fps.back();
    const double fnr = 1 - tps[k] / tps.back();
    const double cost = fpr + 3 * fnr;
    if (cost < best_cost) best_cost = cost, best = thresholds[k];
  }
  return best;
}

void AdaptiveConfidence::checked(int64_t matches) {
  matches_.insert(matches_.end(), static_cast<size_t>(std::max<int64_t>(matches, 0)), 1);
  if (probs_.size() > matches_.size()) matches_.push_back(0);
  if (probs_.size() > matches_.size()) probs_.resize(matches_.size());
  const bool both = std::find(matches_.begin(), matches_.end(), 0) != matches_.end() &&
                    std::find(matches_.begin(), matches_.end(), 1) != matches_.end();
  if (probs_.size() > 5 && both) {
    threshold_ = static_cast<float>(roc_cost_threshold(matches_, probs_));
  }
}

}  // namespace anvil
