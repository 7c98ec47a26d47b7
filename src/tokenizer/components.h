// The pieces of a tokenizer.json pipeline, each built from its JSON description:
// normalizers (whole-text rewrites), pre-tokenizers (splitting into words), decoders (tokens back
// to text). Unknown or unsupported types are refused by name when the file is loaded.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "anvil/error.h"

namespace anvil {
class Regex;
}

namespace anvil::tok {

using Json = nlohmann::json;

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string text) const = 0;
};

/// A piece of text being split into words. `at_origin`: the piece starts at offset 0 of the
/// original input (Metaspace's prepend_scheme "first" needs to know).
struct Piece {
  std::string text;
  bool at_origin = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  /// Splits every piece further (or rewrites it); empty pieces are dropped.
  virtual void split(std::vector<Piece>& pieces) const = 0;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  /// Rewrites the token strings; decoders chain, each consuming the previous one's output.
  virtual std::vector<std::string> decode(std::vector<std::string> tokens) const = 0;
};

/// Replaces every occurrence of a pattern ({"String": ...} or {"Regex": ...}) with `content`;
/// the Replace normalizer and the Replace decoder share it.
class Replacer {
 public:
  Replacer(const Json& pattern, std::string content, const std::string& source);
  ~Replacer();
  std::string apply(const std::string& text) const;

 private:
  std::string literal_, content_;
  std::unique_ptr<anvil::Regex> regex_;
};

/// Builds one pipeline stage from its JSON: checks the "type" field, and turns JSON access
/// errors inside `build(type)` into anvil errors naming the file and the stage. A JSON null gives
/// nullptr (no such stage).
template <class T, class Build>
std::unique_ptr<T> build_stage(const Json& j, const char* kind, const std::string& source,
                               Build&& build) {
  if (j.is_null()) return nullptr;
  if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
    throw Error(source + ": a " + kind + " has no \"type\"");
  }
  const std::string type = j["type"].get<std::string>();
  try {
    return build(type);
  } catch (const Json::exception& e) {
    throw Error(source + ": " + kind + " " + type + ": " + e.what());
  }
}

/// `source` names the file in errors. A JSON null gives nullptr (no such stage).
std::unique_ptr<Normalizer> make_normalizer(const Json& j, const std::string& source);
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& j, const std::string& source);
std::unique_ptr<Decoder> make_decoder(const Json& j, const std::string& source);

/// GPT-2's byte <-> printable-character table of the ByteLevel stages.
const std::string& byte_to_char(unsigned char b);
/// The byte a ByteLevel character stands for, or -1.
int char_to_byte(char32_t cp);

}  // namespace anvil::tok
