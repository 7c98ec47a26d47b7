// Splits a Jinja template into tokens the way jinja2's lexer does with trim_blocks and
// lstrip_blocks on: template data, tag delimiters, and the names, literals and operators inside
// tags. Raw blocks become data; comments disappear.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::jinja {

enum class TokenType {
  kData,
  kVariableBegin,
  kVariableEnd,
  kBlockBegin,
  kBlockEnd,
  kName,
  kString,
  kInteger,
  kFloat,
  kOperator,
  kEof
};

struct Token {
  TokenType type = TokenType::kEof;
  std::string value;  // data, name, decoded string, operator text, or the number's spelling
  int line = 1;
  int64_t int_value = 0;
  double float_value = 0.0;
};

/// Tokenizes `source`; the last token is kEof. Throws TemplateError (with the line) on text that
/// cannot be tokenized: unterminated strings or comments, stray characters, unbalanced brackets.
std::vector<Token> tokenize(std::string_view source);

}  // namespace anvil::jinja
