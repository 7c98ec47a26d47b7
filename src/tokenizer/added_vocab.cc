// A byte trie of added tokens; at each position the longest token starting there wins and the
// scan resumes after it (leftmost-longest, like tokenizers' aho-corasick matcher).
#include "tokenizer/added_vocab.h"

#include "tokenizer/utf8.h"

namespace anvil::tok {
namespace {

char32_t last_char(std::string_view s) {
  if (s.empty()) return 0;
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xc0) == 0x80) --i;
  return utf8::next(s, i);
}

char32_t first_char(std::string_view s) {
  size_t i = 0;
  return s.empty() ? 0 : utf8::next(s, i);
}

}  // namespace

void AddedTokenMatcher::add(const AddedToken& token, std::string match_text) {
  if (match_text.empty()) return;
  int node = 0;
  for (unsigned char c : match_text) {
    auto it = nodes_[node].next.find(c);
    if (it == nodes_[node].next.end()) {
      nodes_.push_back(Node{});
      const int created = static_cast<int>(nodes_.size()) - 1;
      nodes_[node].next[c] = created;
      node = created;
    } else {
      node = it->second;
    }
  }
  tokens_.push_back(token);
  nodes_[node].token = static_cast<int>(tokens_.size()) - 1;
}

std::vector<TextSegment> AddedTokenMatcher::split(const std::string& text, bool at_origin) const {
  std::vector<TextSegment> out;
  size_t emitted = 0;  // text before this offset is already in `out`
  size_t pos = 0;
  while (pos < text.size()) {
    // Longest token starting at pos.
    int node = 0, found = -1;
    size_t found_end = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      auto it = nodes_[node].next.find(static_cast<unsigned char>(text[i]));
      if (it == nodes_[node].next.end()) break;
      node = it->second;
      if (nodes_[node].token >= 0) {
        found = nodes_[node].token;
        found_end = i + 1;
      }
    }
    if (found < 0) {
      pos += utf8::seq_len(static_cast<unsigned char>(text[pos]));
      continue;
    }
    const AddedToken& tok = tokens_[found];
    size_t start = pos, stop = found_end;
    if (tok.single_word) {
      const bool left_ok =
          start == 0 || !utf8::is_word_char(last_char(std::string_view(text).substr(0, start)));
      const bool right_ok = stop == text.size() ||
                            !utf8::is_word_char(first_char(std::string_view(text).substr(stop)));
      if (!left_ok || !right_ok) {
        pos += utf8::seq_len(static_cast<unsigned char>(text[pos]));
        continue;
      }
    }
    if (tok.lstrip) {
      // Absorb whitespace before the token, but not text already emitted.
      size_t s = start;
      while (s > emitted) {
        size_t k = s - 1;
        while (k > emitted && (static_cast<unsigned char>(text[k]) & 0xc0) == 0x80) --k;
        size_t tmp = k;
        if (!utf8::is_whitespace(utf8::next(text, tmp))) break;
        s = k;
      }
      start = s;
    }
    if (tok.rstrip) {
      while (stop < text.size()) {
        size_t tmp = stop;
        if (!utf8::is_whitespace(utf8::next(text, tmp))) break;
        stop = tmp;
      }
    }
    if (emitted < start) {
      out.push_back(
          {text.substr(emitted, start - emitted), std::nullopt, at_origin && emitted == 0});
    }
    out.push_back({text.substr(start, stop - start), tok.id, at_origin && start == 0});
    emitted = stop;
    pos = stop;
  }
  if (emitted < text.size() || text.empty()) {
    out.push_back({text.substr(emitted), std::nullopt, at_origin && emitted == 0});
  }
  return out;
}

}  // namespace anvil::tok
