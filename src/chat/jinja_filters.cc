// The built-in Jinja filters (jinja2 3.x semantics, with transformers' tojson) and their
// registry. Filters that return generators in jinja2 (map, select, unique, ...) return
// iterator values, which behave like generators: always true, no length.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_strings.h"
#include "chat/jinja_unicode.h"

namespace anvil::jinja {

namespace {

using Params = std::vector<std::string_view>;

Value iterator(std::vector<Value> items) {
  return Value::list(std::move(items), ListKind::kIterator);
}

Value ignore_case(const Value& v) {
  return v.is_string() ? Value::string(unicode::lower(v.as_string())) : v;
}

int64_t int_param(const Value& v, const char* what) {
  if (!v.is_integral())
    throw TemplateError(std::string(what) + " must be an integer, not " + type_name(v));
  return v.as_int();
}

// Python's len().
int64_t length_of(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return 0;
    case Value::Kind::kString:
      return static_cast<int64_t>(unicode::length(v.as_string()));
    case Value::Kind::kList:
      if (v.as_list().kind != ListKind::kIterator)
        return static_cast<int64_t>(v.as_list().items.size());
      break;
    case Value::Kind::kDict:
      if (v.is_mapping()) return static_cast<int64_t>(v.as_dict().entries.size());
      if (v.as_dict().kind == DictKind::kLoop) {
        const Value* n = v.as_dict().find("length");
        return n ? n->as_int() : 0;
      }
      break;
    default:
      break;
  }
  throw TemplateError("object of type '" + type_name(v) + "' has no len()");
}

Value f_length(const Value& v, const CallArgs& args) {
  BoundArgs("length", args, {});
  return Value::integer(length_of(v));
}

Value f_abs(const Value& v, const CallArgs& args) {
  BoundArgs("abs", args, {});
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) throw TemplateError("integer overflow");
    return Value::integer(std::abs(v.as_int()));
  }
  if (v.is_float()) return Value::number(std::fabs(v.as_double()));
  throw TemplateError("bad operand type for abs(): '" + type_name(v) + "'");
}

Value f_attr(const Value& v, const CallArgs& args) {
  BoundArgs a("attr", args, {"name"}, 1);
  if (!a.get(0)->is_string()) throw TemplateError("attribute name must be string");
  const std::string& name = a.get(0)->as_string();
  if (v.is_mapping()) {
    // Only real attributes (methods) count; dict items are not attributes.
    const Value m = get_attr(Value::dict({}), name);
    if (m.is_undefined()) return Value::undefined("'dict object' has no attribute '" + name + "'");
    return get_attr(v, name);
  }
  return get_attr(v, name);
}

Value f_capitalize(const Value& v, const CallArgs& args) {
  BoundArgs("capitalize", args, {});
  return Value::string_like(v, pystr::capitalize(to_str(v)));
}

Value f_center(const Value& v, const CallArgs& args) {
  BoundArgs a("center", args, {"width"});
  const int64_t width = a.has(0) ? int_param(*a.get(0), "width") : 80;
  return Value::string_like(v, pystr::pad(to_str(v), std::min<int64_t>(width, 1 << 24), 'c', " "));
}

Value f_default(const Value& v, const CallArgs& args) {
  BoundArgs a("default", args, {"default_value", "boolean"});
  const bool boolean = a.has(1) && truthy(*a.get(1));
  if (v.is_undefined() || (boolean && !truthy(v))) return a.get_or(0, Value::string(""));
  return v;
}

Value f_dictsort(const Value& v, const CallArgs& args) {
  BoundArgs a("dictsort", args, {"case_sensitive", "by", "reverse"});
  const bool case_sensitive = a.has(0) && truthy(*a.get(0));
  const std::string by = a.has(1) ? to_str(*a.get(1)) : "key";
  if (by != "key" && by != "value")
    throw TemplateError("You can only sort by either \"key\" or \"value\"");
  const bool reverse = a.has(2) && truthy(*a.get(2));
  if (!v.is_mapping()) throw TemplateError("dictsort expects a mapping, got " + type_name(v));
  std::vector<std::pair<Value, Value>> entries = v.as_dict().entries;
  const bool by_key = by == "key";
  auto key = [&](const std::pair<Value, Value>& e) {
    const Value& k = by_key ? e.first : e.second;
    return case_sensitive ? k : ignore_case(k);
  };
  std::stable_sort(entries.begin(), entries.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(key(y), key(x)) < 0 : compare(key(x), key(y)) < 0;
  });
  std::vector<Value> out;
  for (auto& [k, val] : entries) out.push_back(Value::list({k, val}, ListKind::kTuple));
  return Value::list(std::move(out));
}

// markupsafe.escape: Markup comes back unchanged.
Value f_escape(const Value& v, const CallArgs& args) {
  BoundArgs("escape", args, {});
  return escape(v);
}

// forceescape escapes Markup too.
Value f_forceescape(const Value& v, const CallArgs& args) {
  BoundArgs("forceescape", args, {});
  return Value::markup(html_escape(to_str(v)));
}

Value f_first(const Value& v, const CallArgs& args) {
  BoundArgs("first", args, {});
  if (v.is_list() && !v.as_list().items.empty()) return v.as_list().items.front();
  const std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(const Value& v, const CallArgs& args) {
  BoundArgs("last", args, {});
  if (v.is_list() && v.as_list().kind == ListKind::kIterator)
    throw TemplateError("'generator' object is not reversible");
  const std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// Python float(str): surrounding whitespace, underscores between digits, inf and nan allowed.
bool parse_float(const std::string& text, double* out) {
  const std::string s = pystr::strip(text, nullptr, true, true);
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      if (i == 0 || i + 1 == s.size() || !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
          !std::isdigit(static_cast<unsigned char>(s[i + 1])))
        return false;
      continue;
    }
    clean.push_back(s[i]);
  }
  if (clean.empty()) return false;
  const std::string lower = unicode::lower(clean);
  const std::string body = (lower[0] == '+' || lower[0] == '-') ? lower.substr(1) : lower;
  if (body == "inf" || body == "infinity" || body == "nan") {
    const double x = body == "nan" ? NAN : INFINITY;
    *out = lower[0] == '-' ? -x : x;
    return true;
  }
  if (body.empty() || body.find_first_not_of("0123456789.e+-") != std::string::npos ||
      body.find("0x") != std::string::npos)
    return false;
  char* end = nullptr;
  *out = std::strtod(clean.c_str(), &end);
  return end == clean.c_str() + clean.size();
}

// Python int(str, base).
bool parse_int(const std::string& text, int64_t base, int64_t* out) {
  std::string s = pystr::strip(text, nullptr, true, true);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s = s.substr(1);
  }
  if (s.size() > 1 && s[0] == '0' && base != 10) {
    const char p = static_cast<char>(s[1] | 32);
    if ((p == 'x' && (base == 16 || base == 0)) || (p == 'o' && (base == 8 || base == 0)) ||
        (p == 'b' && (base == 2 || base == 0))) {
      base = p == 'x' ? 16 : (p == 'o' ? 8 : 2);
      s = s.substr(2);
    }
  }
  if (base == 0) base = 10;
  std::string clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_' && i > 0 && i + 1 < s.size() && s[i - 1] != '_') continue;
    clean.push_back(s[i]);
  }
  if (clean.empty() || base < 2 || base > 36) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(clean.c_str(), &end, static_cast<int>(base));
  if (end != clean.c_str() + clean.size() || errno == ERANGE || clean[0] == '-' ||
      clean[0] == '+' || clean[0] == ' ')
    return false;
  *out = negative ? -v : v;
  return true;
}

Value f_float(const Value& v, const CallArgs& args) {
  BoundArgs a("float", args, {"default"});
  if (v.is_undefined()) throw TemplateError(v.undefined_message());
  const Value fallback = a.get_or(0, Value::number(0.0));
  if (v.is_number()) return Value::number(v.as_double());
  double d;
  if (v.is_string() && parse_float(v.as_string(), &d)) return Value::number(d);
  return fallback;
}

Value f_int(const Value& v, const CallArgs& args) {
  BoundArgs a("int", args, {"default", "base"});
  if (v.is_undefined()) throw TemplateError(v.undefined_message());
  const Value fallback = a.get_or(0, Value::integer(0));
  const int64_t base = a.has(1) ? int_param(*a.get(1), "base") : 10;
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) {
    const double d = v.as_double();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    int64_t i;
    if (parse_int(v.as_string(), base, &i)) return Value::integer(i);
    double d;
    if (parse_float(v.as_string(), &d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(d));
  }
  return fallback;
}

Value f_format(const Value& v, const CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty())
    throw TemplateError("can't handle positional and keyword arguments at the same time");
  // soft_str(value) % args: Markup stays Markup (and escapes the arguments).
  const Value format_string = v.is_markup() ? v : Value::string(to_str(v));
  if (!args.keyword.empty()) {
    std::vector<std::pair<Value, Value>> entries;
    for (const auto& [k, val] : args.keyword) entries.emplace_back(Value::string(k), val);
    return binary_op("%", format_string, Value::dict(std::move(entries)));
  }
  return binary_op("%", format_string, Value::list(args.positional, ListKind::kTuple));
}

Value f_indent(const Value& v, const CallArgs& args) {
  BoundArgs a("indent", args, {"width", "first", "blank"});
  if (v.is_undefined()) throw TemplateError(v.undefined_message());
  if (!v.is_string())
    throw TemplateError("unsupported operand type(s) for +=: '" + type_name(v) + "' and 'str'");
  std::string indention = "    ";
  if (a.has(0)) {
    if (a.get(0)->is_string()) {
      indention = a.get(0)->as_string();
    } else {
      indention = std::string(
          static_cast<size_t>(std::clamp<int64_t>(int_param(*a.get(0), "width"), 0, 1 << 16)), ' ');
    }
  }
  const bool first = a.has(1) && truthy(*a.get(1));
  const bool blank = a.has(2) && truthy(*a.get(2));
  const std::vector<std::string> lines = pystr::splitlines(to_str(v) + "\n", false);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) pystr::append_bounded(rv, "\n" + indention, "indent's result");
      pystr::append_bounded(rv, lines[i], "indent's result");
    }
  } else {
    rv = lines.empty() ? "" : lines[0];
    for (size_t i = 1; i < lines.size(); ++i)
      pystr::append_bounded(rv, "\n" + (lines[i].empty() ? lines[i] : indention + lines[i]),
                            "indent's result");
  }
  if (first) rv = indention + rv;
  return Value::string_like(v, std::move(rv));
}

Value f_items(const Value& v, const CallArgs& args) {
  BoundArgs("items", args, {});
  if (v.is_undefined()) return iterator({});
  if (!v.is_mapping()) throw TemplateError("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.as_dict().entries)
    out.push_back(Value::list({k, val}, ListKind::kTuple));
  return iterator(std::move(out));
}

Value f_join(const Value& v, const CallArgs& args) {
  BoundArgs a("join", args, {"d", "attribute"});
  const std::string sep = a.has(0) ? to_str(*a.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) pystr::append_bounded(out, sep, "join's result");
    first = false;
    pystr::append_bounded(
        out, to_str(a.has(1) && !a.get(1)->is_none() ? get_attribute_path(item, *a.get(1)) : item),
        "join's result");
  }
  return Value::string(std::move(out));
}

Value f_list(const Value& v, const CallArgs& args) {
  BoundArgs("list", args, {});
  return Value::list(iterate(v));
}

Value f_lower(const Value& v, const CallArgs& args) {
  BoundArgs("lower", args, {});
  return Value::string_like(v, unicode::lower(to_str(v)));
}

Value f_upper(const Value& v, const CallArgs& args) {
  BoundArgs("upper", args, {});
  return Value::string_like(v, unicode::upper(to_str(v)));
}

Value f_map(const Value& v, const CallArgs& args) {
  std::vector<Value> out;
  if (!truthy(v)) return iterator({});
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [k, val] : args.keyword) {
    if (k == "attribute") {
      attribute = &val;
    } else if (k == "default") {
      fallback = &val;
    }
  }
  if (attribute) {
    if (!args.positional.empty() || args.keyword.size() != (fallback ? 2u : 1u))
      throw TemplateError("Unexpected keyword argument to map");
    for (const Value& item : iterate(v)) {
      Value x = get_attribute_path(item, *attribute);
      if (fallback && x.is_undefined()) x = *fallback;
      out.push_back(std::move(x));
    }
    return iterator(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string())
    throw TemplateError("map requires a filter argument");
  const std::string& name = args.positional[0].as_string();
  const FilterFn fn = find_filter(name);
  if (!fn) throw TemplateError("No filter named '" + name + "'.");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : iterate(v)) out.push_back(fn(item, rest));
  return iterator(std::move(out));
}

Value min_max(const Value& v, const CallArgs& args, bool want_max, const char* name) {
  BoundArgs a(name, args, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.has(0) && truthy(*a.get(0));
  const std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    Value k = a.has(1) && !a.get(1)->is_none() ? get_attribute_path(item, *a.get(1)) : item;
    return case_sensitive ? k : ignore_case(k);
  };
  size_t best = 0;
  Value best_key = key(items[0]);
  for (size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    const int c = compare(k, best_key, want_max ? ">" : "<");
    if (want_max ? c > 0 : c < 0) {
      best = i;
      best_key = std::move(k);
    }
  }
  return items[best];
}

Value f_max(const Value& v, const CallArgs& args) {
  return min_max(v, args, true, "max");
}
Value f_min(const Value& v, const CallArgs& args) {
  return min_max(v, args, false, "min");
}

Value f_replace(const Value& v, const CallArgs& args) {
  BoundArgs a("replace", args, {"old", "new", "count"}, 2);
  const int64_t count = a.has(2) && !a.get(2)->is_none() ? int_param(*a.get(2), "count") : -1;
  return Value::string(pystr::replace(to_str(v), to_str(*a.get(0)), to_str(*a.get(1)), count));
}

Value f_reverse(const Value& v, const CallArgs& args) {
  BoundArgs("reverse", args, {});
  if (v.is_string()) {
    std::u32string cps = unicode::decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return Value::string(unicode::encode(cps));
  }
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  if (v.is_list() && v.as_list().kind == ListKind::kIterator) return Value::list(std::move(items));
  return iterator(std::move(items));
}

Value f_round(const Value& v, const CallArgs& args) {
  BoundArgs a("round", args, {"precision", "method"});
  const int64_t precision = a.has(0) ? int_param(*a.get(0), "precision") : 0;
  const std::string method = a.has(1) ? to_str(*a.get(1)) : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    throw TemplateError("method must be common, ceil or floor");
  if (!v.is_number())
    throw TemplateError("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (v.is_integral()) {
      if (precision >= 0) return Value::integer(v.as_int());
      const double scale = std::pow(10.0, static_cast<double>(-precision));
      return Value::integer(static_cast<int64_t>(std::nearbyint(v.as_double() / scale) * scale));
    }
    const double d = v.as_double();
    if (!std::isfinite(d)) return v;
    if (precision >= 0 && precision <= 300) {
      // printf rounds the exact binary value half-to-even, as Python's round() does.
      char buf[400];
      std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), d);
      return Value::number(std::strtod(buf, nullptr));
    }
    if (precision > 300) return v;
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value::number(std::nearbyint(d / scale) * scale);
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_double() * scale;
  return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
}

// Markup(value): str() of anything (an undefined value gives ''), marked safe.
Value f_safe(const Value& v, const CallArgs& args) {
  BoundArgs("safe", args, {});
  if (v.is_markup()) return v;
  return Value::markup(to_str(v));
}

Value f_string(const Value& v, const CallArgs& args) {
  BoundArgs("string", args, {});
  if (v.is_markup()) return v;
  return Value::string(to_str(v));
}

// The sort key of an item for sort/unique: the item, an attribute, or a list of attributes
// ("a,b"), lower-cased unless case-sensitive.
Value sort_key(const Value& item, const Value* attribute, bool case_sensitive, bool multi) {
  if (!attribute || attribute->is_none()) return case_sensitive ? item : ignore_case(item);
  if (multi && attribute->is_string() && attribute->as_string().find(',') != std::string::npos) {
    std::vector<Value> parts;
    const std::string comma = ",";
    for (const std::string& part : pystr::split(attribute->as_string(), &comma, -1)) {
      Value k = get_attribute_path(item, Value::string(part));
      parts.push_back(case_sensitive ? k : ignore_case(k));
    }
    return Value::list(std::move(parts));
  }
  Value k = get_attribute_path(item, *attribute);
  return case_sensitive ? k : ignore_case(k);
}

Value f_sort(const Value& v, const CallArgs& args) {
  BoundArgs a("sort", args, {"reverse", "case_sensitive", "attribute"});
  const bool reverse = a.has(0) && truthy(*a.get(0));
  const bool case_sensitive = a.has(1) && truthy(*a.get(1));
  std::vector<Value> items = iterate(v);
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items.size(); ++i)
    keyed.emplace_back(sort_key(items[i], a.get(2), case_sensitive, true), i);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? compare(y.first, x.first) < 0 : compare(x.first, y.first) < 0;
  });
  std::vector<Value> out;
  for (const auto& [k, i] : keyed) out.push_back(items[i]);
  return Value::list(std::move(out));
}

Value f_sum(const Value& v, const CallArgs& args) {
  BoundArgs a("sum", args, {"attribute", "start"});
  Value total = a.get_or(1, Value::integer(0));
  for (const Value& item : iterate(v))
    total = binary_op(
        "+", total, a.has(0) && !a.get(0)->is_none() ? get_attribute_path(item, *a.get(0)) : item);
  return total;
}

Value f_title(const Value& v, const CallArgs& args) {
  BoundArgs("title", args, {});
  return Value::string(pystr::jinja_title(to_str(v)));
}

Value f_tojson(const Value& v, const CallArgs& args) {
  BoundArgs a("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonOptions o;
  o.ensure_ascii = a.has(0) && truthy(*a.get(0));
  if (a.has(1) && !a.get(1)->is_none()) {
    o.has_indent = true;
    if (a.get(1)->is_string()) {
      o.indent = a.get(1)->as_string();
    } else {
      o.indent = std::string(
          static_cast<size_t>(std::clamp<int64_t>(int_param(*a.get(1), "indent"), 0, 1 << 10)),
          ' ');
    }
    o.item_separator = ",";
  }
  if (a.has(2) && !a.get(2)->is_none()) {
    const Value& seps = *a.get(2);
    if (!seps.is_sequence_list() || seps.as_list().items.size() != 2 ||
        !seps.as_list().items[0].is_string() || !seps.as_list().items[1].is_string())
      throw TemplateError("separators must be a pair of strings");
    o.item_separator = seps.as_list().items[0].as_string();
    o.key_separator = seps.as_list().items[1].as_string();
  }
  o.sort_keys = a.has(3) && truthy(*a.get(3));
  return Value::string(to_json(v, o));
}

Value f_trim(const Value& v, const CallArgs& args) {
  BoundArgs a("trim", args, {"chars"});
  const std::string* chars = nullptr;
  std::string chars_text;
  if (a.has(0) && !a.get(0)->is_none()) {
    chars_text = to_str(*a.get(0));
    chars = &chars_text;
  }
  return Value::string_like(v, pystr::strip(to_str(v), chars, true, true));
}

Value f_truncate(const Value& v, const CallArgs& args) {
  BoundArgs a("truncate", args, {"length", "killwords", "end", "leeway"});
  const int64_t length = a.has(0) ? int_param(*a.get(0), "length") : 255;
  const bool killwords = a.has(1) && truthy(*a.get(1));
  const std::string end = a.has(2) ? to_str(*a.get(2)) : "...";
  const int64_t leeway = a.has(3) && !a.get(3)->is_none() ? int_param(*a.get(3), "leeway") : 5;
  const auto end_len = static_cast<int64_t>(unicode::length(end));
  if (length < end_len) throw TemplateError("expected length >= " + std::to_string(end_len));
  if (!v.is_string()) {
    // jinja2 truncates whatever has a length; only short sequences come through unchanged.
    if (length_of(v) <= length + leeway) return v;
    throw TemplateError("truncate expects a string, got " + type_name(v));
  }
  const std::string& s = v.as_string();
  const std::u32string cps = unicode::decode(s);
  if (static_cast<int64_t>(cps.size()) <= length + leeway) return v;
  const std::string head =
      unicode::encode(std::u32string_view(cps).substr(0, static_cast<size_t>(length - end_len)));
  if (killwords) return Value::string(head + end);
  const size_t space = head.rfind(' ');
  return Value::string((space == std::string::npos ? head : head.substr(0, space)) + end);
}

Value f_unique(const Value& v, const CallArgs& args) {
  BoundArgs a("unique", args, {"case_sensitive", "attribute"});
  const bool case_sensitive = a.has(0) && truthy(*a.get(0));
  std::vector<Value> seen;
  std::vector<Value> out;
  for (const Value& item : iterate(v)) {
    Value k = sort_key(item, a.get(1), case_sensitive, false);
    check_hashable(k);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); }))
      continue;
    seen.push_back(std::move(k));
    out.push_back(item);
  }
  return iterator(std::move(out));
}

Value f_wordcount(const Value& v, const CallArgs& args) {
  BoundArgs("wordcount", args, {});
  int64_t n = 0;
  bool in_word = false;
  for (char32_t c : unicode::decode(to_str(v))) {
    const bool w = unicode::is_word(c);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value f_batch(const Value& v, const CallArgs& args) {
  BoundArgs a("batch", args, {"linecount", "fill_with"}, 1);
  const int64_t count = int_param(*a.get(0), "linecount");
  if (count <= 0) throw TemplateError("batch size must be positive");
  std::vector<Value> out;
  std::vector<Value> tmp;
  for (const Value& item : iterate(v)) {
    if (static_cast<int64_t>(tmp.size()) == count) {
      out.push_back(Value::list(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(item);
  }
  if (!tmp.empty()) {
    if (a.has(1) && !a.get(1)->is_none())
      while (static_cast<int64_t>(tmp.size()) < count) tmp.push_back(*a.get(1));
    out.push_back(Value::list(std::move(tmp)));
  }
  return iterator(std::move(out));
}

// select/reject/selectattr/rejectattr.
Value select_or_reject(const Value& v, const CallArgs& args, bool attr, bool keep_when,
                       const char* name) {
  if (!truthy(v)) return iterator({});
  size_t next = 0;
  const Value* attribute = nullptr;
  if (attr) {
    if (args.positional.empty()) throw TemplateError(std::string(name) + " requires an attribute");
    attribute = &args.positional[next++];
  }
  TestFn test = nullptr;
  CallArgs test_args;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) throw TemplateError("test name must be a string");
    const std::string& test_name = args.positional[next].as_string();
    test = find_test(test_name);
    if (!test) throw TemplateError("No test named '" + test_name + "'.");
    test_args.positional.assign(args.positional.begin() + static_cast<long>(next) + 1,
                                args.positional.end());
    test_args.keyword = args.keyword;
  } else if (!args.keyword.empty()) {
    throw TemplateError(std::string(name) + "() got an unexpected keyword argument");
  }
  std::vector<Value> out;
  for (const Value& item : iterate(v)) {
    const Value x = attribute ? get_attribute_path(item, *attribute) : item;
    const bool pass = test ? test(x, test_args) : truthy(x);
    if (pass == keep_when) out.push_back(item);
  }
  return iterator(std::move(out));
}

Value f_select(const Value& v, const CallArgs& a) {
  return select_or_reject(v, a, false, true, "select");
}
Value f_reject(const Value& v, const CallArgs& a) {
  return select_or_reject(v, a, false, false, "reject");
}
Value f_selectattr(const Value& v, const CallArgs& a) {
  return select_or_reject(v, a, true, true, "selectattr");
}
Value f_rejectattr(const Value& v, const CallArgs& a) {
  return select_or_reject(v, a, true, false, "rejectattr");
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"abs", f_abs},           {"attr", f_attr},
      {"batch", f_batch},       {"capitalize", f_capitalize},
      {"center", f_center},     {"count", f_length},
      {"d", f_default},         {"default", f_default},
      {"dictsort", f_dictsort}, {"e", f_escape},
      {"escape", f_escape},     {"first", f_first},
      {"float", f_float},       {"forceescape", f_forceescape},
      {"format", f_format},     {"indent", f_indent},
      {"int", f_int},           {"items", f_items},
      {"join", f_join},         {"last", f_last},
      {"length", f_length},     {"list", f_list},
      {"lower", f_lower},       {"map", f_map},
      {"max", f_max},           {"min", f_min},
      {"reject", f_reject},     {"rejectattr", f_rejectattr},
      {"replace", f_replace},   {"reverse", f_reverse},
      {"round", f_round},       {"safe", f_safe},
      {"select", f_select},     {"selectattr", f_selectattr},
      {"sort", f_sort},         {"string", f_string},
      {"sum", f_sum},           {"title", f_title},
      {"tojson", f_tojson},     {"trim", f_trim},
      {"truncate", f_truncate}, {"unique", f_unique},
      {"upper", f_upper},       {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  const auto& table = filters();
  const auto it = table.find(name);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace anvil::jinja
