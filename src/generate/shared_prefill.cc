// The prompt step run once per distinct row of a batch.
#include "generate/shared_prefill.h"

#include <map>
#include <utility>

#include "anvil/error.h"

namespace anvil {

DistinctRows distinct_rows(const std::vector<std::vector<int64_t>>& ids,
                           const std::vector<std::vector<int64_t>>& mask) {
  DistinctRows d;
  std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, int64_t> seen;
  for (size_t r = 0; r < ids.size(); ++r) {
    const auto [at, fresh] =
        seen.emplace(std::pair(ids[r], mask[r]), static_cast<int64_t>(d.rows.size()));
    if (fresh) d.rows.push_back(static_cast<int64_t>(r));
    d.of.push_back(at->second);
  }
  return d;
}

Tensor prefill_distinct(const Decoder& decoder, const StepInput& step, const DistinctRows& distinct,
                        KvCache& cache) {
  if (cache.length != 0 || step.all_logits || step.device_ids.defined()) {
    throw Error("prefill_distinct: takes a prompt step of host ids on an empty cache");
  }
  const int64_t seq = step.seq, n = static_cast<int64_t>(distinct.rows.size());
  StepInput once;
  once.batch = n;
  once.seq = seq;
  for (int64_t r : distinct.rows) {
    const auto from = [&](const auto& v) { return v.begin() + r * seq; };
    once.ids.insert(once.ids.end(), from(step.ids), from(step.ids) + seq);
    once.positions.insert(once.positions.end(), from(step.positions), from(step.positions) + seq);
    once.key_mask.insert(once.key_mask.end(), from(step.key_mask), from(step.key_mask) + seq);
  }
  KvCache prompt_cache = decoder.new_cache(n, seq);
  const Tensor logits = decoder.forward(once, prompt_cache);  // [n, 1, vocab]
  copy_cache_rows(prompt_cache, cache, distinct.of, seq);
  cache.length = seq;
  Tensor out = Tensor::empty({step.batch, 1, logits.size(-1)}, logits.dtype(), logits.device());
  for (int64_t r = 0; r < step.batch; ++r) {
    out.select(0, r).copy_from(logits.select(0, distinct.of[static_cast<size_t>(r)]));
  }
  return out;
}

}  // namespace anvil
