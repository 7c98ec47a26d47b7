// The Jinja tokenizer (see jinja_lexer.h). It follows jinja2's lexer rule by rule: newlines are
// normalized and one trailing newline dropped; '-' on a tag strips the whitespace beside it, '+'
// keeps it; lstrip_blocks removes the indentation before block and comment tags; trim_blocks
// removes the newline after them; tag ends only count when brackets are balanced.
#include "chat/jinja_lexer.h"

#include <cerrno>
#include <cstdlib>

#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace anvil::jinja {

namespace {

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

// Length of the Unicode whitespace character at s[i], or 0.
size_t space_at(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  if (is_ascii_space(s[i])) return 1;
  const auto b = static_cast<unsigned char>(s[i]);
  if (b < 0x80) return 0;
  const size_t len = b >= 0xF0 ? 4 : (b >= 0xE0 ? 3 : 2);
  if (i + len > s.size()) return 0;
  const std::u32string cp = unicode::decode(s.substr(i, len));
  return cp.size() == 1 && unicode::is_space(cp[0]) ? len : 0;
}

size_t skip_spaces(std::string_view s, size_t i) {
  while (size_t n = space_at(s, i)) i += n;
  return i;
}

// Python's str.rstrip() on UTF-8 text.
void rstrip(std::string& text) {
  std::u32string cps = unicode::decode(text);
  size_t end = cps.size();
  while (end > 0 && unicode::is_space(cps[end - 1])) --end;
  if (end != cps.size()) text = unicode::encode(std::u32string_view(cps).substr(0, end));
}

bool all_space(std::string_view s) {
  if (s.empty()) return false;
  for (char32_t c : unicode::decode(s))
    if (!unicode::is_space(c)) return false;
  return true;
}

// The whitespace handling of jinja2's OptionalLStrip rule for the text before a tag.
void strip_before_tag(std::string& text, char sign, bool is_variable, bool line_starting) {
  if (sign == '-') {
    rstrip(text);
  } else if (sign != '+' && !is_variable) {
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting) && all_space(std::string_view(text).substr(l_pos)))
      text.resize(l_pos);
  }
}

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out.push_back(source[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Python's "unicode-escape" decoding of a string literal's body.
std::string unescape(std::string_view body) {
  std::string out;
  size_t i = 0;
  while (i < body.size()) {
    const char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      ++i;
      continue;
    }
    const char e = body[i + 1];
    i += 2;
    switch (e) {
      case '\n':
        break;
      case '\\':
      case '\'':
      case '"':
        out.push_back(e);
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t digits = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
        char32_t cp = 0;
        for (size_t k = 0; k < digits; ++k) {
          const int h = i + k < body.size() ? hex_value(body[i + k]) : -1;
          if (h < 0)
            throw TemplateError(std::string("truncated \\") + e + std::string(digits, 'X') +
                                " escape");
          cp = cp * 16 + static_cast<char32_t>(h);
        }
        if (cp > 0x10FFFF) throw TemplateError("illegal Unicode character");
        i += digits;
        unicode::append_utf8(out, cp);
        break;
      }
      case 'N':
        throw TemplateError("\\N{...} escapes are not supported");
      default:
        if (e >= '0' && e <= '7') {
          char32_t cp = static_cast<char32_t>(e - '0');
          for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k)
            cp = cp * 8 + static_cast<char32_t>(body[i++] - '0');
          unicode::append_utf8(out, cp);
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_newlines(source)) {}

  std::vector<Token> run() {
    bool line_starting = true;
    size_t pos = 0;
    const size_t n = src_.size();
    while (pos < n) {
      size_t t = pos;
      while ((t = src_.find('{', t)) != std::string::npos) {
        if (t + 1 < n && (src_[t + 1] == '{' || src_[t + 1] == '%' || src_[t + 1] == '#')) break;
        ++t;
      }
      if (t == std::string::npos) {
        emit_data(src_.substr(pos), pos);
        break;
      }
      const char kind = src_[t + 1];
      const char sign = (t + 2 < n && (src_[t + 2] == '-' || src_[t + 2] == '+')) ? src_[t + 2] : 0;
      std::string text = src_.substr(pos, t - pos);
      size_t raw_end = 0;
      const bool raw = kind == '%' && match_raw_begin(t, &raw_end);
      strip_before_tag(text, sign, kind == '{', line_starting);
      emit_data(std::move(text), pos);
      if (raw) {
        pos = lex_raw(t, raw_end);
      } else if (kind == '#') {
        pos = lex_comment(t, t + 2 + (sign ? 1 : 0));
      } else {
        pos = lex_tag(t, t + 2 + (sign ? 1 : 0), kind == '{');
      }
      if (pos == std::string::npos) break;  // end of input inside a tag
      line_starting = pos > 0 && src_[pos - 1] == '\n';
    }
    Token eof;
    eof.type = TokenType::kEof;
    eof.line = line_at(n);
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  int line_at(size_t pos) {
    if (pos < line_pos_) {
      line_pos_ = 0;
      line_ = 1;
    }
    for (; line_pos_ < pos && line_pos_ < src_.size(); ++line_pos_)
      if (src_[line_pos_] == '\n') ++line_;
    return line_;
  }

  void emit(TokenType type, std::string value, size_t pos) {
    Token tok;
    tok.type = type;
    tok.value = std::move(value);
    tok.line = line_at(pos);
    tokens_.push_back(std::move(tok));
  }

  void emit_data(std::string text, size_t pos) {
    if (!text.empty()) emit(TokenType::kData, std::move(text), pos);
  }

  [[noreturn]] void fail(const std::string& message, size_t pos) {
    throw TemplateError(message, line_at(pos));
  }

  bool starts_with(size_t pos, std::string_view s) const {
    return src_.compare(pos, s.size(), s) == 0;
  }

  // {%[-+]? \s* raw \s* (-%}\s* | %})
  bool match_raw_begin(size_t t, size_t* end) const {
    size_t i = t + 2;
    if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
    i = skip_spaces(src_, i);
    if (!starts_with(i, "raw")) return false;
    i = skip_spaces(src_, i + 3);
    if (starts_with(i, "-%}")) {
      *end = skip_spaces(src_, i + 3);
      return true;
    }
    if (starts_with(i, "%}")) {
      *end = i + 2;
      return true;
    }
    return false;
  }

  size_t lex_raw(size_t begin, size_t body_start) {
    bool line_starting = src_[body_start - 1] == '\n';
    for (size_t q = src_.find("{%", body_start); q != std::string::npos;
         q = src_.find("{%", q + 1)) {
      size_t i = q + 2;
      char sign = 0;
      if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) sign = src_[i++];
      i = skip_spaces(src_, i);
      if (!starts_with(i, "endraw")) continue;
      i = skip_spaces(src_, i + 6);
      size_t end;
      if (starts_with(i, "+%}")) {
        end = i + 3;
      } else if (starts_with(i, "-%}")) {
        end = skip_spaces(src_, i + 3);
      } else if (starts_with(i, "%}")) {
        end = i + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      std::string text = src_.substr(body_start, q - body_start);
      strip_before_tag(text, sign, false, line_starting);
      emit_data(std::move(text), body_start);
      return end;
    }
    fail("Missing end of raw directive", begin);
  }

  size_t lex_comment(size_t begin, size_t body_start) {
    const size_t q = src_.find("#}", body_start);
    if (q == std::string::npos) fail("Missing end of comment tag", begin);
    size_t end = q + 2;
    if (q > body_start && src_[q - 1] == '-') {
      end = skip_spaces(src_, end);
    } else if (q > body_start && src_[q - 1] == '+') {
      // '+' keeps the newline.
    } else if (end < src_.size() && src_[end] == '\n') {
      ++end;
    }
    return end;
  }

  // Lexes the inside of {{ ... }} or {% ... %}; returns the position after the end tag, or npos
  // at the end of the input.
  size_t lex_tag(size_t begin, size_t pos, bool variable) {
    emit(variable ? TokenType::kVariableBegin : TokenType::kBlockBegin, "", begin);
    std::string brackets;  // expected closing brackets
    const size_t n = src_.size();
    while (true) {
      if (pos >= n) return std::string::npos;
      if (brackets.empty()) {
        size_t end = 0;
        if (variable) {
          if (starts_with(pos, "-}}")) {
            end = skip_spaces(src_, pos + 3);
          } else if (starts_with(pos, "}}")) {
            end = pos + 2;
          }
        } else if (starts_with(pos, "+%}")) {
          end = pos + 3;
        } else if (starts_with(pos, "-%}")) {
          end = skip_spaces(src_, pos + 3);
        } else if (starts_with(pos, "%}")) {
          end = pos + 2;
          if (end < n && src_[end] == '\n') ++end;
        }
        if (end) {
          emit(variable ? TokenType::kVariableEnd : TokenType::kBlockEnd, "", pos);
          return end;
        }
      }
      if (size_t ws = space_at(src_, pos)) {
        pos += ws;
        continue;
      }
      if (size_t end = match_float(pos)) {
        Token tok;
        tok.type = TokenType::kFloat;
        tok.value = src_.substr(pos, end - pos);
        std::string digits;
        for (char c : tok.value)
          if (c != '_') digits.push_back(c);
        tok.float_value = std::strtod(digits.c_str(), nullptr);
        tok.line = line_at(pos);
        tokens_.push_back(std::move(tok));
        pos = end;
        continue;
      }
      if (is_digit(src_[pos])) {
        pos = lex_integer(pos);
        continue;
      }
      if (is_name_start(src_[pos])) {
        size_t end = pos;
        while (end < n && is_name_char(src_[end])) ++end;
        emit(TokenType::kName, src_.substr(pos, end - pos), pos);
        pos = end;
        continue;
      }
      if (src_[pos] == '\'' || src_[pos] == '"') {
        const size_t end = match_string(pos);
        if (end) {
          Token tok;
          tok.type = TokenType::kString;
          tok.line = line_at(pos);
          try {
            tok.value = unescape(std::string_view(src_).substr(pos + 1, end - pos - 2));
          } catch (TemplateError& e) {
            e.set_line(tok.line);
            throw;
          }
          tokens_.push_back(std::move(tok));
          pos = end;
          continue;
        }
      }
      pos = lex_operator(pos, brackets);
    }
  }

  size_t match_string(size_t pos) const {
    const char quote = src_[pos];
    for (size_t i = pos + 1; i < src_.size(); ++i) {
      if (src_[i] == '\\') {
        ++i;
      } else if (src_[i] == quote) {
        return i + 1;
      }
    }
    return 0;
  }

  // (\d+_)*\d+ : returns the end, or 0 when there is no digit at pos.
  size_t match_digits(size_t pos) const {
    if (pos >= src_.size() || !is_digit(src_[pos])) return 0;
    size_t i = pos;
    while (true) {
      while (i < src_.size() && is_digit(src_[i])) ++i;
      if (i + 1 < src_.size() && src_[i] == '_' && is_digit(src_[i + 1])) {
        ++i;
        continue;
      }
      return i;
    }
  }

  size_t match_exponent(size_t pos) const {
    if (pos >= src_.size() || (src_[pos] != 'e' && src_[pos] != 'E')) return 0;
    size_t i = pos + 1;
    if (i < src_.size() && (src_[i] == '+' || src_[i] == '-')) ++i;
    return match_digits(i);
  }

  size_t match_float(size_t pos) const {
    if (pos > 0 && src_[pos - 1] == '.') return 0;
    const size_t int_end = match_digits(pos);
    if (!int_end) return 0;
    if (int_end < src_.size() && src_[int_end] == '.') {
      if (const size_t frac_end = match_digits(int_end + 1)) {
        if (const size_t exp_end = match_exponent(frac_end)) return exp_end;
        return frac_end;
      }
    }
    return match_exponent(int_end);
  }

  size_t lex_integer(size_t pos) {
    const size_t n = src_.size();
    int base = 10;
    size_t i = pos;
    std::string digits;
    auto digit_ok = [&](char c) {
      const int h = hex_value(c);
      return h >= 0 && h < base;
    };
    if (src_[pos] == '0' && pos + 1 < n &&
        std::string_view("bBoOxX").find(src_[pos + 1]) != std::string_view::npos) {
      const char p = static_cast<char>(src_[pos + 1] | 32);
      base = p == 'b' ? 2 : (p == 'o' ? 8 : 16);
      i = pos + 2;
      while (i < n) {
        if (src_[i] == '_' && i + 1 < n && digit_ok(src_[i + 1])) {
          ++i;
        } else if (!digit_ok(src_[i])) {
          break;
        }
        digits.push_back(src_[i++]);
      }
      if (digits.empty()) {
        base = 10;
        i = pos;
      }
    }
    if (base == 10) {
      const bool zero = src_[pos] == '0';
      i = pos;
      digits.clear();
      while (i < n) {
        if (src_[i] == '_' && i + 1 < n && is_digit(src_[i + 1]) && (!zero || src_[i + 1] == '0')) {
          ++i;
        } else if (!is_digit(src_[i]) || (zero && src_[i] != '0')) {
          break;
        }
        digits.push_back(src_[i++]);
      }
    }
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(digits.c_str(), &end, base);
    if (errno == ERANGE || v > static_cast<unsigned long long>(INT64_MAX))
      fail("integer literal too large", pos);
    Token tok;
    tok.type = TokenType::kInteger;
    tok.value = src_.substr(pos, i - pos);
    tok.int_value = static_cast<int64_t>(v);
    tok.line = line_at(pos);
    tokens_.push_back(std::move(tok));
    return i;
  }

  size_t lex_operator(size_t pos, std::string& brackets) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (starts_with(pos, op)) {
        emit(TokenType::kOperator, std::string(op), pos);
        return pos + 2;
      }
    }
    const char c = src_[pos];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      std::string shown;
      const std::u32string cp = unicode::decode(std::string_view(src_).substr(pos, 4));
      unicode::append_utf8(shown, cp.empty() ? U'?' : cp[0]);
      fail("unexpected char '" + shown + "'", pos);
    }
    if (c == '(' || c == '[' || c == '{') {
      brackets.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) fail(std::string("unexpected '") + c + "'", pos);
      if (brackets.back() != c)
        fail(std::string("unexpected '") + c + "', expected '" + brackets.back() + "'", pos);
      brackets.pop_back();
    }
    emit(TokenType::kOperator, std::string(1, c), pos);
    return pos + 1;
  }

  std::string src_;
  std::vector<Token> tokens_;
  size_t line_pos_ = 0;
  int line_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace anvil::jinja
