// UTF-8 helpers for the tokenizer: validation (anvil refuses invalid UTF-8 input with an error
// naming the byte offset), code point iteration, and Unicode classes through utf8proc.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::utf8 {

/// Byte offset of the first invalid sequence, or npos when `s` is valid UTF-8.
size_t find_invalid(std::string_view s);
/// Throws anvil::Error "<what>: invalid UTF-8 at byte N" when `s` is not valid UTF-8.
void check_valid(std::string_view s, const std::string& what);

/// Length in bytes of the UTF-8 sequence starting with lead byte `c` (1 for invalid leads).
inline size_t seq_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xe) return 3;
  if ((c >> 3) == 0x1e) return 4;
  return 1;
}

/// Decodes the code point at `s[i]` (valid UTF-8 assumed) and advances `i`.
char32_t next(std::string_view s, size_t& i);
void append(std::string& out, char32_t cp);
std::string encode(char32_t cp);
/// The characters (as UTF-8 substrings) of valid UTF-8 `s`.
std::vector<std::string_view> chars(std::string_view s);

/// Decodes bytes as UTF-8 the way Rust's String::from_utf8_lossy does: each maximal invalid
/// subsequence becomes U+FFFD.
std::string from_bytes_lossy(std::string_view bytes);

// Unicode properties: utf8proc's, or where Hugging Face tokenizers classifies by tables of its
// own, tokenizers' (tools/hf_char_classes.py).
bool is_whitespace(char32_t cp);  ///< Rust's char::is_whitespace (White_Space property)
/// What a single_word added token may not touch: tokenizers asks regex `\w` (letters, marks,
/// decimal digits, connector punctuation), so a combining accent after the token blocks it and
/// a superscript digit does not.
bool is_word_char(char32_t cp);
/// ASCII punctuation, or what tokenizers' Punctuation and BertPreTokenizer split on above ASCII
/// (the unicode_categories crate: Unicode 8.0's P* categories).
bool is_punctuation(char32_t cp);
/// What tokenizers' Digits pre-tokenizer splits on (Rust's char::is_numeric: Nd, Nl, No).
bool is_digit(char32_t cp);
/// What tokenizers' StripAccents normalizer removes.
bool is_combining_mark(char32_t cp);

enum class NormalForm { nfc, nfd, nfkc, nfkd };
std::string normalize(std::string_view s, NormalForm form);
/// tokenizers' Lowercase normalizer: Rust's char::to_lowercase character by character (Unicode
/// 16.0 in tokenizers 0.23; no final-sigma context, U+0130 becomes "i\u0307").
std::string lowercase(std::string_view s);

}  // namespace anvil::utf8
