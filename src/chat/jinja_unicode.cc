// UTF-8 coding and the character tables behind Python's str methods (see jinja_unicode.h).
#include "chat/jinja_unicode.h"

#include <utf8proc.h>

namespace anvil::jinja::unicode {

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) {
      out.push_back(b0);
      ++i;
      continue;
    }
    size_t n = 0;
    char32_t cp = 0;
    char32_t min = 0;
    if ((b0 & 0xE0) == 0xC0) {
      n = 1, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      n = 2, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      n = 3, cp = b0 & 0x07, min = 0x10000;
    }
    bool ok = n > 0 && i + n < s.size();
    for (size_t k = 1; ok && k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (b & 0x3F);
    }
    if (ok && (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) ok = false;
    if (ok) {
      out.push_back(cp);
      i += n + 1;
    } else {
      out.push_back(0xDC00 + b0);
      ++i;
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
    out.push_back(static_cast<char>(cp - 0xDC00));  // an undecodable byte, restored
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string encode(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

size_t length(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return decode(s).size();
  return s.size();
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool is_linebreak(char32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
         c == 0x85 || c == 0x2028 || c == 0x2029;
}

namespace {

utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

char32_t simple_upper(char32_t c) {
  return static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(c)));
}

char32_t simple_lower(char32_t c) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c)));
}

// Python's full (multi-character) upper-case mappings for the characters that have one.
const char32_t* special_upper(char32_t c) {
  switch (c) {
    case 0xDF:
      return U"SS";
    case 0x149:
      return U"\u02BCN";
    case 0x1F0:
      return U"J\u030C";
    case 0x587:
      return U"\u0535\u0552";
    case 0xFB00:
      return U"FF";
    case 0xFB01:
      return U"FI";
    case 0xFB02:
      return U"FL";
    case 0xFB03:
      return U"FFI";
    case 0xFB04:
      return U"FFL";
    case 0xFB05:
    case 0xFB06:
      return U"ST";
    default:
      return nullptr;
  }
}

}  // namespace

bool is_printable(char32_t c) {
  if (c == ' ') return true;
  if (c >= 0xDC80 && c <= 0xDCFF) return false;
  switch (category(c)) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
    case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

bool is_upper(char32_t c) {
  return category(c) == UTF8PROC_CATEGORY_LU;
}
bool is_lower(char32_t c) {
  return category(c) == UTF8PROC_CATEGORY_LL;
}
bool is_cased(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL || cat == UTF8PROC_CATEGORY_LT;
}

bool is_alpha(char32_t c) {
  const auto cat = category(c);
  return cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
         cat == UTF8PROC_CATEGORY_LT || cat == UTF8PROC_CATEGORY_LM || cat == UTF8PROC_CATEGORY_LO;
}

bool is_digit(char32_t c) {
  if (category(c) == UTF8PROC_CATEGORY_ND) return true;
  // Digits that are not decimal digits (superscripts, subscripts, circled digits).
  return c == 0xB2 || c == 0xB3 || c == 0xB9 || c == 0x2070 || (c >= 0x2074 && c <= 0x2079) ||
         (c >= 0x2080 && c <= 0x2089) || (c >= 0x2460 && c <= 0x2468) ||
         (c >= 0x2474 && c <= 0x247C) || (c >= 0x2488 && c <= 0x2490) || c == 0x24EA ||
         (c >= 0x24F5 && c <= 0x24FD) || c == 0x24FF || (c >= 0x2776 && c <= 0x277E) ||
         (c >= 0x2780 && c <= 0x2788) || (c >= 0x278A && c <= 0x2792);
}

bool is_alnum(char32_t c) {
  const auto cat = category(c);
  return is_alpha(c) || cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
         cat == UTF8PROC_CATEGORY_NO;
}

bool is_word(char32_t c) {
  return c == '_' || is_alnum(c);
}

char32_t to_lower(char32_t c) {
  return simple_lower(c);
}

std::u32string to_upper(char32_t c) {
  if (const char32_t* special = special_upper(c)) return special;
  return std::u32string(1, simple_upper(c));
}

std::u32string to_title(char32_t c) {
  if (c == 0xDF) return U"Ss";
  if (c >= 0xFB00 && c <= 0xFB06) {
    std::u32string u = special_upper(c);
    for (size_t i = 1; i < u.size(); ++i) u[i] = simple_lower(u[i]);
    return u;
  }
  if (const char32_t* special = special_upper(c)) return special;
  return std::u32string(1,
                        static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(c))));
}

std::string upper(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : decode(s))
    for (char32_t u : to_upper(c)) append_utf8(out, u);
  return out;
}

std::string lower(std::string_view s) {
  const std::u32string cps = decode(s);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < cps.size(); ++i) {
    const char32_t c = cps[i];
    if (c == 0x130) {
      out += "i\u0307";  // Python's full lower-case mapping of U+0130
    } else if (c == 0x3A3) {
      // Final sigma: a capital sigma ending a word lower-cases to U+03C2.
      const bool after_cased = i > 0 && is_cased(cps[i - 1]);
      const bool before_cased = i + 1 < cps.size() && is_cased(cps[i + 1]);
      append_utf8(out, after_cased && !before_cased ? 0x3C2 : 0x3C3);
    } else {
      append_utf8(out, simple_lower(c));
    }
  }
  return out;
}

}  // namespace anvil::jinja::unicode
