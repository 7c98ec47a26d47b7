/// @file error.h
/// The one exception type anvil throws. Every message names the file or argument at fault and
/// the problem, so the CLI can print it as one line and exit non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace anvil {

/// Thrown for bad input (files, configs, arguments) and for unsupported requests.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace anvil
