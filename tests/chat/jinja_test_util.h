// Table-driven helpers for the chat template tests: render a template with a JSON context and
// compare with the expected text, or expect an anvil::Error naming the line and the problem.
#pragma once

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "anvil/chat_template.h"
#include "anvil/error.h"

namespace anvil::test {

struct RenderCase {
  const char* label;
  const char* tmpl;
  const char* context;  // JSON object
  const char* expected;
};

struct ErrorCase {
  const char* label;
  const char* tmpl;
  const char* context;   // JSON object
  int line;              // the line the message must name
  const char* fragment;  // text the message must contain
};

inline std::string render(const std::string& tmpl, const std::string& context = "{}") {
  return ChatTemplate(tmpl).render(nlohmann::ordered_json::parse(context));
}

inline void expect_renders(const std::vector<RenderCase>& cases) {
  for (const RenderCase& c : cases) {
    SCOPED_TRACE(c.label);
    try {
      EXPECT_EQ(render(c.tmpl, c.context), c.expected) << "template: " << c.tmpl;
    } catch (const Error& e) {
      ADD_FAILURE() << "template: " << c.tmpl << "\nthrew: " << e.what();
    }
  }
}

inline void expect_errors(const std::vector<ErrorCase>& cases) {
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.label);
    try {
      const std::string out = render(c.tmpl, c.context);
      ADD_FAILURE() << "template: " << c.tmpl << "\nrendered instead of failing: " << out;
    } catch (const Error& e) {
      const std::string message = e.what();
      const std::string prefix = "chat template: line " + std::to_string(c.line) + ": ";
      EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
      EXPECT_NE(message.find(c.fragment), std::string::npos) << message;
    }
  }
}

}  // namespace anvil::test
