// anvil::ChatTemplate: the public face of the Jinja engine; turns internal template errors into
// anvil::Error messages that name the template line.
#include "anvil/chat_template.h"

#include "anvil/error.h"
#include "chat/jinja_error.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_parser.h"

namespace anvil {

namespace {

[[noreturn]] void rethrow(const jinja::TemplateError& e) {
  if (e.line() > 0)
    throw Error("chat template: line " + std::to_string(e.line()) + ": " + e.what());
  throw Error(std::string("chat template: ") + e.what());
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source)
    : source_(std::make_shared<const std::string>(source)) {
  try {
    ast_ = std::make_shared<const jinja::TemplateAst>(jinja::parse_template(source));
  } catch (const jinja::TemplateError& e) {
    rethrow(e);
  }
}

std::string ChatTemplate::render(const nlohmann::ordered_json& context) const {
  try {
    return jinja::render(*ast_, context);
  } catch (const jinja::TemplateError& e) {
    rethrow(e);
  }
}

}  // namespace anvil
