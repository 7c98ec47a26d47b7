/// @file chat_template.h
/// Hugging Face chat templates: a Jinja2-compatible template engine that renders them exactly as
/// transformers does (jinja2's ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks and
/// loop controls; the globals raise_exception and strftime_now; transformers' tojson filter).
/// Rendering only reads the context: templates cannot reach files, processes or the network.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

namespace anvil {

namespace jinja {
struct TemplateAst;
}

/// A compiled chat template. Compiles once, renders many times; rendering is const and may run
/// concurrently from several threads. Nesting depth, macro recursion, range() and string
/// repetition are bounded, so hostile templates fail with an error rather than exhausting the
/// stack (about 1 MB suffices at the limits) or memory.
class ChatTemplate {
 public:
  /// Parses `source` (e.g. tokenizer_config.json's "chat_template"). Throws anvil::Error
  /// ("chat template: line N: <problem>") on a syntax error, a loop control outside a loop, or
  /// an unknown filter or test (as jinja2 does, an unknown one inside an if block only fails
  /// when it is reached).
  explicit ChatTemplate(const std::string& source);

  /// Renders with `context`, an object whose keys become template variables (messages, tools,
  /// add_generation_prompt, enable_thinking, bos_token, eos_token, ...). Throws anvil::Error
  /// ("chat template: line N: <problem>") for runtime errors, and for raise_exception(msg) with
  /// msg in the message.
  std::string render(const nlohmann::ordered_json& context) const;

  /// The template's text (transformers' continue_final_message looks for a field's name in it).
  const std::string& source() const { return *source_; }

 private:
  std::shared_ptr<const jinja::TemplateAst> ast_;
  std::shared_ptr<const std::string> source_;
};

}  // namespace anvil
