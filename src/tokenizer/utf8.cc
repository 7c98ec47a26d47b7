// UTF-8 validation/iteration and Unicode properties through utf8proc, a small, well-kept C
// library that tracks the current Unicode version (see docs/dependencies.md), except where
// Hugging Face tokenizers classifies by tables of its own (hf_char_classes.inc).
#include "tokenizer/utf8.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "anvil/error.h"

namespace anvil::utf8 {
namespace {

struct CodeRange {
  char32_t first, last;
};

// Every stride-th code point from first to last lowercases to itself plus delta.
struct LowercaseRun {
  char32_t first, last;
  int stride, delta;
};

// Hugging Face tokenizers' own classes above ASCII (tools/hf_char_classes.py asks tokenizers
// for them): its punctuation is Unicode 8.0's, its digits 16.0's and its combining marks those
// of another table still, none of them the Unicode 15.0 of utf8proc (Debian 12), which had
// split U+09FD as punctuation where tokenizers keeps it in its word.
#include "tokenizer/hf_char_classes.inc"

template <size_t N>
bool in_ranges(const CodeRange (&table)[N], char32_t cp) {
  const auto* it = std::upper_bound(std::begin(table), std::end(table), cp,
                                    [](char32_t c, const CodeRange& r) { return c < r.first; });
  return it != std::begin(table) && cp <= std::prev(it)->last;
}

char32_t lowercase_char(char32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;  // most text: no table search
  const auto* it = std::upper_bound(std::begin(kHfLowercase), std::end(kHfLowercase), cp,
                                    [](char32_t c, const LowercaseRun& r) { return c < r.first; });
  if (it == std::begin(kHfLowercase)) return cp;
  const LowercaseRun& run = *std::prev(it);
  if (cp > run.last || (cp - run.first) % static_cast<char32_t>(run.stride) != 0) return cp;
  return static_cast<char32_t>(static_cast<int32_t>(cp) + run.delta);
}

}  // namespace

size_t find_invalid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                    static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) return i;
    i += static_cast<size_t>(n);
  }
  return std::string_view::npos;
}

void check_valid(std::string_view s, const std::string& what) {
  const size_t bad = find_invalid(s);
  if (bad != std::string_view::npos) {
    throw Error(what + ": invalid UTF-8 at byte " + std::to_string(bad));
  }
}

char32_t next(std::string_view s, size_t& i) {
  utf8proc_int32_t cp = 0xfffd;
  const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                                  static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
  i += n > 0 ? static_cast<size_t>(n) : 1;
  return static_cast<char32_t>(n > 0 ? cp : 0xfffd);
}

void append(std::string& out, char32_t cp) {
  utf8proc_uint8_t buf[4];
  const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

std::string encode(char32_t cp) {
  std::string s;
  append(s, cp);
  return s;
}

std::vector<std::string_view> chars(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    next(s, i);
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::string from_bytes_lossy(std::string_view b) {
  std::string out;
  out.reserve(b.size());
  size_t i = 0;
  while (i < b.size()) {
    const auto c = static_cast<unsigned char>(b[i]);
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    // Length of the longest valid prefix of a sequence starting here (the W3C/WHATWG
    // "maximal subpart" rule Rust follows): invalid bytes collapse into one U+FFFD each part.
    size_t need = 0;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      need = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      need = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      need = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      out += "\xef\xbf\xbd";
      ++i;
      continue;
    }
    size_t j = i + 1;
    size_t got = 0;
    while (got < need && j < b.size()) {
      const auto d = static_cast<unsigned char>(b[j]);
      const unsigned char l = got == 0 ? lo : 0x80, h = got == 0 ? hi : 0xbf;
      if (d < l || d > h) break;
      ++j;
      ++got;
    }
    if (got == need) {
      out.append(b.substr(i, j - i));
    } else {
      out += "\xef\xbf\xbd";
    }
    i = j;
  }
  return out;
}

bool is_whitespace(char32_t cp) {
  // The White_Space property, which Rust's char::is_whitespace uses.
  switch (cp) {
    case 0x09:
    case 0x0a:
    case 0x0b:
    case 0x0c:
    case 0x0d:
    case 0x20:
    case 0x85:
    case 0xa0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202f:
    case 0x205f:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200a;
  }
}

bool is_word_char(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z') ||
           cp == '_';
  }
  return in_ranges(kHfWordChars, cp);
}

bool is_punctuation(char32_t cp) {
  if (cp < 0x80) {
    return (cp >= 0x21 && cp <= 0x2f) || (cp >= 0x3a && cp <= 0x40) || (cp >= 0x5b && cp <= 0x60) ||
           (cp >= 0x7b && cp <= 0x7e);
  }
  return in_ranges(kHfPunctuation, cp);
}

bool is_digit(char32_t cp) {
  return cp < 0x80 ? cp >= '0' && cp <= '9' : in_ranges(kHfDigits, cp);
}

bool is_combining_mark(char32_t cp) {
  return cp >= 0x80 && in_ranges(kHfCombiningMarks, cp);
}

namespace {

std::string normalize_known(std::string_view s, NormalForm form) {
  if (s.empty()) return {};
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::nfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormalForm::nfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormalForm::nfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormalForm::nfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* out = nullptr;
  const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                              static_cast<utf8proc_ssize_t>(s.size()), &out,
                              static_cast<utf8proc_option_t>(options));
  if (n < 0) throw Error(std::string("unicode normalization failed: ") + utf8proc_errmsg(n));
  std::string result(reinterpret_cast<char*>(out), static_cast<size_t>(n));
  std::free(out);
  return result;
}

}  // namespace

std::string normalize(std::string_view s, NormalForm form) {
  // tokenizers normalizes by older Unicode tables than utf8proc's: the characters they lack
  // (kHfNormalizationOpaque) pass through as starters that neither decompose, reorder nor
  // compose, so the text is normalized piece by piece between them.
  std::string out;
  size_t piece = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    const char32_t cp = next(s, i);
    if (cp < kHfNormalizationOpaque[0].first || !in_ranges(kHfNormalizationOpaque, cp)) continue;
    out += normalize_known(s.substr(piece, at - piece), form);
    out.append(s.substr(at, i - at));
    piece = i;
  }
  if (piece == 0) return normalize_known(s, form);
  return out + normalize_known(s.substr(piece), form);
}

std::string lowercase(std::string_view s) {
  // Rust's char::to_lowercase per code point: the generated one-character mappings plus the
  // one multi-character mapping, U+0130 (tools/hf_char_classes.py checks there is no other).
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const char32_t cp = next(s, i);
    if (cp == 0x130) {
      out += "i\xcc\x87";
      continue;
    }
    append(out, lowercase_char(cp));
  }
  return out;
}

}  // namespace anvil::utf8
