// Table-driven helpers for the chat template tests: render a template with a JSON context and
// compare with the expected text, or expect an anvil::Error naming the line and the problem.
#pragma once

#include <fstream>
#include <sstream>
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

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// One rendering of a model's chat template.
struct ModelCase {
  const char* label;
  const char* context;   // JSON object
  const char* expected;  // the rendered text, or a fragment of the error message when `error`
  bool error = false;
};

inline void expect_model(const std::string& tmpl, const std::vector<ModelCase>& cases) {
  const ChatTemplate compiled(tmpl);
  for (const ModelCase& c : cases) {
    SCOPED_TRACE(c.label);
    const auto context = nlohmann::ordered_json::parse(c.context);
    if (!c.error) {
      try {
        EXPECT_EQ(compiled.render(context), c.expected);
      } catch (const Error& e) {
        ADD_FAILURE() << "threw: " << e.what();
      }
      continue;
    }
    try {
      compiled.render(context);
      ADD_FAILURE() << "expected an error containing: " << c.expected;
    } catch (const Error& e) {
      const std::string message = e.what();
      EXPECT_EQ(message.rfind("chat template: line ", 0), 0u) << message;
      EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    }
  }
}

}  // namespace anvil::test
