// transformers' StopStringCriteria: a row stops once a stop string appears in its decoded text
// ending inside the row's last token (it may begin in earlier tokens, and the token may run on
// past it), so a string already in the prompt or earlier output never stops it.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "anvil/tokenizer.h"

namespace anvil {

class StopStrings {
 public:
  /// Throws anvil::Error for an empty stop string.
  StopStrings(const Tokenizer& tokenizer, std::vector<std::string> stop_strings);

  bool empty() const { return stops_.empty(); }
  /// Whether `row` (every id so far, prompt included) ends a stop string.
  bool hit(const std::vector<int64_t>& row);

 private:
  const std::string& bytes_of(int64_t id);

  const Tokenizer& tokenizer_;
  std::vector<std::string> stops_;
  size_t longest_ = 0;
  std::unordered_map<int64_t, std::string> bytes_;  // token_bytes, per id seen
};

}  // namespace anvil
