#include "generate/text_bridge_drafter.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <utility>

#include "anvil/error.h"

namespace anvil {
namespace {

// How far back the draft's text is joined to the sequence's own tokens, and how much text
// before those is decoded with them (decoders read context: SentencePiece's first space).
constexpr int64_t kMaxJoinTokens = 8;
constexpr int64_t kJoinContext = 16;
// How much of the assistant's text stays open to re-encoding each step (bytes).
constexpr size_t kFinalMargin = 256;

std::span<const int64_t> unpadded(const std::vector<int64_t>& ids, int64_t padding) {
  return std::span<const int64_t>(ids).subspan(static_cast<size_t>(padding));
}

// The assistant's cache in its own ids: the prompt as it encodes it, then the new tokens and a
// draft at the prompt's ratio of assistant ids to the model's, twice over; at most its context
// (past that it drafts nothing).
int64_t assistant_capacity(const Tokenizer& target, const Tokenizer& drafting,
                           const Decoder& assistant, const std::vector<int64_t>& prompt,
                           int64_t padding, int64_t max_new, int64_t tokens) {
  const std::span<const int64_t> ids = unpadded(prompt, padding);
  const auto encoded = static_cast<int64_t>(drafting.encode(target.decode(ids, true), true).size());
  const double ratio = std::max(
      1.0, static_cast<double>(encoded) / static_cast<double>(std::max<size_t>(1, ids.size())));
  const int64_t want =
      encoded +
      static_cast<int64_t>(std::ceil(2.0 * ratio * static_cast<double>(max_new + tokens))) + 16;
  const int64_t context = assistant.config().max_position_embeddings;
  return context > 0 ? std::min(want, context) : want;
}

}  // namespace

GenerationSettings bridged_assistant_settings(const GenerationSettings& call,
                                              std::vector<int64_t> eos) {
  GenerationSettings s;
  s.sampling.do_sample = false;
  s.max_new = call.max_new;
  s.eos = std::move(eos);
  s.assistant_tokens = call.assistant_tokens;
  s.assistant_schedule = call.assistant_schedule;
  s.assistant_confidence_threshold = call.assistant_confidence_threshold;
  s.started = call.started;
  return s;
}

TextBridgeDrafter::TextBridgeDrafter(const Tokenizer& target, const Tokenizer& drafting,
                                     const Decoder& assistant, const GenerationSettings& settings,
                                     std::vector<int64_t> eos, int64_t padding,
                                     const std::vector<int64_t>& prompt, uint64_t seed,
                                     int64_t tokens, int64_t vocab)
    : target_(target),
      drafting_(drafting),
      settings_(bridged_assistant_settings(settings, std::move(eos))),
      padding_(padding),
      vocab_(vocab),
      assistant_vocab_(assistant.config().vocab_size),
      capacity_(assistant_capacity(target, drafting, assistant, prompt, padding, settings.max_new,
                                   settings.assistant_tokens)),
      inner_(assistant, settings_, {}, capacity_, assistant.config().vocab_size, seed, tokens) {}

Draft TextBridgeDrafter::draft(const std::vector<int64_t>& seq, int64_t t, int64_t max_tokens) {
  Draft out;
  if (max_tokens < 1) return out;
  const std::vector<int64_t> theirs = assistant_ids(text_of(seq));
  for (int64_t id : theirs) {
    if (id < 0 || id >= assistant_vocab_) {
      throw Error("assistant_tokenizer: gives id " + std::to_string(id) +
                  ", outside the assistant model's vocabulary of " +
                  std::to_string(assistant_vocab_) + " (is it the assistant's own tokenizer?)");
    }
  }
  const int64_t room = capacity_ - static_cast<int64_t>(theirs.size());
  if (theirs.empty() || room < 2) return out;  // the assistant's cache is full: no more drafts
  const Draft drafted = inner_.draft(theirs, t, std::min(max_tokens, room - 1));
  if (drafted.tokens.empty()) return out;
  const std::string more = drafting_.decode(drafted.tokens, true);
  if (more.empty()) return out;
  std::vector<int64_t> ids = target_ids_after(seq, more);
  // Ids the model has no row for (a tokenizer larger than its vocabulary) end the draft.
  const auto past =
      std::find_if(ids.begin(), ids.end(), [&](int64_t id) { return id < 0 || id >= vocab_; });
  ids.erase(past, ids.end());
  if (static_cast<int64_t>(ids.size()) > max_tokens) ids.resize(static_cast<size_t>(max_tokens));
  out.tokens = std::move(ids);
  return out;
}

const std::string& TextBridgeDrafter::text_of(const std::vector<int64_t>& seq) {
  const std::span<const int64_t> ids = unpadded(seq, padding_);
  const bool extends = !seen_.empty() && seen_.size() <= ids.size() &&
                       std::equal(seen_.begin(), seen_.end(), ids.begin());
  if (extends) {
    const size_t from = seen_.size() - std::min<size_t>(seen_.size(), kJoinContext);
    const std::string with = target_.decode(ids.subspan(from), true);
    const std::string without = target_.decode(ids.subspan(from, seen_.size() - from), true);
    if (with.compare(0, without.size(), without) == 0 && text_.size() >= without.size() &&
        text_.compare(text_.size() - without.size(), without.size(), without) == 0) {
      text_ += with.substr(without.size());
      seen_.assign(ids.begin(), ids.end());
      return text_;
    }
  }
  text_ = target_.decode(ids, true);  // the first call, or decoding that reads further back
  seen_.assign(ids.begin(), ids.end());
  return text_;
}

std::vector<int64_t> TextBridgeDrafter::assistant_ids(const std::string& text) {
  if (text.compare(0, done_text_.size(), done_text_) != 0) {
    done_text_.clear();
    done_ids_.clear();
  }
  const std::string rest = text.substr(done_text_.size());
  std::vector<int64_t> ids = done_ids_;
  const std::vector<int64_t> more = drafting_.encode(rest, done_text_.empty());
  ids.insert(ids.end(), more.begin(), more.end());
  // Finalise the rest up to a space kFinalMargin bytes or more before its end: text appended
  // later starts past that space, where a byte-level pre-tokenizer splits anyway.
  if (rest.size() > 2 * kFinalMargin) {
    const size_t cut = rest.rfind(' ', rest.size() - kFinalMargin);
    if (cut != std::string::npos && cut > 0) {
      const std::vector<int64_t> part = drafting_.encode(rest.substr(0, cut), done_text_.empty());
      done_ids_.insert(done_ids_.end(), part.begin(), part.end());
      done_text_ += rest.substr(0, cut);
    }
  }
  return ids;
}

std::vector<int64_t> TextBridgeDrafter::target_ids_after(const std::vector<int64_t>& seq,
                                                         const std::string& text) const {
  const auto n = static_cast<int64_t>(seq.size()) - padding_;
  for (int64_t k = 1; k <= std::min(kMaxJoinTokens, n); ++k) {
    // The text of the last k tokens, read in the context of the few before them.
    const int64_t from = std::max<int64_t>(0, n - k - kJoinContext);
    const auto window = unpadded(seq, padding_).subspan(static_cast<size_t>(from));
    const std::string with = target_.decode(window, false);
    const std::string without = target_.decode(window.first(window.size() - k), false);
    if (with.compare(0, without.size(), without) != 0) continue;
    const std::vector<int64_t> ids = target_.encode(with.substr(without.size()) + text, false);
    if (static_cast<int64_t>(ids.size()) > k &&
        std::equal(ids.begin(), ids.begin() + k, seq.end() - k)) {
      return std::vector<int64_t>(ids.begin() + k, ids.end());
    }
  }
  return target_.encode(text, false);
}

}  // namespace anvil
