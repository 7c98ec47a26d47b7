// Attribute access, subscripts and slices of Jinja values, including the Python methods of str,
// dict and list that templates call (s.strip(), d.items(), ...). Follows jinja2's immutable
// sandbox: methods that would mutate a list or dict are refused.
#include <algorithm>
#include <optional>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_strings.h"
#include "chat/jinja_unicode.h"

namespace anvil::jinja {

namespace {

const std::string* opt_string(const Value* v, const char* what) {
  if (!v || v->is_none()) return nullptr;
  if (!v->is_string())
    throw TemplateError(std::string(what) + " must be str or None, not " + type_name(*v));
  return &v->as_string();
}

int64_t int_arg(const Value& v, const char* what) {
  if (!v.is_integral())
    throw TemplateError("'" + type_name(v) + "' object cannot be interpreted as an integer (" +
                        what + ")");
  return v.as_int();
}

const std::string& str_arg(const Value& v, const std::string& method) {
  if (!v.is_string()) throw TemplateError(method + "() argument must be str, not " + type_name(v));
  return v.as_string();
}

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(Value::string(p));
  return Value::list(std::move(items));
}

// startswith/endswith: a str or a tuple of str, optionally within [start, end).
bool affix_match(const std::string& s, const Value& affix, const Value* start, const Value* end,
                 bool prefix, const std::string& method) {
  std::string_view view = s;
  std::string sub;
  if (start || end) {
    const std::u32string cps = unicode::decode(s);
    const auto n = static_cast<int64_t>(cps.size());
    auto clamp = [n](const Value* v, int64_t fallback) {
      if (!v || v->is_none()) return fallback;
      int64_t i = int_arg(*v, "slice index");
      if (i < 0) i += n;
      return std::clamp<int64_t>(i, 0, n);
    };
    const int64_t b = clamp(start, 0);
    const int64_t e = clamp(end, n);
    if (b > e) return false;
    sub = unicode::encode(
        std::u32string_view(cps).substr(static_cast<size_t>(b), static_cast<size_t>(e - b)));
    view = sub;
  }
  auto one = [&](const std::string& a) {
    if (a.size() > view.size()) return false;
    return prefix ? view.substr(0, a.size()) == a : view.substr(view.size() - a.size()) == a;
  };
  if (affix.is_list() && affix.as_list().kind == ListKind::kTuple) {
    for (const Value& item : affix.as_list().items)
      if (one(str_arg(item, method))) return true;
    return false;
  }
  if (!affix.is_string())
    throw TemplateError(method + " first arg must be str or a tuple of str, not " +
                        type_name(affix));
  return one(affix.as_string());
}

Value str_method(const std::string& s, const std::string& name, const CallArgs& call) {
  auto args = [&](std::vector<std::string_view> params, size_t required = 0) {
    return BoundArgs(name, call, std::move(params), required);
  };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    BoundArgs a = args({"chars"});
    return Value::string(
        pystr::strip(s, opt_string(a.get(0), "strip arg"), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    BoundArgs a = args({"sep", "maxsplit"});
    const int64_t maxsplit = a.has(1) ? int_arg(*a.get(1), "maxsplit") : -1;
    const std::string* sep = opt_string(a.get(0), "sep");
    return string_list(name == "split" ? pystr::split(s, sep, maxsplit)
                                       : pystr::rsplit(s, sep, maxsplit));
  }
  if (name == "splitlines") {
    BoundArgs a = args({"keepends"});
    return string_list(pystr::splitlines(s, a.has(0) && truthy(*a.get(0))));
  }
  if (name == "startswith" || name == "endswith") {
    BoundArgs a = args({"prefix", "start", "end"}, 1);
    return Value::boolean(
        affix_match(s, *a.get(0), a.get(1), a.get(2), name == "startswith", name));
  }
  if (name == "upper" || name == "lower" || name == "casefold" || name == "title" ||
      name == "capitalize" || name == "swapcase") {
    args({});
    if (name == "upper") return Value::string(unicode::upper(s));
    if (name == "title") return Value::string(pystr::title(s));
    if (name == "capitalize") return Value::string(pystr::capitalize(s));
    if (name == "swapcase") return Value::string(pystr::swapcase(s));
    return Value::string(unicode::lower(s));
  }
  if (name == "replace") {
    BoundArgs a = args({"old", "new", "count"}, 2);
    const int64_t count = a.has(2) ? int_arg(*a.get(2), "count") : -1;
    return Value::string(
        pystr::replace(s, str_arg(*a.get(0), name), str_arg(*a.get(1), name), count));
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    BoundArgs a = args({"sub", "start", "end"}, 1);
    const int64_t at = pystr::find(s, str_arg(*a.get(0), name), a.get(1), a.get(2),
                                   name == "rfind" || name == "rindex");
    if (at < 0 && (name == "index" || name == "rindex")) throw TemplateError("substring not found");
    return Value::integer(at);
  }
  if (name == "count") {
    BoundArgs a = args({"sub"}, 1);
    return Value::integer(pystr::count(s, str_arg(*a.get(0), name)));
  }
  if (name == "join") {
    BoundArgs a = args({"iterable"}, 1);
    std::string out;
    size_t i = 0;
    for (const Value& item : iterate(*a.get(0))) {
      if (!item.is_string())
        throw TemplateError("sequence item " + std::to_string(i) + ": expected str instance, " +
                            type_name(item) + " found");
      if (i++) out += s;
      out += item.as_string();
    }
    return Value::string(std::move(out));
  }
  if (name == "format") return Value::string(pystr::brace_format(s, call));
  if (name == "isdigit" || name == "isdecimal" || name == "isnumeric") {
    args({});
    return Value::boolean(pystr::all_chars(s, unicode::is_digit));
  }
  if (name == "isalpha" || name == "isspace" || name == "isalnum") {
    args({});
    return Value::boolean(pystr::all_chars(
        s, name == "isalpha" ? unicode::is_alpha
                             : (name == "isspace" ? unicode::is_space : unicode::is_alnum)));
  }
  if (name == "isupper" || name == "islower") {
    args({});
    bool any_cased = false;
    for (char32_t c : unicode::decode(s)) {
      if (!unicode::is_cased(c)) continue;
      any_cased = true;
      if (name == "isupper" ? unicode::is_lower(c) : unicode::is_upper(c))
        return Value::boolean(false);
    }
    return Value::boolean(any_cased);
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    BoundArgs a = args({"width", "fillchar"}, 1);
    const std::string fill = a.has(1) ? str_arg(*a.get(1), name) : " ";
    if (unicode::length(fill) != 1)
      throw TemplateError("The fill character must be exactly one character long");
    const char align = name == "center" ? 'c' : (name == "ljust" ? '<' : '>');
    return Value::string(
        pystr::pad(s, std::min<int64_t>(int_arg(*a.get(0), "width"), 1 << 24), align, fill));
  }
  if (name == "zfill") {
    BoundArgs a = args({"width"}, 1);
    const int64_t width = std::min<int64_t>(int_arg(*a.get(0), "width"), 1 << 24);
    const bool sign = !s.empty() && (s[0] == '-' || s[0] == '+');
    const std::string body = pystr::pad(s.substr(sign ? 1 : 0), width - (sign ? 1 : 0), '>', "0");
    return Value::string((sign ? s.substr(0, 1) : "") + body);
  }
  if (name == "removeprefix" || name == "removesuffix") {
    BoundArgs a = args({"affix"}, 1);
    const std::string& affix = str_arg(*a.get(0), name);
    if (name == "removeprefix" && s.compare(0, affix.size(), affix) == 0)
      return Value::string(s.substr(affix.size()));
    if (name == "removesuffix" && s.size() >= affix.size() &&
        s.compare(s.size() - affix.size(), affix.size(), affix) == 0 && !affix.empty())
      return Value::string(s.substr(0, s.size() - affix.size()));
    return Value::string(s);
  }
  if (name == "partition" || name == "rpartition") {
    BoundArgs a = args({"sep"}, 1);
    const std::string& sep = str_arg(*a.get(0), name);
    if (sep.empty()) throw TemplateError("empty separator");
    const size_t at = name == "partition" ? s.find(sep) : s.rfind(sep);
    std::vector<Value> parts;
    if (at == std::string::npos) {
      const bool left = name == "partition";
      parts = {Value::string(left ? s : ""), Value::string(""), Value::string(left ? "" : s)};
    } else {
      parts = {Value::string(s.substr(0, at)), Value::string(sep),
               Value::string(s.substr(at + sep.size()))};
    }
    return Value::list(std::move(parts), ListKind::kTuple);
  }
  throw TemplateError("'str' object has no attribute '" + name + "'");
}

const std::vector<std::string>& str_methods() {
  static const std::vector<std::string> names = {
      "strip",      "lstrip",    "rstrip",  "split",   "rsplit",       "splitlines",
      "startswith", "endswith",  "upper",   "lower",   "casefold",     "title",
      "capitalize", "swapcase",  "replace", "find",    "rfind",        "index",
      "rindex",     "count",     "join",    "format",  "isdigit",      "isdecimal",
      "isnumeric",  "isalpha",   "isspace", "isalnum", "isupper",      "islower",
      "center",     "ljust",     "rjust",   "zfill",   "removeprefix", "removesuffix",
      "partition",  "rpartition"};
  return names;
}

Value dict_method(const Value& obj, const std::string& name, const CallArgs& call) {
  const DictData& d = obj.as_dict();
  if (name == "items" || name == "keys" || name == "values") {
    BoundArgs(name, call, {});
    std::vector<Value> out;
    out.reserve(d.entries.size());
    for (const auto& [k, v] : d.entries) {
      if (name == "items") {
        out.push_back(Value::list({k, v}, ListKind::kTuple));
      } else {
        out.push_back(name == "keys" ? k : v);
      }
    }
    const ListKind kind = name == "items"
                              ? ListKind::kDictItems
                              : (name == "keys" ? ListKind::kDictKeys : ListKind::kDictValues);
    return Value::list(std::move(out), kind);
  }
  if (name == "get") {
    BoundArgs a(name, call, {"key", "default"}, 1);
    const Value* v = d.find(*a.get(0));
    if (v) return *v;
    return a.get_or(1, Value::none());
  }
  if (name == "copy") {
    BoundArgs(name, call, {});
    return Value::dict(d.entries);
  }
  throw TemplateError("'dict' object has no attribute '" + name + "'");
}

Value list_method(const Value& obj, const std::string& name, const CallArgs& call) {
  const auto& items = obj.as_list().items;
  if (name == "index") {
    BoundArgs a(name, call, {"value"}, 1);
    for (size_t i = 0; i < items.size(); ++i)
      if (equals(items[i], *a.get(0))) return Value::integer(static_cast<int64_t>(i));
    throw TemplateError(repr(*a.get(0)) + " is not in list");
  }
  if (name == "count") {
    BoundArgs a(name, call, {"value"}, 1);
    int64_t n = 0;
    for (const Value& item : items) n += equals(item, *a.get(0)) ? 1 : 0;
    return Value::integer(n);
  }
  if (name == "copy") {
    BoundArgs(name, call, {});
    return Value::list(items);
  }
  throw TemplateError("'" + type_name(obj) + "' object has no attribute '" + name + "'");
}

bool is_one_of(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (name == n) return true;
  return false;
}

Value unsafe(const Value& obj, const std::string& name) {
  return Value::undefined("access to attribute '" + name + "' of '" + type_name(obj) +
                          "' object is unsafe.");
}

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined("'" + object_description(obj) + "' has no attribute '" + name + "'");
}

// A str method called on Markup (markupsafe.Markup's overrides): most return Markup; replace,
// ljust, rjust and center escape the text they insert, join the items it joins, format its
// arguments; split, splitlines and partition give Markup pieces.
Value markup_method(const Value& obj, const std::string& name, CallArgs call) {
  auto escape_at = [&](size_t index, const char* keyword) {
    if (index < call.positional.size()) {
      call.positional[index] = escape(call.positional[index]);
      return;
    }
    for (auto& [k, v] : call.keyword)
      if (k == keyword) v = escape(v);
  };
  auto markup_items = [](Value list) {
    std::vector<Value> items;
    for (const Value& item : list.as_list().items) items.push_back(Value::markup(item.as_string()));
    return Value::list(std::move(items), list.as_list().kind);
  };
  if (name == "replace") escape_at(1, "new");
  if (name == "ljust" || name == "rjust" || name == "center") escape_at(1, "fillchar");
  if (name == "join" && !call.positional.empty()) {
    std::vector<Value> items;
    for (const Value& item : iterate(call.positional[0])) items.push_back(escape(item));
    call.positional[0] = Value::list(std::move(items));
  }
  if (name == "format") {
    for (Value& v : call.positional) v = escape(v);
    for (auto& [k, v] : call.keyword) v = escape(v);
  }
  Value result = str_method(obj.as_string(), name, call);
  if (is_one_of(name, {"split", "rsplit", "splitlines", "partition", "rpartition"}))
    return markup_items(std::move(result));
  if (result.is_string()) return Value::markup(result.as_string());
  return result;
}

// The method `name` of `obj` bound to it, an "unsafe" undefined for mutating methods, or
// nullopt when there is no such method.
std::optional<Value> find_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    const auto& names = str_methods();
    if (std::find(names.begin(), names.end(), name) == names.end()) return std::nullopt;
    if (obj.is_markup() &&
        !is_one_of(name, {"startswith", "endswith", "find", "rfind", "index", "rindex", "count",
                          "isdigit", "isdecimal", "isnumeric", "isalpha", "isspace", "isalnum",
                          "isupper", "islower"}))
      return Value::function(
          name, [obj, name](CallArgs& call) { return markup_method(obj, name, call); });
    return Value::function(
        name, [obj, name](CallArgs& call) { return str_method(obj.as_string(), name, call); });
  }
  if (obj.is_mapping()) {
    if (is_one_of(name, {"items", "keys", "values", "get", "copy"}))
      return Value::function(name,
                             [obj, name](CallArgs& call) { return dict_method(obj, name, call); });
    if (is_one_of(name, {"pop", "popitem", "setdefault", "update", "clear"}))
      return unsafe(obj, name);
    return std::nullopt;
  }
  if (obj.is_indexable()) {
    const bool is_list = obj.as_list().kind == ListKind::kList;
    if (is_one_of(name, {"index", "count"}) || (is_list && name == "copy"))
      return Value::function(name,
                             [obj, name](CallArgs& call) { return list_method(obj, name, call); });
    if (is_list && is_one_of(name, {"append", "extend", "insert", "pop", "remove", "reverse",
                                    "sort", "clear"}))
      return unsafe(obj, name);
  }
  return std::nullopt;
}

}  // namespace

Value get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) throw TemplateError(obj.undefined_message());
  if (std::optional<Value> method = find_method(obj, name)) return *method;
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(std::string_view(name))) return *v;
  }
  return no_attribute(obj, name);
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) throw TemplateError(obj.undefined_message());
  if (obj.is_dict()) {
    if (obj.is_mapping()) {
      if (const Value* v = obj.as_dict().find(key)) return *v;
    }
    if (key.is_string()) return get_attr(obj, key.as_string());
    return Value::undefined(object_description(obj) + " has no element " + repr(key));
  }
  if ((obj.is_indexable() || obj.is_string()) && key.is_integral()) {
    int64_t i = key.as_int();
    if (obj.is_string()) {
      const std::u32string cps = unicode::decode(obj.as_string());
      const auto n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        std::string c;
        unicode::append_utf8(c, cps[static_cast<size_t>(i)]);
        return Value::string_like(obj, std::move(c));
      }
    } else {
      const auto& items = obj.as_list().items;
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return items[static_cast<size_t>(i)];
    }
    return Value::undefined(object_description(obj) + " has no element " + repr(key));
  }
  if (key.is_string()) return get_attr(obj, key.as_string());
  return Value::undefined(object_description(obj) + " has no element " + repr(key));
}

Value slice(const Value& obj, const Value* start, const Value* stop, const Value* step) {
  if (obj.is_undefined()) throw TemplateError(obj.undefined_message());
  auto bound = [](const Value* v) -> const Value* {
    if (!v || v->is_none()) return nullptr;
    if (!v->is_integral())
      throw TemplateError("slice indices must be integers or None or have an __index__ method");
    return v;
  };
  start = bound(start);
  stop = bound(stop);
  step = bound(step);
  const int64_t st = step ? step->as_int() : 1;
  if (st == 0) throw TemplateError("slice step cannot be zero");
  const bool is_str = obj.is_string();
  if (!is_str && !obj.is_indexable()) {
    if (obj.is_mapping()) throw TemplateError("unhashable type: 'slice'");
    throw TemplateError("'" + type_name(obj) + "' object is not subscriptable");
  }
  std::u32string cps;
  if (is_str) cps = unicode::decode(obj.as_string());
  const auto n = static_cast<int64_t>(is_str ? cps.size() : obj.as_list().items.size());
  auto adjust = [&](const Value* v, bool is_start) -> int64_t {
    if (!v) {
      if (st < 0) return is_start ? n - 1 : -1;
      return is_start ? 0 : n;
    }
    int64_t i = v->as_int();
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t b = adjust(start, true);
  const int64_t e = adjust(stop, false);
  if (is_str) {
    std::u32string out;
    for (int64_t i = b; st > 0 ? i < e : i > e; i += st) out.push_back(cps[static_cast<size_t>(i)]);
    return Value::string_like(obj, unicode::encode(out));
  }
  std::vector<Value> out;
  const ListData& list = obj.as_list();
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st)
    out.push_back(list.items[static_cast<size_t>(i)]);
  Value result = Value::list(std::move(out), list.kind);
  if (list.kind == ListKind::kRange) {
    // A slice of a range is a range, printed with Python's arithmetic.
    ListData& r = result.as_list();
    r.range_start = list.range_start + b * list.range_step;
    r.range_stop = list.range_start + e * list.range_step;
    r.range_step = list.range_step * st;
  }
  return result;
}

Value get_attribute_path(const Value& obj, const Value& path) {
  if (!path.is_string()) return get_item(obj, path);
  Value cur = obj;
  size_t pos = 0;
  const std::string& p = path.as_string();
  while (true) {
    const size_t dot = p.find('.', pos);
    const std::string part =
        p.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos);
    const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    cur = digits ? get_item(cur, Value::integer(std::stoll(part.substr(0, 18))))
                 : get_item(cur, Value::string(part));
    if (dot == std::string::npos) break;
    pos = dot + 1;
  }
  return cur;
}

}  // namespace anvil::jinja
