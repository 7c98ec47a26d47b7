// The exception used inside the Jinja engine: a message plus the template line it concerns.
// The line is 0 until the innermost enclosing expression or statement fills it in.
#pragma once

#include <stdexcept>
#include <string>

namespace anvil::jinja {

class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& message, int line = 0)
      : std::runtime_error(message), line_(line) {}
  int line() const { return line_; }
  void set_line(int line) { line_ = line; }

 private:
  int line_;
};

}  // namespace anvil::jinja
