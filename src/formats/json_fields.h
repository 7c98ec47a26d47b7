// Typed reads of JSON fields with errors that name the file and the field, shared by the
// config readers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "anvil/error.h"

namespace anvil::json_fields {

using nlohmann::json;

json parse(const std::string& text, const std::string& source);

[[noreturn]] void fail(const std::string& source, const std::string& field,
                       const std::string& what);

/// The field when present and not null.
const json* find(const json& j, const std::string& key);

int64_t get_int(const json& j, const std::string& key, const std::string& source);
std::optional<int64_t> opt_int(const json& j, const std::string& key, const std::string& source);
std::optional<double> opt_number(const json& j, const std::string& key, const std::string& source);
std::optional<bool> opt_bool(const json& j, const std::string& key, const std::string& source);
std::optional<std::string> opt_string(const json& j, const std::string& key,
                                      const std::string& source);
/// An int or a list of ints (eos_token_id); empty when absent.
std::vector<int64_t> int_or_list(const json& j, const std::string& key, const std::string& source);

}  // namespace anvil::json_fields
