// Drafts from an assistant model of another tokenizer, through text (transformers' universal
// assisted decoding: generate(tokenizer=, assistant_tokenizer=)). Each step the sequence so far
// is decoded with the model's tokenizer and encoded with the assistant's, the assistant drafts
// greedily in its own ids (AssistantDrafter: its cache keeps the ids the re-encoded sequence
// still begins with), and its draft's text is encoded with the model's tokenizer again: after
// the sequence's last few tokens where that re-encoding gives them back unchanged (so a draft
// that continues the last word keeps the model's own split of it), else on its own. The draft
// carries no probabilities: a sampled step keeps drafted tokens while the model's own draws
// equal them, as with prompt lookup. Either way the model's tokens and distribution are its
// own; the tokenizers only decide how many drafts are kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/tokenizer.h"
#include "generate/assistant_drafter.h"
#include "generate/generation_settings.h"
#include "generate/speculative.h"
#include "models/decoder.h"

namespace anvil {

class TextBridgeDrafter : public Drafter {
 public:
  /// `target`: the model's tokenizer; `drafting`: the assistant's. `settings`: the call's (the
  /// assistant's draft length, schedule and threshold come from it; its processors, which
  /// name the model's ids, do not apply to the assistant's). `eos`: the assistant's own eos
  /// ids. `padding`: the prompt's leading padding (not decoded). `prompt`: the prompt's ids
  /// (padding included), which size the assistant's cache. `tokens`: the first draft length.
  /// `vocab`: the model's vocabulary size (a draft ends before an id past it).
  TextBridgeDrafter(const Tokenizer& target, const Tokenizer& drafting, const Decoder& assistant,
                    const GenerationSettings& settings, std::vector<int64_t> eos, int64_t padding,
                    const std::vector<int64_t>& prompt, uint64_t seed, int64_t tokens,
                    int64_t vocab);
  Draft draft(const std::vector<int64_t>& seq, int64_t t, int64_t max_tokens) override;
  void update(int64_t drafted, int64_t matches) override { inner_.update(drafted, matches); }
  /// The draft length the next step would take.
  int64_t tokens() const { return inner_.tokens(); }

 private:
  /// The model's ids for `text` drafted after `seq`: re-encoded with seq's last k tokens where
  /// that gives them back, else encoded alone.
  std::vector<int64_t> target_ids_after(const std::vector<int64_t>& seq,
                                        const std::string& text) const;
  /// The text of seq past its padding (skip_special_tokens), decoded incrementally: only the
  /// ids added since the last call, in the context of the few before them.
  const std::string& text_of(const std::vector<int64_t>& seq);
  /// That text in the assistant's ids: a finalised part (encoded up to a space well before the
  /// end, so that appending text does not change it) and the rest encoded again each call.
  /// Each step's tokenizer work is then the new text and a bounded tail, not the sequence.
  std::vector<int64_t> assistant_ids(const std::string& text);

  const Tokenizer& target_;
  const Tokenizer& drafting_;
  GenerationSettings settings_;  // the assistant's: inner_ keeps a reference
  int64_t padding_;
  int64_t vocab_, assistant_vocab_;
  int64_t capacity_;  // the assistant's cache, in its ids
  AssistantDrafter inner_;
  std::vector<int64_t> seen_;  // text_of's ids and their text
  std::string text_;
  std::string done_text_;  // assistant_ids' finalised part and its ids
  std::vector<int64_t> done_ids_;
};

/// The assistant's settings for drafting in its own ids: the call's draft length, schedule and
/// threshold, greedy picks, no processors, its own eos ids.
GenerationSettings bridged_assistant_settings(const GenerationSettings& call,
                                              std::vector<int64_t> eos);

}  // namespace anvil
