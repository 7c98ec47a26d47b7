// Stop strings, matched on the bytes each token contributes (Tokenizer::token_bytes).
#include "generate/stop_strings.h"

#include <algorithm>

#include "anvil/error.h"

namespace anvil {

StopStrings::StopStrings(const Tokenizer& tokenizer, std::vector<std::string> stop_strings)
    : tokenizer_(tokenizer), stops_(std::move(stop_strings)) {
  for (const std::string& s : stops_) {
    if (s.empty()) throw Error("stop_strings: an empty stop string would stop every row at once");
    longest_ = std::max(longest_, s.size());
  }
}

const std::string& StopStrings::bytes_of(int64_t id) {
  auto it = bytes_.find(id);
  if (it == bytes_.end()) it = bytes_.emplace(id, tokenizer_.token_bytes(id)).first;
  return it->second;
}

bool StopStrings::hit(const std::vector<int64_t>& row) {
  if (stops_.empty() || row.empty()) return false;
  // The last token's bytes, after as many earlier tokens' as a stop string could reach back.
  const std::string& last = bytes_of(row.back());
  std::string before;
  for (size_t i = row.size() - 1; i-- > 0 && before.size() + 1 < longest_;) {
    before.insert(0, bytes_of(row[i]));
  }
  const std::string text = before + last;
  const size_t boundary = before.size();  // where the last token begins
  for (const std::string& s : stops_) {
    // An occurrence that ends inside the last token (starting in it or before it): any
    // occurrence found from here on does.
    const size_t first = boundary + 1 >= s.size() ? boundary + 1 - s.size() : 0;
    if (text.find(s, first) != std::string::npos) return true;
  }
  return false;
}

}  // namespace anvil
