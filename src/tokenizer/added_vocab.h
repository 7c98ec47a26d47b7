// Added tokens (special or not): found in the text before the model sees it, leftmost-longest,
// honouring lstrip, rstrip and single_word. Tokens with normalized=false are matched in the raw
// text; tokens with normalized=true in the normalized text, as tokenizers' AddedVocabulary does.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::tok {

struct AddedToken {
  int32_t id = 0;
  std::string content;
  std::string decoded;  ///< what decode() shows: the normalized content for normalized tokens
  bool special = false;
  bool lstrip = false, rstrip = false, single_word = false, normalized = false;
};

/// A stretch of text: either an added token (id set) or text for the model.
struct TextSegment {
  std::string text;
  std::optional<int32_t> id;
  bool at_origin = false;  ///< starts at offset 0 of the input
};

class AddedTokenMatcher {
 public:
  void add(const AddedToken& token, std::string match_text);
  bool empty() const { return nodes_.size() <= 1; }
  /// Splits `text` around the tokens it contains.
  std::vector<TextSegment> split(const std::string& text, bool at_origin) const;

 private:
  struct Node {
    std::map<unsigned char, int> next;
    int token = -1;  // index into tokens_
  };
  std::vector<Node> nodes_{Node{}};
  std::vector<AddedToken> tokens_;
};

}  // namespace anvil::tok
