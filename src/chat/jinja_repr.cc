// Python's str() and repr() of Jinja values: what {{ value }} prints for lists, dicts, floats,
// None and booleans, byte for byte as CPython writes them.
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"
#include "chat/jinja_value.h"

namespace anvil::jinja {

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  const std::string sci(buf, res.ptr);
  // sci looks like "-1.2345e+02": split into sign, digits and exponent.
  size_t pos = 0;
  std::string out;
  if (sci[0] == '-') {
    out = "-";
    pos = 1;
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t i = pos; i < e_pos; ++i)
    if (sci[i] != '.') digits.push_back(sci[i]);
  const int exp = std::atoi(sci.c_str() + e_pos + 1);
  const int n = static_cast<int>(digits.size());
  if (exp >= -4 && exp < 16) {
    if (exp >= 0) {
      if (n <= exp + 1) {
        out += digits + std::string(static_cast<size_t>(exp + 1 - n), '0') + ".0";
      } else {
        out += digits.substr(0, static_cast<size_t>(exp + 1)) + "." +
               digits.substr(static_cast<size_t>(exp + 1));
      }
    } else {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (n > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return out + exp_buf;
}

std::string string_repr(std::string_view s) {
  const std::u32string cps = unicode::decode(s);
  bool has_single = false;
  bool has_double = false;
  for (char32_t c : cps) {
    has_single |= c == '\'';
    has_double |= c == '"';
  }
  const char32_t quote = (has_single && !has_double) ? '"' : '\'';
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back(static_cast<char>(quote));
  char buf[16];
  for (char32_t c : cps) {
    if (c == quote || c == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (unicode::is_printable(c)) {
      unicode::append_utf8(out, c);
    } else if (c >= 0xDC80 && c <= 0xDCFF) {
      std::snprintf(buf, sizeof(buf), "\\udc%02x", static_cast<unsigned>(c - 0xDC00));
      out += buf;
    } else if (c <= 0xFF) {
      std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if (c <= 0xFFFF) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out.push_back(static_cast<char>(quote));
  return out;
}

namespace {

std::string repr_at(const Value& v, int depth);

std::string join_repr(const std::vector<Value>& items, int depth) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += repr_at(items[i], depth + 1);
  }
  return out;
}

std::string dict_body(const DictData& d, int depth) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : d.entries) {
    if (!first) out += ", ";
    first = false;
    out += repr_at(k, depth + 1) + ": " + repr_at(v, depth + 1);
  }
  return out + "}";
}

std::string repr_at(const Value& v, int depth) {
  if (depth > kMaxDepth + 8) throw TemplateError("value nested too deeply to print");
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.as_int());
    case Value::Kind::kFloat:
      return float_repr(v.as_double());
    case Value::Kind::kString:
      if (v.is_markup()) return "Markup(" + string_repr(v.as_string()) + ")";
      return string_repr(v.as_string());
    case Value::Kind::kList: {
      const ListData& l = v.as_list();
      switch (l.kind) {
        case ListKind::kList:
          return "[" + join_repr(l.items, depth) + "]";
        case ListKind::kTuple:
          return "(" + join_repr(l.items, depth) + (l.items.size() == 1 ? ",)" : ")");
        case ListKind::kRange:
          return "range(" + std::to_string(l.range_start) + ", " + std::to_string(l.range_stop) +
                 (l.range_step == 1 ? ")" : ", " + std::to_string(l.range_step) + ")");
        case ListKind::kIterator:
          return "<generator object>";
        case ListKind::kDictItems:
          return "dict_items([" + join_repr(l.items, depth) + "])";
        case ListKind::kDictKeys:
          return "dict_keys([" + join_repr(l.items, depth) + "])";
        case ListKind::kDictValues:
          return "dict_values([" + join_repr(l.items, depth) + "])";
      }
      return "";
    }
    case Value::Kind::kDict: {
      const DictData& d = v.as_dict();
      if (d.kind == DictKind::kNamespace) return "<Namespace " + dict_body(d, depth) + ">";
      if (d.kind == DictKind::kLoop) {
        const Value* index = d.find("index");
        const Value* length = d.find("length");
        return "<LoopContext " + (index ? to_str(*index) : "?") + "/" +
               (length ? to_str(*length) : "?") + ">";
      }
      return dict_body(d, depth);
    }
    case Value::Kind::kFunction:
      return "<function " + v.as_function().name + ">";
  }
  return "";
}

}  // namespace

std::string repr(const Value& v) {
  return repr_at(v, 0);
}

std::string to_str(const Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) return "";
  return repr(v);
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

Value escape(const Value& v) {
  if (v.is_markup()) return v;
  return Value::markup(html_escape(to_str(v)));
}

}  // namespace anvil::jinja
