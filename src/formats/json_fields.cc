// Typed JSON field access with errors of the form "FILE: field 'x' must be ..., got ...".
#include "formats/json_fields.h"

namespace anvil::json_fields {

json parse(const std::string& text, const std::string& source) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(source + ": not valid JSON: " + e.what());
  }
}

void fail(const std::string& source, const std::string& field, const std::string& what) {
  throw Error(source + ": field '" + field + "' " + what);
}

const json* find(const json& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<int64_t> opt_int(const json& j, const std::string& key, const std::string& source) {
  const json* v = find(j, key);
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  fail(source, key, "must be an integer, got " + v->dump());
}

int64_t get_int(const json& j, const std::string& key, const std::string& source) {
  auto v = opt_int(j, key, source);
  if (!v) fail(source, key, "is missing");
  return *v;
}

std::optional<double> opt_number(const json& j, const std::string& key, const std::string& source) {
  const json* v = find(j, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) fail(source, key, "must be a number, got " + v->dump());
  return v->get<double>();
}

std::optional<bool> opt_bool(const json& j, const std::string& key, const std::string& source) {
  const json* v = find(j, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(source, key, "must be true or false, got " + v->dump());
  return v->get<bool>();
}

std::optional<std::string> opt_string(const json& j, const std::string& key,
                                      const std::string& source) {
  const json* v = find(j, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(source, key, "must be a string, got " + v->dump());
  return v->get<std::string>();
}

std::vector<int64_t> int_or_list(const json& j, const std::string& key, const std::string& source) {
  const json* v = find(j, key);
  if (!v) return {};
  if (v->is_number_integer()) return {v->get<int64_t>()};
  if (v->is_array()) {
    std::vector<int64_t> out;
    for (const auto& e : *v) {
      if (!e.is_number_integer()) fail(source, key, "must hold integers, got " + v->dump());
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  fail(source, key, "must be an integer or a list of integers, got " + v->dump());
}

}  // namespace anvil::json_fields
