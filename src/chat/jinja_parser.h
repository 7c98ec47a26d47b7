// Parses Jinja tokens into a syntax tree, with jinja2's grammar and operator precedence.
#pragma once

#include <string_view>

#include "chat/jinja_ast.h"

namespace anvil::jinja {

/// Parses a template; throws TemplateError with the line for syntax errors, unknown filters or
/// tests, and loop controls outside loops.
TemplateAst parse_template(std::string_view source);

}  // namespace anvil::jinja
