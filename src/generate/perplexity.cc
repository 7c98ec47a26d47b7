// Perplexity by transformers' sliding windows (include/anvil/perplexity.h).
#include "anvil/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "anvil/error.h"
#include "anvil/model.h"
#include "models/decoder.h"
#include "ops/ops.h"

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

namespace {

// The standard error of the mean of n values from their sum and sum of squares.
double standard_error(double sum, double sq_sum, int64_t n) {
  if (n < 2) return 0.0;
  const auto count = static_cast<double>(n);
  const double mean = sum / count;
  return std::sqrt(std::max(0.0, sq_sum / count - mean * mean) / (count - 1.0));
}

}  // namespace

double PerplexityResult::perplexity_error() const {
  return tokens < 2 ? 0.0 : standard_error(nll_sum, nll_sq_sum, tokens) * perplexity();
}

double PerplexityReference::perplexity() const {
  return std::exp(nll_sum / static_cast<double>(kl.size()));
}

double PerplexityReference::perplexity_error() const {
  const auto n = static_cast<int64_t>(kl.size());
  return n < 2 ? 0.0 : standard_error(nll_sum, nll_sq_sum, n) * perplexity();
}

double PerplexityReference::kl_mean() const {
  double sum = 0.0;
  for (float v : kl) sum += v;
  return sum / static_cast<double>(kl.size());
}

double PerplexityReference::kl_error() const {
  double sum = 0.0, sq_sum = 0.0;
  for (float v : kl) {
    sum += v;
    sq_sum += static_cast<double>(v) * v;
  }
  return standard_error(sum, sq_sum, static_cast<int64_t>(kl.size()));
}

double PerplexityReference::kl_quantile(double q) const {
  if (kl.empty()) return NAN;
  std::vector<float> sorted = kl;
  std::sort(sorted.begin(), sorted.end());
  const double at = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<size_t>(std::floor(at));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double frac = at - static_cast<double>(below);
  return sorted[below] + frac * (static_cast<double>(sorted[above]) - sorted[below]);
}

double PerplexityReference::same_top_fraction() const {
  return static_cast<double>(same_top) / static_cast<double>(kl.size());
}

namespace {

void check_arguments(std::span<const int64_t> ids, const PerplexityOptions& options,
                     int64_t vocab) {
  const auto n = static_cast<int64_t>(ids.size());
  if (n < 2) {
    throw Error("perplexity: " + std::to_string(n) +
                " token(s); at least two are needed (the first is only context)");
  }
  if (options.max_length < 2) {
    throw Error("perplexity: max_length " + std::to_string(options.max_length) +
                " must be at least 2");
  }
  if (options.llama_cpp_chunks) {
    if (n < 2 * options.max_length) {  // as llama.cpp asks
      throw Error("perplexity: " + std::to_string(n) + " tokens; llama.cpp's chunks of " +
                  std::to_string(options.max_length) + " need at least " +
                  std::to_string(2 * options.max_length));
    }
    if (options.max_length < 4) {
      throw Error("perplexity: llama.cpp's chunks need a max_length of at least 4, got " +
                  std::to_string(options.max_length));
    }
    if (options.chunk_bos >= vocab) {
      throw Error("perplexity: chunk_bos " + std::to_string(options.chunk_bos) +
                  " is out of range for the model's " + std::to_string(vocab) +
                  "-token vocabulary");
    }
  } else if (options.stride < 1 || options.stride > options.max_length) {
    throw Error("perplexity: stride " + std::to_string(options.stride) + " must be in 1.." +
                std::to_string(options.max_length) + " (max_length)");
  }
  if (options.reference && options.reference->config().vocab_size != vocab) {
    throw Error("perplexity: the reference model's vocabulary (" +
                std::to_string(options.reference->config().vocab_size) +
                " ids) differs from the model's (" + std::to_string(vocab) +
                "): the two distributions cannot be compared");
  }
  if (options.batch_size < 0) {
    throw Error("perplexity: batch_size " + std::to_string(options.batch_size) +
                " must be 0 (automatic) or more");
  }
  // Every id up front: the last ones are only ever targets, which a device cannot refuse.
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = ids[static_cast<size_t>(i)];
    if (id < 0 || id >= vocab) {
      throw Error("perplexity: token id " + std::to_string(id) + " at position " +
                  std::to_string(i) + " is out of range for the model's " + std::to_string(vocab) +
                  "-token vocabulary");
    }
  }
}

// The guide's windows: tokens [begin, end) run, [first, end) scored.
struct Window {
  int64_t begin, end, first;
};

std::vector<Window> plan_windows(int64_t n, const PerplexityOptions& options) {
  std::vector<Window> windows;
  if (options.llama_cpp_chunks) {
    // llama.cpp's perplexity: whole chunks side by side, each scoring the tokens after its first
    // half (logits from position max_length / 2 on), the remainder left out.
    const int64_t length = options.max_length;
    for (int64_t begin = 0; begin + length <= n; begin += length) {
      windows.push_back({begin, begin + length, begin + length / 2 + 1});
    }
    return windows;
  }
  int64_t prev_end = 0;
  for (int64_t begin = 0; begin < n; begin += options.stride) {
    const int64_t end = std::min(begin + options.max_length, n);
    // The guide's labels are [prev_end, end); the shift drops the window's first position.
    windows.push_back({begin, end, std::max(prev_end, begin + 1)});
    prev_end = end;
    if (end == n) break;
  }
  return windows;
}

// Windows a step runs together when options.batch_size is 0: one on the CPU (its products are
// as fast on one window's rows as on several); elsewhere up to 8,192 tokens a step, within
// 1 GiB of float32 logits.
int64_t automatic_batch(const CausalLM& model, int64_t length, int64_t logit_rows, bool reference) {
  if (model.device().type == DeviceType::cpu) return 1;
  // A reference's logits are held beside the model's.
  const int64_t logit_bytes = logit_rows * model.config().vocab_size * 4 * (reference ? 2 : 1);
  return std::max<int64_t>(1, std::min(8192 / length, (int64_t{1} << 30) / logit_bytes));
}

// The per-token losses of a step's logits [rows, kept, vocab] (0 where the target is -1), on
// the host.
std::vector<float> token_losses(const Tensor& logits, const Tensor& targets) {
  const int64_t n = logits.size(0) * logits.size(1);
  const Tensor losses = Tensor::empty({n}, DType::f32, logits.device());
  ops::token_nll(logits.view({n, logits.size(2)}), targets, losses);
  return losses.to_f32_vector();
}

// The reference's step beside the model's: its losses summed into `ref`, and per scored
// position the two distributions' KL divergence and whether their top picks agree.
void compare_with_reference(const CausalLM& model, const CausalLM& reference, const StepInput& step,
                            Tensor logits, const Tensor& targets,
                            const std::vector<int64_t>& target_ids, PerplexityReference& ref) {
  if (&reference.decoder() == &model.decoder()) {
    // One decoder: its next step overwrites the logits it handed back.
    Tensor copy = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
    copy.copy_from(logits);
    logits = copy;
  }
  KvCache cache = reference.decoder().new_cache(step.batch, step.seq);
  Tensor ref_logits = reference.decoder().forward(step, cache);
  if (ref_logits.device() != logits.device()) ref_logits = ref_logits.to(logits.device());
  const std::vector<float> ref_losses = token_losses(ref_logits, targets);
  const int64_t n = logits.size(0) * logits.size(1), vocab = logits.size(2);
  const Tensor kl = Tensor::empty({n}, DType::f32, logits.device());
  const Tensor same = Tensor::empty({n}, DType::i64, logits.device());
  ops::token_kl(ref_logits.view({n, vocab}), logits.view({n, vocab}), kl, same);
  const std::vector<float> kl_host = kl.to_f32_vector();
  const std::vector<int64_t> same_host = same.to_i64_vector();
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    if (target_ids[i] < 0) continue;  // a window's last position scores nothing
    ref.nll_sum += ref_losses[i];
    ref.nll_sq_sum += static_cast<double>(ref_losses[i]) * ref_losses[i];
    ref.kl.push_back(kl_host[i]);
    ref.same_top += same_host[i];
  }
}

// Runs windows of equal length and equal first scored offset as one step of rows, their
// positions' losses (and their squares) summed per window; with a reference, compares them.
void score_windows(const CausalLM& model, const CausalLM* reference, std::span<const int64_t> ids,
                   std::span<const Window> windows, int64_t first_id,
                   std::vector<PerplexityWindow>& done, std::optional<PerplexityReference>& ref) {
  const auto rows = static_cast<int64_t>(windows.size());
  const int64_t length = windows[0].end - windows[0].begin;
  // The logits at position p score the token at p + 1: from the one before the first scored
  // token to the window's last, whose row has no target (-1: ignored).
  const int64_t from = windows[0].first - windows[0].begin - 1, kept = length - from;
  StepInput step;
  step.batch = rows;
  step.seq = length;
  step.all_logits = true;
  step.logits_from = from;
  std::vector<int64_t> targets;
  targets.reserve(static_cast<size_t>(rows * kept));
  for (const Window& w : windows) {
    step.ids.insert(step.ids.end(), ids.begin() + w.begin, ids.begin() + w.end);
    if (first_id >= 0) step.ids[step.ids.size() - static_cast<size_t>(length)] = first_id;
    for (int64_t p = 0; p < length; ++p) step.positions.push_back(static_cast<int32_t>(p));
    for (int64_t p = w.begin + from + 1; p < w.end; ++p) targets.push_back(ids[p]);
    targets.push_back(-1);
  }
  step.key_mask.assign(static_cast<size_t>(rows * length), 1);
  const Decoder& decoder = model.decoder();
  KvCache cache = decoder.new_cache(rows, length);
  const Tensor logits = decoder.forward(step, cache);  // [rows, kept, vocab], float32, device
  const Tensor target_ids = Tensor::from_i64(targets, {rows * kept}).to(decoder.device());
  const std::vector<float> loss = token_losses(logits, target_ids);
  for (int64_t r = 0; r < rows; ++r) {
    PerplexityWindow& w = done[static_cast<size_t>(r)];
    for (int64_t i = r * kept; i < (r + 1) * kept; ++i) {
      w.nll_sum += loss[i];
      w.nll_sq_sum += static_cast<double>(loss[i]) * loss[i];
    }
  }
  if (reference) compare_with_reference(model, *reference, step, logits, target_ids, targets, *ref);
}

}  // namespace

PerplexityResult perplexity(const CausalLM& model, std::span<const int64_t> ids,
                            const PerplexityOptions& options,
                            const std::function<void(const PerplexityWindow&)>& on_window) {
  check_arguments(ids, options, model.config().vocab_size);
  const std::vector<Window> windows = plan_windows(static_cast<int64_t>(ids.size()), options);
  PerplexityResult result;
  if (options.reference) result.reference.emplace();
  for (size_t i = 0; i < windows.size();) {
    // The run of windows that share a shape, up to the batch size.
    const Window& w = windows[i];
    const int64_t length = w.end - w.begin, offset = w.first - w.begin;
    const int64_t batch =
        options.batch_size > 0
            ? options.batch_size
            : automatic_batch(model, length, length - offset + 1, options.reference != nullptr);
    size_t j = i + 1;
    while (j < windows.size() && static_cast<int64_t>(j - i) < batch &&
           windows[j].end - windows[j].begin == length &&
           windows[j].first - windows[j].begin == offset) {
      ++j;
    }
    std::vector<PerplexityWindow> done;
    for (size_t k = i; k < j; ++k) {
      const Window& v = windows[k];
      done.push_back({v.begin, v.end, std::max<int64_t>(0, v.end - v.first)});
    }
    // (A last window of one token scores nothing.)
    if (w.first < w.end) {
      score_windows(model, options.reference, ids, std::span(windows).subspan(i, j - i),
                    options.llama_cpp_chunks ? options.chunk_bos : -1, done, result.reference);
    }
    for (const PerplexityWindow& v : done) {
      result.nll_sum += v.nll_sum;
      result.nll_sq_sum += v.nll_sq_sum;
      result.tokens += v.scored;
      result.windows.push_back(v);
      if (on_window) on_window(v);
    }
    i = j;
  }
  return result;
}

}  // namespace anvil
