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

double PerplexityResult::perplexity_error() const {
  if (tokens < 2) return 0.0;
  const auto n = static_cast<double>(tokens);
  const double mean = nll_sum / n;
  const double variance = std::max(0.0, nll_sq_sum / n - mean * mean);
  return std::sqrt(variance / (n - 1.0)) * perplexity();
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
  if (options.stride < 1 || options.stride > options.max_length) {
    throw Error("perplexity: stride " + std::to_string(options.stride) + " must be in 1.." +
                std::to_string(options.max_length) + " (max_length)");
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
int64_t automatic_batch(const CausalLM& model, int64_t length, int64_t logit_rows) {
  if (model.device().type == DeviceType::cpu) return 1;
  const int64_t logit_bytes = logit_rows * model.config().vocab_size * 4;
  return std::max<int64_t>(1, std::min(8192 / length, (int64_t{1} << 30) / logit_bytes));
}

// Runs windows of equal length and equal first scored offset as one step of rows, their
// positions' losses (and their squares) summed per window.
void score_windows(const Decoder& decoder, std::span<const int64_t> ids,
                   std::span<const Window> windows, std::vector<PerplexityWindow>& done) {
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
    for (int64_t p = 0; p < length; ++p) step.positions.push_back(static_cast<int32_t>(p));
    for (int64_t p = w.begin + from + 1; p < w.end; ++p) targets.push_back(ids[p]);
    targets.push_back(-1);
  }
  step.key_mask.assign(static_cast<size_t>(rows * length), 1);
  KvCache cache = decoder.new_cache(rows, length);
  const Tensor logits = decoder.forward(step, cache);  // [rows, kept, vocab], float32, device
  const Device device = decoder.device();
  const Tensor target_ids = Tensor::from_i64(targets, {rows * kept}).to(device);
  const Tensor losses = Tensor::empty({rows * kept}, DType::f32, device);
  ops::token_nll(logits.view({rows * kept, logits.size(2)}), target_ids, losses);
  const Tensor host = losses.to(Device::cpu());
  const float* loss = host.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    PerplexityWindow& w = done[static_cast<size_t>(r)];
    for (int64_t i = r * kept; i < (r + 1) * kept; ++i) {
      w.nll_sum += loss[i];
      w.nll_sq_sum += static_cast<double>(loss[i]) * loss[i];
    }
  }
}

}  // namespace

PerplexityResult perplexity(const CausalLM& model, std::span<const int64_t> ids,
                            const PerplexityOptions& options,
                            const std::function<void(const PerplexityWindow&)>& on_window) {
  check_arguments(ids, options, model.config().vocab_size);
  const std::vector<Window> windows = plan_windows(static_cast<int64_t>(ids.size()), options);
  PerplexityResult result;
  for (size_t i = 0; i < windows.size();) {
    // The run of windows that share a shape, up to the batch size.
    const Window& w = windows[i];
    const int64_t length = w.end - w.begin, offset = w.first - w.begin;
    const int64_t batch = options.batch_size > 0
                              ? options.batch_size
                              : automatic_batch(model, length, length - offset + 1);
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
    if (w.first < w.end)
      score_windows(model.decoder(), ids, std::span(windows).subspan(i, j - i), done);
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
