// UTF-8 decoding and encoding, and the Unicode character classes and case mappings that Python's
// str methods use (from utf8proc's Unicode tables, plus Python's multi-character mappings).
#pragma once

#include <string>
#include <string_view>

namespace anvil::jinja::unicode {

/// Decodes UTF-8. A byte that is not part of a valid sequence becomes U+DC80 + byte (Python's
/// surrogateescape), which encode() turns back into the same byte, so nothing is lost.
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
void append_utf8(std::string& out, char32_t cp);
/// Number of code points.
size_t length(std::string_view s);

bool is_space(char32_t c);      // str.isspace / str.split() / str.strip()
bool is_linebreak(char32_t c);  // str.splitlines boundaries
bool is_printable(char32_t c);  // str.isprintable, used by repr()
bool is_alpha(char32_t c);
bool is_digit(char32_t c);
bool is_alnum(char32_t c);
bool is_word(char32_t c);  // regex \w
bool is_upper(char32_t c);
bool is_lower(char32_t c);
bool is_cased(char32_t c);

char32_t to_lower(char32_t c);
/// Upper case of one character; may be several characters (U+00DF -> "SS").
std::u32string to_upper(char32_t c);
/// Title case of one character (U+00DF -> "Ss").
std::u32string to_title(char32_t c);

std::string upper(std::string_view s);
std::string lower(std::string_view s);

}  // namespace anvil::jinja::unicode
