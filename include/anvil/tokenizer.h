/// @file tokenizer.h
/// Tokenizers identical to Hugging Face's: `Tokenizer` runs a `tokenizer.json` pipeline
/// (normalizer, added tokens, pre-tokenizer, BPE, post-processor, decoder);
/// `AutoTokenizer::from_pretrained` adds `tokenizer_config.json` (special tokens, padding, chat
/// template) on top, as transformers does.
///
/// Input text must be valid UTF-8: invalid bytes are an error naming the byte offset (Python
/// strings cannot hold them, so transformers never sees them either). Decoding never produces
/// invalid UTF-8: byte sequences that do not form characters become U+FFFD, as in tokenizers.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace anvil {

class TokenizerImpl;

/// A tokenizer.json pipeline.
class Tokenizer {
 public:
  /// Loads `path` (a tokenizer.json); throws anvil::Error naming the file and the problem.
  static Tokenizer from_file(const std::string& path);
  static Tokenizer from_json_text(const std::string& text, const std::string& source);

  /// Ids of `text`; the post-processor's special tokens (BOS, ...) when `add_special_tokens`.
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const;
  /// Text of `ids`; special added tokens dropped when `skip_special_tokens`. Throws for an id
  /// outside the vocabulary.
  std::string decode(std::span<const int64_t> ids, bool skip_special_tokens = false) const;

  std::optional<int64_t> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(int64_t id) const;
  /// The bytes token `id` contributes to decoded text, as transformers' StopStringCriteria reads
  /// a vocabulary: a byte-level token's own bytes (a fragment of a UTF-8 character included), a
  /// <0xNN> byte-fallback token's byte, any other token the text it decodes to after a fixed
  /// prefix (so a word-start marker reads as the space it becomes). Throws for an id outside
  /// the vocabulary.
  std::string token_bytes(int64_t id) const;
  /// Vocabulary size including added tokens (one past the largest id).
  int64_t vocab_size() const;
  bool is_special(int64_t id) const;
  /// The contents of all special added tokens.
  std::vector<std::string> special_tokens() const;

 private:
  std::shared_ptr<const TokenizerImpl> impl_;
};

/// Decodes a growing list of ids piece by piece for streaming output; never emits half a UTF-8
/// character, and the concatenation of its pieces equals decode() of all ids.
class StreamingDecoder {
 public:
  StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
      : tokenizer_(tokenizer), skip_special_(skip_special_tokens) {}
  /// Adds one id; returns the text that became complete (possibly empty).
  std::string push(int64_t id);
  /// The text still held back at the end (an incomplete character decodes to U+FFFD).
  std::string finish();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_;
  std::vector<int64_t> ids_;
  size_t prefix_ = 0, read_ = 0;
};

}  // namespace anvil
