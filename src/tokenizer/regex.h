// A compiled Unicode regular expression (PCRE2 with UTF, UCP and JIT): the engine behind the
// Split pre-tokenizer, GPT-2's byte-level regex and Replace normalizers/decoders. Hugging Face
// tokenizers uses Oniguruma; PCRE2 supports the same syntax the tokenizer files use (\p{L},
// \p{N}, lookahead (?!\S), inline (?i:...), possessive/atomic forms).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace anvil {

class Regex {
 public:
  /// Compiles `pattern`; throws anvil::Error naming `source` and the position of a syntax error.
  Regex(const std::string& pattern, const std::string& source);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  /// Byte ranges [begin, end) of successive non-overlapping matches in valid UTF-8 `text`.
  /// Empty matches are reported and the search moves on by one character.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Escapes `s` so it matches literally.
std::string regex_escape(std::string_view s);

}  // namespace anvil
