#include "generate/prompt_lookup.h"

#include <algorithm>

namespace anvil {

std::vector<int64_t> lookup_draft(const std::vector<int64_t>& ids, int64_t max_ngram,
                                  int64_t max_tokens, const std::vector<int64_t>& eos) {
  const auto size = static_cast<int64_t>(ids.size());
  if (max_tokens < 1) return {};
  for (int64_t n = std::min(max_ngram, size - 1); n >= 1; --n) {
    const auto tail = ids.end() - n;
    // The last window is the n-gram itself, with nothing after it.
    for (int64_t at = 0; at + n < size; ++at) {
      if (!std::equal(tail, ids.end(), ids.begin() + at)) continue;
      const int64_t from = at + n, to = std::min(from + max_tokens, size);
      std::vector<int64_t> draft(ids.begin() + from, ids.begin() + to);
      // A draft that ran past an eos would let the model keep tokens after the end.
      const auto end = std::find_first_of(draft.begin(), draft.end(), eos.begin(), eos.end());
      draft.erase(end, draft.end());
      return draft;  // the first match decides, even when its draft is cut to nothing
    }
  }
  return {};
}

LookupDrafter::LookupDrafter(const GenerationSettings& settings) : settings_(settings) {}

Draft LookupDrafter::draft(const std::vector<int64_t>& seq, int64_t, int64_t max_tokens) {
  return Draft{lookup_draft(seq, settings_.max_matching_ngram,
                            std::min(settings_.prompt_lookup, max_tokens), settings_.eos),
               {}};
}

}  // namespace anvil
