// Renders a parsed Jinja template: scopes, statements, expression evaluation, macros, and the
// global functions transformers provides (range, namespace, dict, raise_exception,
// strftime_now, joiner).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "chat/jinja_ast.h"

namespace anvil::jinja {

/// Renders `ast` with the keys of `context` (a JSON object) as variables. Throws TemplateError
/// with the line of the failing expression or statement.
std::string render(const TemplateAst& ast, const nlohmann::ordered_json& context);

}  // namespace anvil::jinja
