// Host-side logits processing, written to match transformers' processors' semantics exactly
// (ties at the top-k threshold kept; top-p keeps the smallest set whose mass exceeds top_p and
// at least one token; min-p scales the threshold by the top probability).
#include "generate/logits_processor.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "anvil/error.h"
#include "core/float_order.h"

namespace anvil {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The tokens still in play (finite score), in index order. After top-k these are a handful of
// a vocabulary of 150k, so the warpers and the draw below work on them alone: a whole-vocabulary
// sort and double-precision softmax per token cost ~5 ms, more than a GPU's decode step. The
// softmax sums still run in index order, so the results are those of the whole-vocabulary
// definitions (a -inf entry only ever adds 0 or sorts first); top-p's boundary is found by
// selection rather than a sort (keep_top_p), with its masses summed in another order.
std::vector<int64_t> live_tokens(std::span<const float> s) {
  std::vector<int64_t> live;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != kNegInf) live.push_back(static_cast<int64_t>(i));
  }
  return live;
}

// softmax(scores) at the live tokens (every other token's probability is 0): exp(s - max) in
// double, summed in index order, as over the whole row.
std::vector<double> live_softmax(std::span<const float> s, const std::vector<int64_t>& live) {
  std::vector<double> p(live.size());
  if (live.empty()) return p;
  float m = kNegInf;
  for (int64_t i : live) m = std::max(m, s[i]);
  double sum = 0;
  for (size_t j = 0; j < live.size(); ++j) {
    p[j] = std::exp(static_cast<double>(s[live[j]]) - m);
    sum += p[j];
  }
  for (double& v : p) v /= sum;
  return p;
}

// The k-th largest of all scores (duplicates counted, -inf included), by a min-heap of the k
// largest seen: one comparison for most of a vocabulary.
float kth_largest(std::span<const float> s, int64_t k) {
  std::vector<float> heap(s.begin(), s.begin() + k);
  std::make_heap(heap.begin(), heap.end(), std::greater<float>());
  for (size_t i = static_cast<size_t>(k); i < s.size(); ++i) {
    if (s[i] > heap.front()) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<float>());
      heap.back() = s[i];
      std::push_heap(heap.begin(), heap.end(), std::greater<float>());
    }
  }
  return heap.front();
}

// Top-p over the live tokens (`live` in index order, `probs` their softmax): the ones kept are
// the smallest best-first run whose mass reaches total - (1 - top_p), where best-first is by
// score, ties by higher index (the reverse of the stable ascending sort that transformers' order
// amounts to), and a token is removed when the mass of it and everything ranked below it stays
// <= 1 - top_p. Sorting all live tokens for that (a whole vocabulary when top-k is off) cost
// ~20 ms a row; selection by mass finds the boundary in expected linear time: each round places
// the middle rank of the undecided range (nth_element) and keeps the half that holds the
// crossing. The masses are summed in another order than a sort's running sum: a boundary could
// move only where a prefix's mass lies within a rounding of the threshold.
void keep_top_p(std::span<float> scores, const std::vector<int64_t>& live,
                const std::vector<double>& probs, float top_p, int64_t min_keep) {
  const size_t n = live.size();
  double total = 0;
  for (double v : probs) total += v;
  const double target = total - (1.0 - static_cast<double>(top_p));
  // Each live token as one integer that orders as best-first does: the score's bits made
  // monotonic (a NaN below every number, so the order stays strict) above its position in
  // `live`. Comparing these instead of looking the scores up made the selection ~4x faster.
  // Reused across calls: a fresh vocabulary-sized buffer per token cost its page faults.
  thread_local std::vector<uint64_t> rank;
  rank.resize(n);
  for (size_t j = 0; j < n; ++j) {
    const float v = scores[live[j]];
    const uint32_t bits = std::isnan(v) ? 0u : ordered_bits(v);
    rank[j] = static_cast<uint64_t>(bits) << 32 | j;
  }
  const auto prob = [&](uint64_t r) { return probs[static_cast<uint32_t>(r)]; };
  const std::greater<uint64_t> better;
  size_t lo = 0, hi = n;  // the crossing lies in [lo, hi): ranks before lo hold `above`
  double above = 0;
  constexpr size_t kSortBelow = 64;
  while (hi - lo > kSortBelow) {
    const size_t mid = lo + (hi - lo) / 2;
    std::nth_element(rank.begin() + lo, rank.begin() + mid, rank.begin() + hi, better);
    double mass = 0;
    for (size_t i = lo; i <= mid; ++i) mass += prob(rank[i]);
    if (above + mass >= target) {
      hi = mid + 1;
    } else {
      above += mass;
      lo = mid + 1;
    }
  }
  std::sort(rank.begin() + lo, rank.begin() + hi, better);
  size_t kept = n;  // no crossing: every token stays
  for (size_t i = lo; i < hi; ++i) {
    above += prob(rank[i]);
    if (above >= target) {
      kept = i + 1;
      break;
    }
  }
  if (kept < static_cast<size_t>(min_keep)) {  // never fewer than min_keep, best first
    kept = std::min(n, static_cast<size_t>(min_keep));
    std::partial_sort(rank.begin(), rank.begin() + kept, rank.end(), better);
  }
  // The kept positions flagged, then one pass in index order over the live tokens (scattered
  // stores to the removed ones had cost as much as the selection).
  thread_local std::vector<uint8_t> keep;
  keep.assign(n, 0);
  for (size_t i = 0; i < kept; ++i) keep[static_cast<uint32_t>(rank[i])] = 1;
  for (size_t j = 0; j < n; ++j) {
    if (!keep[j]) scores[live[j]] = kNegInf;
  }
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

void ban_repeated_ngrams(std::span<float> scores, const std::vector<int64_t>& row, int64_t n) {
  const auto len = static_cast<int64_t>(row.size());
  if (n <= 0 || len + 1 < n) return;
  // The last n - 1 ids, and every earlier place they occur: the id after each is banned.
  const int64_t prefix = n - 1, start = len - prefix;
  for (int64_t i = 0; i + prefix < len; ++i) {
    if (!std::equal(row.begin() + i, row.begin() + i + prefix, row.begin() + start)) continue;
    const int64_t id = row[static_cast<size_t>(i + prefix)];
    if (id >= 0 && id < static_cast<int64_t>(scores.size())) {
      scores[static_cast<size_t>(id)] = -std::numeric_limits<float>::infinity();
    }
  }
}

void ban_bad_words(std::span<float> scores, const std::vector<int64_t>& row,
                   const std::vector<std::vector<int64_t>>& bad_words,
                   const std::vector<int64_t>& eos) {
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  for (const auto& seq : bad_words) {
    const int64_t last = seq.back();
    if (last >= static_cast<int64_t>(scores.size())) continue;
    if (seq.size() == 1) {
      if (std::find(eos.begin(), eos.end(), last) == eos.end()) scores[last] = kBanned;
      continue;
    }
    const size_t prefix = seq.size() - 1;
    if (row.size() >= prefix && std::equal(seq.begin(), seq.end() - 1, row.end() - prefix)) {
      scores[last] = kBanned;
    }
  }
}

void apply_sequence_bias(std::span<float> scores, const std::vector<int64_t>& row,
                         const std::vector<std::pair<std::vector<int64_t>, float>>& biases) {
  const auto vocab = static_cast<int64_t>(scores.size());
  for (const auto& [ids, bias] : biases) {
    for (int64_t id : ids) {
      if (id >= vocab) {
        throw Error("sequence_bias: token " + std::to_string(id) + " is past the vocabulary (" +
                    std::to_string(vocab) + " tokens)");
      }
    }
  }
  // transformers builds one bias vector (the one-token biases, then the longer sequences'
  // added in order of their prefix lengths' first appearance) and adds it to the scores once.
  std::vector<std::pair<int64_t, float>> bias;  // (token, summed bias), in first-touched order
  const auto add = [&](int64_t token, float b) {
    for (auto& [t, sum] : bias) {
      if (t == token) {
        sum += b;
        return;
      }
    }
    bias.emplace_back(token, b);
  };
  for (const auto& [ids, b] : biases) {
    if (ids.size() == 1) add(ids[0], b);
  }
  std::vector<size_t> prefix_lengths;
  for (const auto& entry : biases) {
    const size_t n = entry.first.size() - 1;
    if (n > 0 &&
        std::find(prefix_lengths.begin(), prefix_lengths.end(), n) == prefix_lengths.end()) {
      prefix_lengths.push_back(n);
    }
  }
  for (size_t n : prefix_lengths) {
    if (n > row.size()) continue;
    for (const auto& [ids, b] : biases) {
      if (ids.size() - 1 != n) continue;
      const bool matches =
          std::equal(ids.begin(), ids.end() - 1, row.end() - static_cast<int64_t>(n));
      add(ids.back(), matches ? b : 0.0f);
    }
  }
  for (const auto& [token, b] : bias) scores[token] += b;
}

void apply_length_decay(std::span<float> scores, const std::vector<int64_t>& eos,
                        int64_t past_start, float factor) {
  const auto grow = static_cast<float>(std::pow(static_cast<double>(factor), past_start) - 1.0);
  std::vector<std::pair<int64_t, float>> penalties;  // read every eos score before writing any
  for (int64_t id : eos) {
    if (id < 0 || id >= static_cast<int64_t>(scores.size())) continue;
    const float s = scores[id];
    const float p = std::isfinite(s) ? std::fabs(s) * grow : 0.0f;
    const auto same = std::find_if(penalties.begin(), penalties.end(),
                                   [id](const auto& e) { return e.first == id; });
    if (same != penalties.end()) {
      same->second = p;  // a repeated eos id is one entry of the penalty vector
    } else {
      penalties.emplace_back(id, p);
    }
  }
  for (const auto& [id, p] : penalties) scores[id] += p;
}

void force_tokens(std::span<float> scores, const std::vector<int64_t>& ids) {
  std::fill(scores.begin(), scores.end(), -std::numeric_limits<float>::infinity());
  for (int64_t id : ids) {
    if (id >= 0 && id < static_cast<int64_t>(scores.size())) scores[id] = 0.0f;
  }
}

void suppress_tokens(std::span<float> scores, const std::vector<int64_t>& ids) {
  for (int64_t id : ids) {
    if (id >= 0 && id < static_cast<int64_t>(scores.size())) scores[id] = kNegInf;
  }
}

namespace {

// Epsilon / eta: the live tokens whose probability is below `threshold` removed, unless their
// score reaches the min_keep-th largest.
void cut_below(std::span<float> scores, const std::vector<int64_t>& live,
               const std::vector<double>& probs, double threshold, int64_t min_keep) {
  const float kept_score =
      kth_largest(scores, std::min<int64_t>(min_keep, static_cast<int64_t>(scores.size())));
  for (size_t j = 0; j < live.size(); ++j) {
    if (probs[j] < threshold && scores[live[j]] < kept_score) scores[live[j]] = kNegInf;
  }
}

// TypicalLogitsWarper: the tokens ordered by how far their information (-log p) lies from the
// entropy, kept in that order until their probabilities reach `mass` (the token that crosses it
// and every one as close as it included; at least the first min_keep).
void keep_typical(std::span<float> scores, const std::vector<int64_t>& live, float mass,
                  int64_t min_keep) {
  const std::vector<double> probs = live_softmax(scores, live);
  double entropy = 0;
  for (double q : probs) {
    if (q > 0) entropy -= q * std::log(q);
  }
  std::vector<double> distance(live.size());
  for (size_t j = 0; j < live.size(); ++j) {
    distance[j] = probs[j] > 0 ? std::fabs(-std::log(probs[j]) - entropy)
                               : std::numeric_limits<double>::infinity();
  }
  std::vector<size_t> order(live.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return distance[a] < distance[b]; });
  // last_ind = how many cumulative sums stay below the mass (clamped to the last index); the
  // cut is that entry's distance.
  double cumulative = 0;
  size_t below = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    cumulative += probs[order[i]];
    if (cumulative < mass) ++below;
  }
  const double cut = distance[order[std::min(below, order.size() - 1)]];
  for (size_t i = static_cast<size_t>(min_keep); i < order.size(); ++i) {  // the first stay
    if (distance[order[i]] > cut) scores[live[order[i]]] = kNegInf;
  }
}

}  // namespace

void apply_warpers(std::span<float> scores, const SamplingParams& p) {
  const auto n = static_cast<int64_t>(scores.size());
  if (p.temperature != 1.0f) {
    for (float& s : scores) s /= p.temperature;
  }
  const int64_t top_k = p.top_k > 0 ? std::max(p.top_k, p.min_tokens_to_keep) : 0;
  if (top_k > 0 && top_k < n) {
    const float threshold = kth_largest(scores, top_k);
    for (float& s : scores) {
      if (s < threshold) s = kNegInf;
    }
  }
  std::vector<int64_t> live = live_tokens(scores);
  if (p.top_p < 1.0f && !live.empty()) {
    keep_top_p(scores, live, live_softmax(scores, live), p.top_p, p.min_tokens_to_keep);
    live = live_tokens(scores);
  }
  if (p.min_p > 0.0f && !live.empty()) {
    const std::vector<double> probs = live_softmax(scores, live);
    const double top = *std::max_element(probs.begin(), probs.end());
    const double threshold = p.min_p * top;
    // The min_tokens_to_keep most likely stay whatever their probability.
    const float kept_score = kth_largest(
        scores, std::min<int64_t>(p.min_tokens_to_keep, static_cast<int64_t>(scores.size())));
    for (size_t j = 0; j < live.size(); ++j) {
      if (probs[j] < threshold && scores[live[j]] < kept_score) scores[live[j]] = kNegInf;
    }
  }
  if (p.typical_p < 1.0f) {
    live = live_tokens(scores);
    if (!live.empty()) keep_typical(scores, live, p.typical_p, p.min_tokens_to_keep);
  }
  if (p.epsilon_cutoff > 0.0f && p.epsilon_cutoff < 1.0f) {
    live = live_tokens(scores);
    if (!live.empty()) {
      cut_below(scores, live, live_softmax(scores, live), p.epsilon_cutoff, p.min_tokens_to_keep);
    }
  }
  if (p.eta_cutoff > 0.0f && p.eta_cutoff < 1.0f) {
    live = live_tokens(scores);
    if (!live.empty()) {
      // EtaLogitsWarper: below min(eta, sqrt(eta) * exp(-entropy)).
      const std::vector<double> probs = live_softmax(scores, live);
      double entropy = 0;
      for (double q : probs) {
        if (q > 0) entropy -= q * std::log(q);
      }
      const double eta = p.eta_cutoff;
      cut_below(scores, live, probs, std::min(eta, std::sqrt(eta) * std::exp(-entropy)),
                p.min_tokens_to_keep);
    }
  }
}

int64_t argmax(std::span<const float> scores) {
  return std::max_element(scores.begin(), scores.end()) - scores.begin();
}

double draw_uniform(std::mt19937_64& rng) {
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

int64_t sample(std::span<const float> scores, std::mt19937_64& rng) {
  return sample(scores, draw_uniform(rng));
}

int64_t sample(std::span<const float> scores, double u) {
  const std::vector<int64_t> live = live_tokens(scores);
  const std::vector<double> probs = live_softmax(scores, live);
  double cumulative = 0;
  int64_t last = 0;
  for (size_t j = 0; j < live.size(); ++j) {
    if (probs[j] == 0.0) continue;
    cumulative += probs[j];
    last = live[j];
    if (u < cumulative) return last;
  }
  return last;  // rounding left u above the total: the last token with mass
}

namespace {

// How many of the candidates survive the temperature and top-k (the top_k largest and the ones
// tied with the top_k-th after the temperature), or nothing when they cannot decide the token.
std::optional<size_t> candidate_survivors(std::span<const float> values,
                                          std::span<const int64_t> indices,
                                          const SamplingParams& p) {
  const auto k = static_cast<size_t>(p.top_k);
  if (p.top_k < 1 || values.size() < k + 1 || indices.size() != values.size()) {
    throw Error("sample_from_candidates: expected at least top_k + 1 = " + std::to_string(k + 1) +
                " candidates and as many indices, got " + std::to_string(values.size()) + " and " +
                std::to_string(indices.size()));
  }
  for (float v : values) {
    if (std::isnan(v)) return std::nullopt;
  }
  // apply_warpers divides every score by the temperature before top-k, which keeps every
  // token at or above the k-th largest: ties at the cut (bf16 logits have them often) and
  // scores the division made equal. Those survivors are the candidates down to the first
  // one below the k-th; when every candidate is a survivor, more may lie past them.
  const auto warm = [&](float v) { return p.temperature != 1.0f ? v / p.temperature : v; };
  const float kth = warm(values[k - 1]);
  size_t survivors = k;
  while (survivors < values.size() && warm(values[survivors]) >= kth) ++survivors;
  if (survivors == values.size()) return std::nullopt;
  return survivors;
}

}  // namespace

std::optional<int64_t> sample_from_candidates(std::span<const float> values,
                                              std::span<const int64_t> indices,
                                              const SamplingParams& p, std::mt19937_64& rng) {
  if (!candidate_survivors(values, indices, p)) return std::nullopt;  // and no draw
  return sample_from_candidates(values, indices, p, draw_uniform(rng));
}

std::optional<int64_t> sample_from_candidates(std::span<const float> values,
                                              std::span<const int64_t> indices,
                                              const SamplingParams& p, double u) {
  const std::optional<size_t> found = candidate_survivors(values, indices, p);
  if (!found) return std::nullopt;
  const size_t survivors = *found;
  // The survivors in index order, as the whole row's live tokens would be.
  std::vector<size_t> order(survivors);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return indices[a] < indices[b]; });
  std::vector<float> scores(survivors);
  for (size_t j = 0; j < survivors; ++j) scores[j] = values[order[j]];
  apply_warpers(scores, p);  // top-k keeps all survivors; temperature, top-p, min-p as on the row
  return indices[order[static_cast<size_t>(sample(scores, u))]];
}

void log_softmax(std::span<float> row) {
  const float m = *std::max_element(row.begin(), row.end());
  if (m == -std::numeric_limits<float>::infinity()) return;
  double sum = 0;
  for (float v : row) sum += static_cast<double>(std::exp(v - m));
  const auto log_sum = static_cast<float>(std::log(sum));
  for (float& v : row) v = v - m - log_sum;
}

std::vector<float> softmax(std::span<const float> scores) {
  float m = -std::numeric_limits<float>::infinity();
  for (float s : scores) m = std::max(m, s);
  std::vector<float> p(scores.size(), 0.0f);
  double total = 0;
  for (size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] == -std::numeric_limits<float>::infinity()) continue;
    p[i] = std::exp(scores[i] - m);
    total += p[i];
  }
  for (float& x : p) x = static_cast<float>(x / total);
  return p;
}

}  // namespace anvil
