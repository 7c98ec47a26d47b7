// JSON in and out of Jinja values: the render context arrives as nlohmann JSON, and the tojson
// filter writes values the way Python's json.dumps does (transformers' override of tojson).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "chat/jinja_error.h"
#include "chat/jinja_unicode.h"
#include "chat/jinja_value.h"

namespace anvil::jinja {

namespace {

Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  if (depth > kMaxDepth) throw TemplateError("context nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = j.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(from_json_at(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      std::vector<std::pair<Value, Value>> entries;
      entries.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it)
        entries.emplace_back(Value::string(it.key()), from_json_at(it.value(), depth + 1));
      return Value::dict(std::move(entries));
    }
    default:
      throw TemplateError("unsupported JSON value in the context");
  }
}

void append_hex4(std::string& out, unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\u%04x", v & 0xFFFF);
  out += buf;
}

void write_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out.push_back('"');
  for (char32_t c : unicode::decode(s)) {
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {
        const char32_t v = c - 0x10000;
        append_hex4(out, static_cast<unsigned>(0xD800 + (v >> 10)));
        append_hex4(out, static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      } else {
        append_hex4(out, static_cast<unsigned>(c));
      }
    } else {
      unicode::append_utf8(out, c);
    }
  }
  out.push_back('"');
}

std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

std::string json_key(const Value& k) {
  switch (k.kind()) {
    case Value::Kind::kString:
      return k.as_string();
    case Value::Kind::kBool:
      return k.as_bool() ? "true" : "false";
    case Value::Kind::kNone:
      return "null";
    case Value::Kind::kInt:
      return std::to_string(k.as_int());
    case Value::Kind::kFloat:
      return json_float(k.as_double());
    default:
      throw TemplateError("keys must be str, int, float, bool or None, not " + type_name(k));
  }
}

void write_json(std::string& out, const Value& v, const JsonOptions& o, int level) {
  if (level > kMaxDepth + 8) throw TemplateError("value nested too deeply for tojson");
  switch (v.kind()) {
    case Value::Kind::kNone:
      out += "null";
      return;
    case Value::Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Value::Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Value::Kind::kFloat:
      out += json_float(v.as_double());
      return;
    case Value::Kind::kString:
      write_string(out, v.as_string(), o.ensure_ascii);
      return;
    default:
      break;
  }
  std::string newline_indent;
  if (o.has_indent) {
    newline_indent = "\n";
    for (int i = 0; i <= level; ++i) newline_indent += o.indent;
  }
  const std::string separator = o.item_separator + newline_indent;
  auto close = [&](char bracket) {
    if (o.has_indent) {
      out += "\n";
      for (int i = 0; i < level; ++i) out += o.indent;
    }
    out.push_back(bracket);
  };
  if (v.is_sequence_list()) {
    const auto& items = v.as_list().items;
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += "[" + newline_indent;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) out += separator;
      write_json(out, items[i], o, level + 1);
    }
    close(']');
    return;
  }
  if (v.is_mapping()) {
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : v.as_dict().entries) entries.push_back(&e);
    if (entries.empty()) {
      out += "{}";
      return;
    }
    if (o.sort_keys)
      std::stable_sort(entries.begin(), entries.end(), [](const auto* a, const auto* b) {
        return compare(a->first, b->first) < 0;
      });
    out += "{" + newline_indent;
    bool first = true;
    for (const auto* e : entries) {
      if (!first) out += separator;
      first = false;
      write_string(out, json_key(e->first), o.ensure_ascii);
      out += o.key_separator;
      write_json(out, e->second, o, level + 1);
    }
    close('}');
    return;
  }
  throw TemplateError("Object of type " + type_name(v) + " is not JSON serializable");
}

}  // namespace

Value from_json(const nlohmann::ordered_json& j) {
  return from_json_at(j, 0);
}

std::string to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  write_json(out, v, options, 0);
  return out;
}

}  // namespace anvil::jinja
