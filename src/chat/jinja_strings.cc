// Python str operations for the Jinja engine (see jinja_strings.h).
#include "chat/jinja_strings.h"

#include <algorithm>
#include <cstdio>

#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"

namespace anvil::jinja::pystr {

void append_bounded(std::string& out, std::string_view piece, const char* what) {
  if (piece.size() > kMaxStringBytes - std::min(out.size(), kMaxStringBytes)) {
    throw TemplateError(std::string(what) + " would pass " + std::to_string(kMaxStringBytes >> 20) +
                        " MiB");
  }
  out += piece;
}

namespace {

using unicode::decode;
using unicode::encode;

// Python slice bounds: negative counts from the end, then clamped to [0, n].
int64_t clamp_index(const Value* v, int64_t n, int64_t fallback) {
  if (!v || v->is_none()) return fallback;
  if (!v->is_integral()) throw TemplateError("slice indices must be integers or None");
  int64_t i = v->as_int();
  if (i < 0) i += n;
  return std::clamp<int64_t>(i, 0, n);
}

}  // namespace

std::string strip(std::string_view s, const std::string* chars, bool left, bool right) {
  const std::u32string set = chars ? decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : unicode::is_space(c);
  };
  // Work on bytes while the edges are ASCII (the common case); decode only when an edge is not.
  size_t b = 0;
  size_t e = s.size();
  if (left) {
    while (b < e && static_cast<unsigned char>(s[b]) < 0x80 &&
           strip_it(static_cast<char32_t>(s[b])))
      ++b;
  }
  if (right) {
    while (e > b && static_cast<unsigned char>(s[e - 1]) < 0x80 &&
           strip_it(static_cast<char32_t>(s[e - 1])))
      --e;
  }
  const bool left_done = !left || b == e || static_cast<unsigned char>(s[b]) < 0x80;
  const bool right_done = !right || b == e || static_cast<unsigned char>(s[e - 1]) < 0x80;
  if (left_done && right_done) return std::string(s.substr(b, e - b));
  const std::u32string cps = decode(s.substr(b, e - b));
  size_t cb = 0;
  size_t ce = cps.size();
  if (left)
    while (cb < ce && strip_it(cps[cb])) ++cb;
  if (right)
    while (ce > cb && strip_it(cps[ce - 1])) --ce;
  return encode(std::u32string_view(cps).substr(cb, ce - cb));
}

std::vector<std::string> split(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw TemplateError("empty separator");
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      const size_t hit = s.find(*sep, pos);
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(pos, hit - pos));
      pos = hit + sep->size();
    }
    out.emplace_back(s.substr(pos));
    return out;
  }
  const std::u32string cps = decode(s);
  size_t i = 0;
  while (true) {
    while (i < cps.size() && unicode::is_space(cps[i])) ++i;
    if (i == cps.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(encode(std::u32string_view(cps).substr(i)));
      break;
    }
    const size_t start = i;
    while (i < cps.size() && !unicode::is_space(cps[i])) ++i;
    out.push_back(encode(std::u32string_view(cps).substr(start, i - start)));
  }
  return out;
}

std::vector<std::string> rsplit(std::string_view s, const std::string* sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    if (sep->empty()) throw TemplateError("empty separator");
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      const size_t hit = s.rfind(*sep, end - sep->size());
      if (hit == std::string_view::npos) break;
      out.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
      end = hit;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  const std::u32string cps = decode(s);
  size_t i = cps.size();
  while (true) {
    while (i > 0 && unicode::is_space(cps[i - 1])) --i;
    if (i == 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(encode(std::u32string_view(cps).substr(0, i)));
      break;
    }
    const size_t end = i;
    while (i > 0 && !unicode::is_space(cps[i - 1])) --i;
    out.push_back(encode(std::u32string_view(cps).substr(i, end - i)));
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  const std::u32string cps = decode(s);
  std::vector<std::string> out;
  size_t start = 0;
  size_t i = 0;
  while (i < cps.size()) {
    if (!unicode::is_linebreak(cps[i])) {
      ++i;
      continue;
    }
    size_t eol = i + 1;
    if (cps[i] == '\r' && eol < cps.size() && cps[eol] == '\n') ++eol;
    out.push_back(encode(std::u32string_view(cps).substr(start, (keepends ? eol : i) - start)));
    start = i = eol;
  }
  if (start < cps.size()) out.push_back(encode(std::u32string_view(cps).substr(start)));
  return out;
}

std::string title(std::string_view s) {
  std::string out;
  bool previous_cased = false;
  for (char32_t c : decode(s)) {
    if (previous_cased) {
      unicode::append_utf8(out, unicode::to_lower(c));
    } else {
      for (char32_t u : unicode::to_title(c)) unicode::append_utf8(out, u);
    }
    previous_cased = unicode::is_cased(c);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (char32_t c : decode(s)) {
    if (first) {
      for (char32_t u : unicode::to_title(c)) unicode::append_utf8(out, u);
    } else {
      unicode::append_utf8(out, unicode::to_lower(c));
    }
    first = false;
  }
  return out;
}

std::string swapcase(std::string_view s) {
  std::string out;
  for (char32_t c : decode(s)) {
    if (unicode::is_upper(c)) {
      unicode::append_utf8(out, unicode::to_lower(c));
    } else {
      for (char32_t u : unicode::to_upper(c)) unicode::append_utf8(out, u);
    }
  }
  return out;
}

std::string jinja_title(std::string_view s) {
  std::string out;
  bool word_start = true;
  for (char32_t c : decode(s)) {
    const bool delimiter =
        c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || unicode::is_space(c);
    if (delimiter) {
      unicode::append_utf8(out, c);
    } else if (word_start) {
      for (char32_t u : unicode::to_upper(c)) unicode::append_utf8(out, u);
    } else {
      unicode::append_utf8(out, unicode::to_lower(c));
    }
    word_start = delimiter;
  }
  return out;
}

std::string replace(std::string_view s, std::string_view old, std::string_view repl,
                    int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts the replacement before every character and at the end.
    const std::u32string cps = decode(s);
    int64_t done = 0;
    for (char32_t c : cps) {
      if (count < 0 || done < count) {
        append_bounded(out, repl, "replace's result");
        ++done;
      }
      unicode::append_utf8(out, c);
    }
    if (count < 0 || done < count) append_bounded(out, repl, "replace's result");
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out += s.substr(pos, hit - pos);
    append_bounded(out, repl, "replace's result");
    pos = hit + old.size();
    ++done;
  }
  out += s.substr(pos);
  return out;
}

int64_t find(std::string_view s, std::string_view sub, const Value* start, const Value* end,
             bool reverse) {
  const std::u32string cps = decode(s);
  const std::u32string needle = decode(sub);
  const auto n = static_cast<int64_t>(cps.size());
  const int64_t b = clamp_index(start, n, 0);
  const int64_t e = clamp_index(end, n, n);
  const auto m = static_cast<int64_t>(needle.size());
  if (e - b < m) return -1;
  const std::u32string_view hay =
      std::u32string_view(cps).substr(static_cast<size_t>(b), static_cast<size_t>(e - b));
  const size_t hit = reverse ? hay.rfind(needle) : hay.find(needle);
  if (hit == std::u32string_view::npos) return -1;
  return b + static_cast<int64_t>(hit);
}

int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<int64_t>(unicode::length(s)) + 1;
  int64_t n = 0;
  size_t pos = 0;
  while ((pos = s.find(sub, pos)) != std::string_view::npos) {
    ++n;
    pos += sub.size();
  }
  return n;
}

bool all_chars(std::string_view s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  for (char32_t c : decode(s))
    if (!pred(c)) return false;
  return true;
}

std::string pad(std::string_view s, int64_t width, char align, std::string_view fill) {
  const auto n = static_cast<int64_t>(unicode::length(s));
  if (width <= n) return std::string(s);
  const int64_t total = width - n;
  int64_t left = 0;
  if (align == '>') {
    left = total;
  } else if (align == '^') {
    left = total / 2;
  } else if (align == 'c') {
    left = total / 2 + (total & width & 1);  // str.center's rounding
  }
  const int64_t right = total - left;
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < right; ++i) out += fill;
  return out;
}

namespace {

std::string cformat(const std::string& spec, double d) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), spec.c_str(), d);
  return buf;
}

std::string cformat_int(const std::string& spec, long long v) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), spec.c_str(), v);
  return buf;
}

// One %-conversion of `v` with the given flags, width, precision and type.
std::string convert_percent(const Value& v, const std::string& flags, int64_t width,
                            int64_t precision, char type) {
  std::string body;
  switch (type) {
    case 's':
    case 'r':
    case 'a': {
      body = type == 's' ? to_str(v) : repr(v);
      if (precision >= 0) {
        const std::u32string cps = decode(body);
        if (static_cast<int64_t>(cps.size()) > precision)
          body = encode(std::u32string_view(cps).substr(0, static_cast<size_t>(precision)));
      }
      const char align = flags.find('-') != std::string::npos ? '<' : '>';
      return pad(body, width, align, " ");
    }
    case 'c': {
      if (v.is_string() && unicode::length(v.as_string()) == 1) {
        body = v.as_string();
      } else if (v.is_integral()) {
        unicode::append_utf8(body, static_cast<char32_t>(v.as_int()));
      } else {
        throw TemplateError("%c requires int or char");
      }
      return pad(body, width, flags.find('-') != std::string::npos ? '<' : '>', " ");
    }
    default:
      break;
  }
  if (!v.is_number())
    throw TemplateError(std::string("%") + type + " format: a real number is required, not " +
                        type_name(v));
  std::string spec = "%" + flags;
  if (width > 0) spec += std::to_string(std::min<int64_t>(width, 400));
  if (precision >= 0) spec += "." + std::to_string(std::min<int64_t>(precision, 300));
  if (type == 'd' || type == 'i' || type == 'u' || type == 'x' || type == 'X' || type == 'o') {
    const auto i = v.is_float() ? static_cast<long long>(v.as_double()) : v.as_int();
    const char t = (type == 'i' || type == 'u') ? 'd' : type;
    return cformat_int(spec + "ll" + t, i);
  }
  if (type == 'f' || type == 'F' || type == 'e' || type == 'E' || type == 'g' || type == 'G')
    return cformat(spec + type, v.as_double());
  throw TemplateError(std::string("unsupported format character '") + type + "'");
}

}  // namespace

std::string percent_format(std::string_view fmt, const Value& args) {
  std::vector<Value> positional;
  const DictData* mapping = nullptr;
  // Like Python, a single argument that supports [] (a dict or a list) may go unused.
  bool mapping_like = false;
  if (args.is_list() && args.as_list().kind == ListKind::kTuple) {
    positional = args.as_list().items;
  } else if (args.is_mapping()) {
    mapping = &args.as_dict();
  } else {
    positional.push_back(args);
    mapping_like = args.is_indexable() || args.is_undefined();
  }
  size_t next = 0;
  std::string out;
  size_t i = 0;
  while (i < fmt.size()) {
    const char c = fmt[i];
    if (c != '%') {
      out.push_back(c);
      ++i;
      continue;
    }
    ++i;
    if (i >= fmt.size()) throw TemplateError("incomplete format");
    const Value* arg = nullptr;
    if (fmt[i] == '(') {
      const size_t close = fmt.find(')', i);
      if (close == std::string_view::npos) throw TemplateError("incomplete format key");
      if (!mapping) throw TemplateError("format requires a mapping");
      const std::string key(fmt.substr(i + 1, close - i - 1));
      arg = mapping->find(key);
      if (!arg) throw TemplateError("KeyError: '" + key + "'");
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos)
      flags.push_back(fmt[i++]);
    int64_t width = 0;
    while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9')
      width = std::min<int64_t>(width * 10 + (fmt[i++] - '0'), 100000);
    int64_t precision = -1;
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      precision = 0;
      while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9')
        precision = std::min<int64_t>(precision * 10 + (fmt[i++] - '0'), 100000);
    }
    if (i >= fmt.size()) throw TemplateError("incomplete format");
    const char type = fmt[i++];
    if (type == '%') {
      out.push_back('%');
      continue;
    }
    if (!arg) {
      if (mapping) {
        arg = &args;
      } else {
        if (next >= positional.size())
          throw TemplateError("not enough arguments for format string");
        arg = &positional[next++];
      }
    }
    out += convert_percent(*arg, flags, width, precision, type);
  }
  if (!mapping && !mapping_like && next < positional.size())
    throw TemplateError("not all arguments converted during string formatting");
  return out;
}

namespace {

// Applies a str.format spec ([[fill]align][sign][#][0][width][,][.precision][type]) to `v`.
std::string apply_spec(const Value& v, std::string_view spec) {
  if (spec.empty()) return to_str(v);
  size_t i = 0;
  std::string fill = " ";
  char align = 0;
  const std::u32string cps = decode(spec);
  // The fill may be any character, so look at code points for it.
  if (cps.size() >= 2 && std::u32string_view(U"<>^=").find(cps[1]) != std::u32string_view::npos) {
    fill.clear();
    unicode::append_utf8(fill, cps[0]);
    align = static_cast<char>(cps[1]);
    spec = spec.substr(fill.size() + 1);
  } else if (!spec.empty() && std::string_view("<>^=").find(spec[0]) != std::string_view::npos) {
    align = spec[0];
    spec = spec.substr(1);
  }
  std::string sign;
  if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
  if (i < spec.size() && spec[i] == '#') ++i;
  if (i < spec.size() && spec[i] == '0') {
    if (!align) {
      fill = "0";
      align = '=';
    }
    ++i;
  }
  int64_t width = 0;
  while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9')
    width = std::min<int64_t>(width * 10 + (spec[i++] - '0'), 100000);
  bool grouping = false;
  if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) {
    grouping = true;
    ++i;
  }
  int64_t precision = -1;
  if (i < spec.size() && spec[i] == '.') {
    ++i;
    precision = 0;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9')
      precision = std::min<int64_t>(precision * 10 + (spec[i++] - '0'), 300);
  }
  char type = 0;
  if (i < spec.size()) type = spec[i++];
  if (i != spec.size()) throw TemplateError("Invalid format specifier");
  std::string body;
  const bool numeric = v.is_number() && type != 's';
  if (!numeric) {
    if (type && type != 's')
      throw TemplateError("Unknown format code for object of type '" + type_name(v) + "'");
    body = to_str(v);
    if (precision >= 0) {
      const std::u32string b = decode(body);
      if (static_cast<int64_t>(b.size()) > precision)
        body = encode(std::u32string_view(b).substr(0, static_cast<size_t>(precision)));
    }
    return pad(body, width, align && align != '=' ? align : '<', fill);
  }
  std::string flags = sign == "-" ? "" : sign;
  if (type == 0 && v.is_integral()) type = 'd';
  if (type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b' || type == 'n') {
    if (!v.is_integral())
      throw TemplateError(std::string("Unknown format code '") + type +
                          "' for object of type 'float'");
    const int64_t n = v.as_int();
    if (type == 'b') {
      uint64_t u = n < 0 ? static_cast<uint64_t>(-(n + 1)) + 1 : static_cast<uint64_t>(n);
      do {
        body.insert(body.begin(), static_cast<char>('0' + (u & 1)));
        u >>= 1;
      } while (u);
      if (n < 0) body = "-" + body;
    } else {
      body = cformat_int("%" + flags + "ll" + (type == 'n' ? 'd' : type), n);
    }
  } else if (type == 0) {
    body = precision >= 0
               ? cformat("%" + flags + "." + std::to_string(precision) + "g", v.as_double())
               : (flags == "+" && v.as_double() >= 0 ? "+" : "") + float_repr(v.as_double());
  } else if (type == '%') {
    body = cformat("%" + flags + "." + std::to_string(precision < 0 ? 6 : precision) + "f",
                   v.as_double() * 100) +
           "%";
  } else if (std::string_view("fFeEgG").find(type) != std::string_view::npos) {
    body = cformat("%" + flags + "." + std::to_string(precision < 0 ? 6 : precision) + type,
                   v.as_double());
  } else {
    throw TemplateError(std::string("Unknown format code '") + type + "'");
  }
  if (grouping) {
    const size_t start = (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
    size_t end = body.find_first_not_of("0123456789", start);
    if (end == std::string::npos) end = body.size();
    for (int64_t p = static_cast<int64_t>(end) - 3; p > static_cast<int64_t>(start); p -= 3)
      body.insert(static_cast<size_t>(p), 1, spec[0] == '_' ? '_' : ',');
  }
  if (align == '=') {
    const size_t sign_len = (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
    std::string digits =
        pad(body.substr(sign_len), width - static_cast<int64_t>(sign_len), '>', fill);
    return body.substr(0, sign_len) + digits;
  }
  return pad(body, width, align ? align : '>', fill);
}

}  // namespace

std::string brace_format(std::string_view fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  size_t i = 0;
  while (i < fmt.size()) {
    const char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      throw TemplateError("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.push_back('{');
      i += 2;
      continue;
    }
    const size_t close = fmt.find('}', i);
    if (close == std::string_view::npos)
      throw TemplateError("Single '{' encountered in format string");
    std::string_view field = fmt.substr(i + 1, close - i - 1);
    i = close + 1;
    std::string_view spec;
    char conversion = 0;
    if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (const size_t bang = field.find('!'); bang != std::string_view::npos) {
      if (bang + 2 != field.size()) throw TemplateError("invalid conversion in format string");
      conversion = field[bang + 1];
      field = field.substr(0, bang);
    }
    const Value* arg = nullptr;
    if (field.empty()) {
      if (auto_index >= args.positional.size())
        throw TemplateError("Replacement index " + std::to_string(auto_index) +
                            " out of range for positional args tuple");
      arg = &args.positional[auto_index++];
    } else if (field.find_first_not_of("0123456789") == std::string_view::npos) {
      const size_t index = std::stoul(std::string(field.substr(0, 9)));
      if (index >= args.positional.size())
        throw TemplateError("Replacement index " + std::to_string(index) +
                            " out of range for positional args tuple");
      arg = &args.positional[index];
    } else {
      for (const auto& [name, value] : args.keyword)
        if (name == field) arg = &value;
      if (!arg) throw TemplateError("KeyError: '" + std::string(field) + "'");
    }
    Value shown = *arg;
    if (conversion == 'r' || conversion == 'a') {
      shown = Value::string(repr(*arg));
    } else if (conversion == 's') {
      shown = Value::string(to_str(*arg));
    } else if (conversion) {
      throw TemplateError(std::string("Unknown conversion specifier ") + conversion);
    }
    out += apply_spec(shown, spec);
  }
  return out;
}

}  // namespace anvil::jinja::pystr
