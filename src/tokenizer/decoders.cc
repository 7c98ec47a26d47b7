// Decoders of tokenizer.json: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace,
// WordPiece-free subset, and Sequence, chained as tokenizers' decode_chain does.
#include <charconv>

#include "anvil/error.h"
#include "tokenizer/components.h"
#include "tokenizer/utf8.h"

namespace anvil::tok {
namespace {

// ByteLevel: each token's characters back to bytes (a token with any character outside the
// table keeps its own bytes), then the whole byte string decoded as lossy UTF-8.
class ByteLevelDecoder : public Decoder {
 public:
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    std::string bytes;
    for (const auto& t : tokens) {
      std::string mapped;
      bool ok = true;
      for (size_t i = 0; i < t.size() && ok;) {
        const int b = char_to_byte(utf8::next(t, i));
        if (b < 0) {
          ok = false;
        } else {
          mapped += static_cast<char>(b);
        }
      }
      bytes += ok ? mapped : t;
    }
    return {utf8::from_bytes_lossy(bytes)};
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      const std::string& t = tokens[i];
      for (size_t pos = 0; pos < t.size();) {
        if (t.compare(pos, replacement_.size(), replacement_) == 0) {
          // As tokenizers does: in the first token every replacement character is dropped.
          if (!(i == 0 && strip_first_)) out += ' ';
          pos += replacement_.size();
        } else {
          out += t[pos++];
        }
      }
      tokens[i] = std::move(out);
    }
    return tokens;
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

// ByteFallback: runs of <0xNN> tokens become the UTF-8 text they spell; an invalid run becomes
// one U+FFFD per byte, as tokenizers does.
class ByteFallbackDecoder : public Decoder {
 public:
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    size_t pending_count = 0;
    auto flush = [&] {
      if (pending_count == 0) return;
      if (utf8::find_invalid(pending) == std::string::npos) {
        out.push_back(pending);
      } else {
        for (size_t i = 0; i < pending_count; ++i) out.emplace_back("\xef\xbf\xbd");
      }
      pending.clear();
      pending_count = 0;
    };
    for (auto& t : tokens) {
      unsigned value = 0;
      if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
          std::from_chars(t.data() + 3, t.data() + 5, value, 16).ptr == t.data() + 5) {
        pending += static_cast<char>(value);
        ++pending_count;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    return out;
  }
};

class FuseDecoder : public Decoder {
 public:
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    std::string all;
    for (const auto& t : tokens) all += t;
    return {all};
  }
};

// Strip: removes up to `start` leading and `stop` trailing occurrences of `content` (a single
// character) from every token.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    for (auto& t : tokens) {
      auto cps = utf8::chars(t);
      size_t b = 0, e = cps.size();
      for (size_t n = 0; n < start_ && b < e && cps[b] == content_; ++n) ++b;
      for (size_t n = 0; n < stop_ && e > b && cps[e - 1] == content_; ++n) --e;
      std::string out;
      for (size_t i = b; i < e; ++i) out += cps[i];
      t = std::move(out);
    }
    return tokens;
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(const Json& pattern, std::string content, const std::string& source)
      : replacer_(pattern, std::move(content), source) {}
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    for (auto& t : tokens) t = replacer_.apply(t);
    return tokens;
  }

 private:
  Replacer replacer_;
};

// BPEDecoder: the end-of-word suffix becomes a space (nothing after the last token).
class BpeSuffixDecoder : public Decoder {
 public:
  explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      const std::string with = i + 1 == tokens.size() ? "" : " ";
      std::string out;
      const std::string& t = tokens[i];
      for (size_t pos = 0; pos < t.size();) {
        if (!suffix_.empty() && t.compare(pos, suffix_.size(), suffix_) == 0) {
          out += with;
          pos += suffix_.size();
        } else {
          out += t[pos++];
        }
      }
      tokens[i] = std::move(out);
    }
    return tokens;
  }

 private:
  std::string suffix_;
};

// WordPiece: continuation pieces lose their prefix, others get a space before them; cleanup
// removes spaces before punctuation and in English contractions.
class WordPieceDecoder : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      if (i != 0) {
        if (!prefix_.empty() && t.rfind(prefix_, 0) == 0) {
          t.erase(0, prefix_.size());
        } else {
          t = " " + t;
        }
      }
      if (cleanup_) {
        for (const auto& [from, to] : kRules) {
          const std::string f(from), r(to);
          for (size_t pos = t.find(f); pos != std::string::npos; pos = t.find(f, pos + r.size())) {
            t.replace(pos, f.size(), r);
          }
        }
      }
    }
    return tokens;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts)
      : parts_(std::move(parts)) {}
  std::vector<std::string> decode(std::vector<std::string> tokens) const override {
    for (const auto& p : parts_) {
      if (p) tokens = p->decode(std::move(tokens));
    }
    return tokens;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

std::unique_ptr<Decoder> build(const Json& j, const std::string& type, const std::string& source) {
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    std::string scheme = "always";
    if (j.contains("prepend_scheme") && j["prepend_scheme"].is_string()) {
      scheme = j["prepend_scheme"].get<std::string>();
    } else if (j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean()) {
      scheme = j["add_prefix_space"].get<bool>() ? "always" : "never";
    }
    return std::make_unique<MetaspaceDecoder>(j.value("replacement", std::string("\xe2\x96\x81")),
                                              scheme != "never");
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(j.at("content").get<std::string>(),
                                          j.value("start", size_t{0}), j.value("stop", size_t{0}));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(j.at("pattern"), j.at("content").get<std::string>(),
                                            source);
  }
  if (type == "BPEDecoder") {
    return std::make_unique<BpeSuffixDecoder>(j.value("suffix", std::string("</w>")));
  }
  if (type == "WordPiece") {
    return std::make_unique<WordPieceDecoder>(j.value("prefix", std::string("##")),
                                              j.value("cleanup", true));
  }
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Decoder>> parts;
    for (const auto& p : j.at("decoders")) parts.push_back(make_decoder(p, source));
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  throw Error(source + ": decoder type '" + type + "' is not supported");
}

}  // namespace

std::unique_ptr<Decoder> make_decoder(const Json& j, const std::string& source) {
  return build_stage<Decoder>(j, "decoder", source,
                              [&](const std::string& type) { return build(j, type, source); });
}

}  // namespace anvil::tok
