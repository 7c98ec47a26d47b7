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
#include <optional>
#include <span>
#include <vector>

namespace anvil {

class CausalLM;

struct PerplexityOptions {
  /// Tokens a window holds at most (the model's context, or less).
  int64_t max_length = 1024;
  /// Tokens between two windows' beginnings, 1..max_length.
  int64_t stride = 512;
  /// Windows run together as the rows of one step (windows of the same length and first scored
  /// position; the results do not depend on it beyond rounding). 0: automatic, one on the
  /// CPU, elsewhere up to 8,192 tokens a step within 1 GiB of float32 logits.
  int64_t batch_size = 0;
  /// A reference model to compare against (say, the checkpoint a quantized model was made from;
  /// llama.cpp's --kl-divergence): every window runs through it too, and the result's
  /// `reference` holds its perplexity and, per scored token, the KL divergence from its
  /// next-token distribution to the model's. It needs the same vocabulary size; on another
  /// device than the model's, its logits are copied over.
  const CausalLM* reference = nullptr;
  /// llama.cpp's perplexity instead of transformers' windows (to compare with its figures):
  /// chunks of max_length tokens side by side (stride unused; the last partial chunk left out;
  /// at least two chunks' tokens), each scoring only the tokens after its first half, its first
  /// token replaced by `chunk_bos` where that is set (llama.cpp does so where the vocabulary
  /// adds a BOS).
  bool llama_cpp_chunks = false;
  int64_t chunk_bos = -1;  ///< with llama_cpp_chunks: each chunk's first id (-1: as it is)
};

/// One window: tokens [begin, end) run, the last `scored` of them scored (each from the
/// logits at the position before it), with their negative log-likelihoods' sum.
struct PerplexityWindow {
  int64_t begin = 0, end = 0, scored = 0;
  double nll_sum = 0.0;
  double nll_sq_sum = 0.0;  ///< the scored tokens' squared negative log-likelihoods, summed
};

/// The model against PerplexityOptions::reference, over the same scored tokens.
struct PerplexityReference {
  double nll_sum = 0.0, nll_sq_sum = 0.0;  ///< the reference's, as PerplexityResult's
  /// Per scored token, in order: KL(P_reference || P_model) of the next-token distributions
  /// (natural log; 0 where they agree).
  std::vector<float> kl;
  int64_t same_top = 0;  ///< scored tokens where both models' most likely token is the same
  /// exp(nll_sum / tokens): the reference's perplexity.
  double perplexity() const;
  /// Its standard error, as PerplexityResult::perplexity_error.
  double perplexity_error() const;
  double kl_mean() const;
  /// The mean's standard error (the tokens' spread / sqrt(tokens - 1)).
  double kl_error() const;
  /// The q-quantile of the tokens' KL divergences (0: the least, 0.5: the median, 1: the
  /// largest), by linear interpolation between order statistics (numpy's default).
  double kl_quantile(double q) const;
  /// same_top / tokens.
  double same_top_fraction() const;
};

struct PerplexityResult {
  std::vector<PerplexityWindow> windows;
  double nll_sum = 0.0;  ///< natural-log negative log-likelihood, summed over the scored tokens
  /// Tokens scored: every one but the first where windows overlap (stride < max_length); with
  /// windows side by side, each window's first token is context only.
  int64_t tokens = 0;
  double nll_sq_sum = 0.0;  ///< their squares, summed (for the error below)
  /// exp(nll_sum / tokens).
  double perplexity() const;
  /// The perplexity's standard error, as llama.cpp's perplexity reports it ("PPL = x +/- e"):
  /// the mean negative log-likelihood's standard error (the tokens' spread / sqrt(tokens - 1))
  /// times the perplexity. 0 for fewer than two tokens.
  double perplexity_error() const;
  /// Set with PerplexityOptions::reference.
  std::optional<PerplexityReference> reference;
};

/// Runs every window of `ids` through the model (batch_size windows a step, a fresh cache
/// each) and sums the scored tokens' -log p. Only the positions that score a token go through
/// the head, and their losses (ops::token_nll: the log-softmax of the float32 logits, its sum
/// of exponentials in double) are taken on the model's device, so a window returns a float a
/// scored token. `on_window`, if set, is called after each window, in order. Throws
/// anvil::Error for fewer than two ids, an id outside the vocabulary, a max_length below 2, a
/// stride outside 1..max_length, a negative batch_size or a reference of another vocabulary
/// size.
PerplexityResult perplexity(const CausalLM& model, std::span<const int64_t> ids,
                            const PerplexityOptions& options = {},
                            const std::function<void(const PerplexityWindow&)>& on_window = {});

/// -log softmax(logits)[target], in double precision.
double token_nll(std::span<const float> logits, int64_t target);

}  // namespace anvil
