/// @file error.h
/// The one exception type anvil throws. Every message names the file or argument at fault and
/// the problem, so the CLI can print it as one line and exit non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace anvil {

/// `message` with every byte that is not part of valid UTF-8, and every control character but
/// newline and tab, written as \xNN: a message may quote a corrupted file's bytes (a parser's
/// "last read" excerpt, a tensor name), and it must still print as text.
std::string printable_message(const std::string& message);

/// Thrown for bad input (files, configs, arguments) and for unsupported requests.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(printable_message(message)) {}
};

}  // namespace anvil
