#include "generate/prompt_lookup.h"

#include <algorithm>
#include <limits>

namespace anvil {

std::vector<int64_t> lookup_draft(const std::vector<int64_t>& ids, int64_t max_ngram,
                                  int64_t max_tokens, const std::vector<int64_t>& eos,
                                  const AllowedPrefix& allowed) {
  const auto size = static_cast<int64_t>(ids.size());
  if (max_tokens < 1) return {};
  for (int64_t n = std::min(max_ngram, size - 1); n >= 1; --n) {
    const auto tail = ids.end() - n;
    // The last window is the n-gram itself, with nothing after it.
    for (int64_t at = 0; at + n < size; ++at) {
      if (!std::equal(tail, ids.end(), ids.begin() + at)) continue;
      const int64_t from = at + n, to = std::min(from + max_tokens, size);
      std::vector<int64_t> draft(ids.begin() + from, ids.begin() + to);
      if (allowed) {
        draft.resize(std::min(draft.size(), allowed(draft)));
        if (draft.empty()) continue;  // nothing allowed here: the next place
      }
      // A draft that ran past an eos would let the model keep tokens after the end.
      const auto end = std::find_first_of(draft.begin(), draft.end(), eos.begin(), eos.end());
      draft.erase(end, draft.end());
      return draft;  // the first match decides, even when its draft is cut to nothing
    }
  }
  return {};
}

size_t processors_allow(const GenerationSettings& settings, const std::vector<int64_t>& seq,
                        int64_t t, int64_t padding, int64_t vocab,
                        const std::vector<int64_t>& draft) {
  const auto banned = [](float v) {
    return v == -std::numeric_limits<float>::infinity() ||
           v == std::numeric_limits<float>::lowest();
  };
  // The processors that can set a score to -inf; the others (repetition penalty, length decay,
  // the sampling warpers, which transformers does not run here) never ban a drafted token.
  const bool can_ban = settings.no_repeat_ngram_size > 0 || !settings.bad_words_ids.empty() ||
                       !settings.suppress_tokens.empty() ||
                       !settings.begin_suppress_tokens.empty() ||
                       !settings.forced_eos_token_ids.empty() || !settings.sequence_bias.empty() ||
                       settings.forced_bos_token_id || settings.prefix_allowed_tokens ||
                       !settings.logits_processors.empty();
  if (!can_ban) {
    // Then only min_new_tokens' eos suppression bans a token: no vocabulary-wide pass needed.
    for (size_t i = 0; i < draft.size(); ++i) {
      const bool eos =
          std::find(settings.eos.begin(), settings.eos.end(), draft[i]) != settings.eos.end();
      if (eos && t + static_cast<int64_t>(i) < settings.min_new) return i;
    }
    return draft.size();
  }
  std::vector<int64_t> row = seq;
  std::vector<float> ones(static_cast<size_t>(vocab));
  for (size_t i = 0; i < draft.size(); ++i) {
    std::fill(ones.begin(), ones.end(), 1.0f);
    settings.process(ones, row, padding, t + static_cast<int64_t>(i), 0);
    if (draft[i] < 0 || draft[i] >= vocab || banned(ones[static_cast<size_t>(draft[i])])) {
      return i;
    }
    row.push_back(draft[i]);
  }
  return draft.size();
}

LookupDrafter::LookupDrafter(const GenerationSettings& settings, int64_t padding, int64_t vocab)
    : settings_(settings), padding_(padding), vocab_(vocab) {}

Draft LookupDrafter::draft(const std::vector<int64_t>& seq, int64_t t, int64_t max_tokens) {
  const AllowedPrefix allowed = [&](const std::vector<int64_t>& draft) {
    return processors_allow(settings_, seq, t, padding_, vocab_, draft);
  };
  return Draft{lookup_draft(seq, settings_.max_matching_ngram,
                            std::min(settings_.prompt_lookup, max_tokens), settings_.eos, allowed),
               {}};
}

}  // namespace anvil
