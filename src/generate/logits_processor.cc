// Host-side logits processing, written to match transformers' processors' semantics exactly
// (ties at the top-k threshold kept; top-p keeps the smallest set whose mass exceeds top_p and
// at least one token; min-p scales the threshold by the top probability).
#include "generate/logits_processor.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace anvil {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

std::vector<double> softmax(std::span<const float> s) {
  const float m = *std::max_element(s.begin(), s.end());
  std::vector<double> p(s.size());
  double sum = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    p[i] = s[i] == kNegInf ? 0.0 : std::exp(static_cast<double>(s[i]) - m);
    sum += p[i];
  }
  for (double& v : p) v /= sum;
  return p;
}

}  // namespace

void apply_repetition_penalty(std::span<float> scores, const std::vector<int64_t>& context,
                              float penalty) {
  if (penalty == 1.0f) return;
  std::vector<int64_t> ids(context);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int64_t id : ids) {
    if (id < 0 || id >= static_cast<int64_t>(scores.size())) continue;
    float& s = scores[id];
    s = s < 0 ? s * penalty : s / penalty;
  }
}

void suppress_tokens(std::span<float> scores, const std::vector<int64_t>& ids) {
  for (int64_t id : ids) {
    if (id >= 0 && id < static_cast<int64_t>(scores.size())) scores[id] = kNegInf;
  }
}

void apply_warpers(std::span<float> scores, const SamplingParams& p) {
  const auto n = static_cast<int64_t>(scores.size());
  if (p.temperature != 1.0f) {
    for (float& s : scores) s /= p.temperature;
  }
  if (p.top_k > 0 && p.top_k < n) {
    std::vector<float> sorted(scores.begin(), scores.end());
    std::nth_element(sorted.begin(), sorted.begin() + (p.top_k - 1), sorted.end(),
                     std::greater<float>());
    const float threshold = sorted[p.top_k - 1];
    for (float& s : scores) {
      if (s < threshold) s = kNegInf;
    }
  }
  if (p.top_p < 1.0f) {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
    const std::vector<double> probs = softmax(scores);
    double cumulative = 0;
    // Ascending order: drop the low tail whose cumulative mass stays <= 1 - top_p, but never
    // the last (most likely) token.
    for (int64_t i = 0; i < n - 1; ++i) {
      cumulative += probs[order[i]];
      if (cumulative <= 1.0 - p.top_p) {
        scores[order[i]] = kNegInf;
      } else {
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    const std::vector<double> probs = softmax(scores);
    const double top = *std::max_element(probs.begin(), probs.end());
    const double threshold = p.min_p * top;
    for (int64_t i = 0; i < n; ++i) {
      if (probs[i] < threshold) scores[i] = kNegInf;
    }
  }
}

int64_t argmax(std::span<const float> scores) {
  return std::max_element(scores.begin(), scores.end()) - scores.begin();
}

int64_t sample(std::span<const float> scores, std::mt19937_64& rng) {
  const std::vector<double> probs = softmax(scores);
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  double cumulative = 0;
  int64_t last = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (probs[i] == 0.0) continue;
    cumulative += probs[i];
    last = static_cast<int64_t>(i);
    if (u < cumulative) return last;
  }
  return last;  // rounding left u above the total: the last token with mass
}

}  // namespace anvil
