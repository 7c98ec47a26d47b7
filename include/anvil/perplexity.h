/// @file perplexity.h
/// Perplexity of a token sequence, by the sliding-window method of transformers' guide
/// "Perplexity of fixed-length models": windows of at most `max_length` tokens begin every
/// `stride` tokens, and each window scores the tokens that no earlier window scored, with the
/// window's earlier tokens as their context (a stride below max_length gives every scored
/// token at least max_length - stride tokens of context).
///
///     auto r = anvil::perplexity(model, ids, {.max_length = 1024, .stride = 512});
///     std::printf("%.4f over %lld tokens\n", r.perplexity(), (long long)r.tokens);
///
/// Each scored token is counted once: the guide weighs each window's mean loss by its labels
/// less one, which is exact for a window whose scored tokens begin at its first position and
/// one short for the windows after it (their first label is not dropped by the shift). With
/// stride == max_length the two agree.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace anvil {

class CausalLM;

struct PerplexityOptions {
  /// Tokens a window holds at most (the model's context, or less to bound the logits' memory:
  /// a window's float32 logits take max_length x vocabulary x 4 bytes).
  int64_t max_length = 1024;
  /// Tokens between two windows' beginnings, 1..max_length.
  int64_t stride = 512;
};

/// One window: tokens [begin, end) run, the last `scored` of them scored (each from the
/// logits at the position before it), with their negative log-likelihoods' sum.
struct PerplexityWindow {
  int64_t begin = 0, end = 0, scored = 0;
  double nll_sum = 0.0;
};

struct PerplexityResult {
  std::vector<PerplexityWindow> windows;
  double nll_sum = 0.0;  ///< natural-log negative log-likelihood, summed over the scored tokens
  /// Tokens scored: every one but the first where windows overlap (stride < max_length); with
  /// windows side by side, each window's first token is context only.
  int64_t tokens = 0;
  /// exp(nll_sum / tokens).
  double perplexity() const;
};

/// Runs every window of `ids` through the model (a batch of one, a fresh cache each) and sums
/// the scored tokens' -log p from the float32 logits, the log-softmax in double precision.
/// `on_window`, if set, is called after each window. Throws anvil::Error for fewer than two
/// ids, a max_length below 2 or a stride outside 1..max_length.
PerplexityResult perplexity(const CausalLM& model, std::span<const int64_t> ids,
                            const PerplexityOptions& options = {},
                            const std::function<void(const PerplexityWindow&)>& on_window = {});

/// -log softmax(logits)[target], in double precision.
double token_nll(std::span<const float> logits, int64_t target);

}  // namespace anvil
