// Perplexity by transformers' sliding windows (include/anvil/perplexity.h).
#include "anvil/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "anvil/error.h"
#include "anvil/model.h"

namespace anvil {

double PerplexityResult::perplexity() const {
  return std::exp(nll_sum / static_cast<double>(tokens));
}

double token_nll(std::span<const float> logits, int64_t target) {
  if (target < 0 || static_cast<size_t>(target) >= logits.size()) {
    throw Error("perplexity: token id " + std::to_string(target) + " is outside the model's " +
                std::to_string(logits.size()) + "-token vocabulary");
  }
  double max = -INFINITY;
  for (float v : logits) max = std::max(max, static_cast<double>(v));
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  return max + std::log(sum) - static_cast<double>(logits[static_cast<size_t>(target)]);
}

PerplexityResult perplexity(const CausalLM& model, std::span<const int64_t> ids,
                            const PerplexityOptions& options,
                            const std::function<void(const PerplexityWindow&)>& on_window) {
  const auto n = static_cast<int64_t>(ids.size());
  if (n < 2) {
    throw Error("perplexity: " + std::to_string(n) +
                " token(s); at least two are needed (the first is only context)");
  }
  if (options.max_length < 2) {
    throw Error("perplexity: max_length " + std::to_string(options.max_length) +
                " must be at least 2");
  }
  if (options.stride < 1 || options.stride > options.max_length) {
    throw Error("perplexity: stride " + std::to_string(options.stride) + " must be in 1.." +
                std::to_string(options.max_length) + " (max_length)");
  }
  const int64_t vocab = model.config().vocab_size;
  PerplexityResult result;
  int64_t prev_end = 0;
  for (int64_t begin = 0; begin < n; begin += options.stride) {
    const int64_t end = std::min(begin + options.max_length, n);
    PerplexityWindow w{begin, end, 0, 0.0};
    // The guide's labels are [prev_end, end); the shift drops the window's first position.
    const int64_t first = std::max(prev_end, begin + 1);
    if (first < end) {
      Batch batch;
      batch.input_ids.emplace_back(ids.begin() + begin, ids.begin() + end);
      const Tensor logits = model.logits(batch);  // [1, end - begin, vocab], float32, host
      const auto* data = static_cast<const float*>(logits.raw());
      for (int64_t t = first; t < end; ++t) {
        const float* row = data + (t - 1 - begin) * vocab;
        w.nll_sum += token_nll({row, static_cast<size_t>(vocab)}, ids[static_cast<size_t>(t)]);
      }
      w.scored = end - first;
    }
    result.nll_sum += w.nll_sum;
    result.tokens += w.scored;
    result.windows.push_back(w);
    if (on_window) on_window(w);
    prev_end = end;
    if (end == n) break;
  }
  return result;
}

}  // namespace anvil
