// Pre-tokenizers of tokenizer.json: Split (regex or string, every behavior, invert), ByteLevel,
// Metaspace, Digits, Punctuation, Whitespace, WhitespaceSplit, CharDelimiterSplit,
// BertPreTokenizer and Sequence. Splitting follows tokenizers' NormalizedString::split: the text
// is cut into matched and unmatched segments, the behavior decides how they become pieces, and
// empty pieces are dropped.
#include <functional>

#include "anvil/error.h"
#include "tokenizer/components.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace anvil::tok {

const std::string& byte_to_char(unsigned char b) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int extra = 0;
    for (int c = 0; c < 256; ++c) {
      const bool printable = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174);
      t[c] = utf8::encode(static_cast<char32_t>(printable ? c : 256 + extra++));
    }
    return t;
  }();
  return table[b];
}

int char_to_byte(char32_t cp) {
  static const std::vector<int> table = [] {
    std::vector<int> t(512, -1);
    for (int b = 0; b < 256; ++b) {
      size_t i = 0;
      t[utf8::next(byte_to_char(static_cast<unsigned char>(b)), i)] = b;
    }
    return t;
  }();
  return cp < table.size() ? table[cp] : -1;
}

namespace {

enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

Behavior parse_behavior(const std::string& s, const std::string& source) {
  if (s == "Removed") return Behavior::removed;
  if (s == "Isolated") return Behavior::isolated;
  if (s == "MergedWithPrevious") return Behavior::merged_with_previous;
  if (s == "MergedWithNext") return Behavior::merged_with_next;
  if (s == "Contiguous") return Behavior::contiguous;
  throw Error(source + ": unknown split behavior '" + s + "'");
}

struct Segment {
  size_t begin, end;
  bool match;
};

// Cuts `text` into matched/unmatched segments covering it, as tokenizers' Pattern does.
std::vector<Segment> segments(const std::string& text,
                              const std::vector<std::pair<size_t, size_t>>& matches, bool invert) {
  std::vector<Segment> out;
  if (text.empty()) return {{0, 0, false}};
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (prev != b) out.push_back({prev, b, false});
    out.push_back({b, e, true});
    prev = e;
  }
  if (prev != text.size()) out.push_back({prev, text.size(), false});
  if (invert) {
    for (auto& s : out) s.match = !s.match;
  }
  return out;
}

// Applies a split behavior to one piece (tokenizers' NormalizedString::split).
void split_piece(const Piece& piece, const std::vector<Segment>& segs, Behavior behavior,
                 std::vector<Piece>& out) {
  std::vector<std::pair<size_t, size_t>> ranges;
  switch (behavior) {
    case Behavior::isolated:
      for (const auto& s : segs) ranges.emplace_back(s.begin, s.end);
      break;
    case Behavior::removed:
      for (const auto& s : segs) {
        if (!s.match) ranges.emplace_back(s.begin, s.end);
      }
      break;
    case Behavior::merged_with_previous: {
      bool previous_match = false;
      for (const auto& s : segs) {
        if (s.match && !previous_match && !ranges.empty()) {
          ranges.back().second = s.end;
        } else {
          ranges.emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
      }
      break;
    }
    case Behavior::merged_with_next: {
      bool previous_match = false;
      for (size_t i = segs.size(); i-- > 0;) {
        const auto& s = segs[i];
        if (s.match && !previous_match && !ranges.empty()) {
          ranges.back().first = s.begin;
        } else {
          ranges.emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
      }
      std::reverse(ranges.begin(), ranges.end());
      break;
    }
    case Behavior::contiguous: {
      bool previous_match = false;
      bool first = true;
      for (const auto& s : segs) {
        if (!first && s.match == previous_match) {
          ranges.back().second = s.end;
        } else {
          ranges.emplace_back(s.begin, s.end);
        }
        previous_match = s.match;
        first = false;
      }
      break;
    }
  }
  for (auto [b, e] : ranges) {
    if (e > b) out.push_back({piece.text.substr(b, e - b), piece.at_origin && b == 0});
  }
}

using Matcher = std::function<std::vector<std::pair<size_t, size_t>>(const std::string&)>;

// Matches of single characters satisfying `pred`.
Matcher char_matcher(std::function<bool(char32_t)> pred) {
  return [pred = std::move(pred)](const std::string& t) {
    std::vector<std::pair<size_t, size_t>> m;
    for (size_t i = 0; i < t.size();) {
      const size_t b = i;
      if (pred(utf8::next(t, i))) m.emplace_back(b, i);
    }
    return m;
  };
}

class SplitBy : public PreTokenizer {
 public:
  SplitBy(Matcher matcher, Behavior behavior, bool invert)
      : matcher_(std::move(matcher)), behavior_(behavior), invert_(invert) {}
  void split(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    for (const auto& p : pieces)
      split_piece(p, segments(p.text, matcher_(p.text), invert_), behavior_, out);
    pieces = std::move(out);
  }

 private:
  Matcher matcher_;
  Behavior behavior_;
  bool invert_;
};

Matcher regex_matcher(const std::string& pattern, const std::string& source) {
  auto re = std::make_shared<Regex>(pattern, source);
  return [re](const std::string& t) { return re->find_all(t); };
}

Matcher literal_matcher(const std::string& needle) {
  return [needle](const std::string& t) {
    std::vector<std::pair<size_t, size_t>> m;
    if (needle.empty()) return m;
    for (size_t pos = t.find(needle); pos != std::string::npos;
         pos = t.find(needle, pos + needle.size())) {
      m.emplace_back(pos, pos + needle.size());
    }
    return m;
  };
}

const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex, const std::string& source)
      : add_prefix_space_(add_prefix_space) {
    if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern, source);
  }
  void split(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    for (auto p : pieces) {
      if (add_prefix_space_ && (p.text.empty() || p.text[0] != ' ')) p.text = " " + p.text;
      if (regex_) {
        split_piece(p, segments(p.text, regex_->find_all(p.text), false), Behavior::isolated, out);
      } else if (!p.text.empty()) {
        out.push_back(p);
      }
    }
    for (auto& p : out) {
      std::string mapped;
      for (unsigned char c : p.text) mapped += byte_to_char(c);
      p.text = std::move(mapped);
    }
    pieces = std::move(out);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class Metaspace : public PreTokenizer {
 public:
  Metaspace(std::string replacement, std::string scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(std::move(scheme)), split_(split) {}
  void split(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    for (auto p : pieces) {
      std::string t;
      for (char c : p.text) {
        if (c == ' ') {
          t += replacement_;
        } else {
          t += c;
        }
      }
      const bool starts = t.rfind(replacement_, 0) == 0;
      if (!starts && (scheme_ == "always" || (scheme_ == "first" && p.at_origin))) {
        t = replacement_ + t;
      }
      p.text = std::move(t);
      if (split_) {
        split_piece(p, segments(p.text, literal_matcher(replacement_)(p.text), false),
                    Behavior::merged_with_next, out);
      } else if (!p.text.empty()) {
        out.push_back(std::move(p));
      }
    }
    pieces = std::move(out);
  }

 private:
  std::string replacement_, scheme_;
  bool split_;
};

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void split(std::vector<Piece>& pieces) const override {
    for (const auto& p : parts_) {
      if (p) p->split(pieces);
    }
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

Matcher pattern_matcher(const Json& pattern, const std::string& source) {
  if (pattern.contains("Regex")) return regex_matcher(pattern["Regex"].get<std::string>(), source);
  if (pattern.contains("String")) return literal_matcher(pattern["String"].get<std::string>());
  throw Error(source + ": Split pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

std::unique_ptr<PreTokenizer> build(const Json& j, const std::string& type,
                                    const std::string& source) {
  if (type == "Split") {
    return std::make_unique<SplitBy>(pattern_matcher(j.at("pattern"), source),
                                     parse_behavior(j.at("behavior").get<std::string>(), source),
                                     j.value("invert", false));
  }
  if (type == "ByteLevel") {
    return std::make_unique<ByteLevel>(j.value("add_prefix_space", true),
                                       j.value("use_regex", true), source);
  }
  if (type == "Metaspace") {
    std::string scheme = "always";
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
      scheme = j["prepend_scheme"].get<std::string>();
    } else if (j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean()) {
      scheme = j["add_prefix_space"].get<bool>() ? "always" : "never";
    }
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      throw Error(source + ": Metaspace prepend_scheme '" + scheme + "' is unknown");
    }
    return std::make_unique<Metaspace>(j.value("replacement", std::string("\xe2\x96\x81")), scheme,
                                       j.value("split", true));
  }
  if (type == "Digits") {
    const bool individual = j.value("individual_digits", false);
    return std::make_unique<SplitBy>(char_matcher(utf8::is_digit),
                                     individual ? Behavior::isolated : Behavior::contiguous, false);
  }
  if (type == "Punctuation") {
    return std::make_unique<SplitBy>(
        char_matcher(utf8::is_punctuation),
        parse_behavior(j.value("behavior", std::string("Isolated")), source), false);
  }
  if (type == "Whitespace") {
    return std::make_unique<SplitBy>(regex_matcher(R"(\w+|[^\w\s]+)", source), Behavior::removed,
                                     true);
  }
  if (type == "WhitespaceSplit") {
    return std::make_unique<SplitBy>(char_matcher(utf8::is_whitespace), Behavior::removed, false);
  }
  if (type == "CharDelimiterSplit") {
    return std::make_unique<SplitBy>(literal_matcher(j.at("delimiter").get<std::string>()),
                                     Behavior::removed, false);
  }
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    parts.push_back(
        std::make_unique<SplitBy>(char_matcher(utf8::is_whitespace), Behavior::removed, false));
    parts.push_back(
        std::make_unique<SplitBy>(char_matcher(utf8::is_punctuation), Behavior::isolated, false));
    return std::make_unique<Sequence>(std::move(parts));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (const auto& p : j.at("pretokenizers")) parts.push_back(make_pre_tokenizer(p, source));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw Error(source + ": pre-tokenizer type '" + type + "' is not supported");
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const Json& j, const std::string& source) {
  return build_stage<PreTokenizer>(j, "pre-tokenizer", source,
                                   [&](const std::string& type) { return build(j, type, source); });
}

}  // namespace anvil::tok
