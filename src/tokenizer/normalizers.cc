// Normalizers of tokenizer.json: NFC/NFD/NFKC/NFKD, Lowercase, Strip, StripAccents, Replace,
// Prepend, ByteLevel and Sequence, with Hugging Face tokenizers' semantics.
#include "anvil/error.h"
#include "tokenizer/components.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace anvil::tok {
namespace {

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(utf8::NormalForm f) : form_(f) {}
  std::string normalize(std::string t) const override { return utf8::normalize(t, form_); }

 private:
  utf8::NormalForm form_;
};

class Lowercase : public Normalizer {
 public:
  std::string normalize(std::string t) const override { return utf8::lowercase(t); }
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string t) const override {
    const auto cps = utf8::chars(t);
    size_t b = 0, e = cps.size();
    auto ws = [&](size_t i) {
      size_t k = 0;
      return utf8::is_whitespace(utf8::next(cps[i], k));
    };
    if (left_) {
      while (b < e && ws(b)) ++b;
    }
    if (right_) {
      while (e > b && ws(e - 1)) --e;
    }
    std::string out;
    for (size_t i = b; i < e; ++i) out += cps[i];
    return out;
  }

 private:
  bool left_, right_;
};

class StripAccents : public Normalizer {
 public:
  std::string normalize(std::string t) const override {
    std::string out;
    for (size_t i = 0; i < t.size();) {
      const char32_t cp = utf8::next(t, i);
      if (!utf8::is_combining_mark(cp)) utf8::append(out, cp);
    }
    return out;
  }
};

class Replace : public Normalizer {
 public:
  Replace(const Json& pattern, std::string content, const std::string& source)
      : replacer_(pattern, std::move(content), source) {}
  std::string normalize(std::string t) const override { return replacer_.apply(t); }

 private:
  Replacer replacer_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  std::string normalize(std::string t) const override { return t.empty() ? t : prepend_ + t; }

 private:
  std::string prepend_;
};

class ByteLevelNormalizer : public Normalizer {
 public:
  std::string normalize(std::string t) const override {
    std::string out;
    for (unsigned char c : t) out += byte_to_char(c);
    return out;
  }
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(std::string t) const override {
    for (const auto& p : parts_) {
      if (p) t = p->normalize(std::move(t));
    }
    return t;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

namespace {

std::unique_ptr<Normalizer> build_normalizer(const Json& j, const std::string& type,
                                             const std::string& source) {
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(utf8::NormalForm::nfc);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(utf8::NormalForm::nfd);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(utf8::NormalForm::nfkc);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(utf8::NormalForm::nfkd);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  if (type == "StripAccents") return std::make_unique<StripAccents>();
  if (type == "Strip") {
    return std::make_unique<Strip>(j.value("strip_left", true), j.value("strip_right", true));
  }
  if (type == "Replace") {
    return std::make_unique<Replace>(j.at("pattern"), j.at("content").get<std::string>(), source);
  }
  if (type == "Prepend") return std::make_unique<Prepend>(j.at("prepend").get<std::string>());
  if (type == "ByteLevel") return std::make_unique<ByteLevelNormalizer>();
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (const auto& p : j.at("normalizers")) parts.push_back(make_normalizer(p, source));
    return std::make_unique<Sequence>(std::move(parts));
  }
  throw Error(source + ": normalizer type '" + type + "' is not supported");
}

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const Json& j, const std::string& source) {
  return build_stage<Normalizer>(j, "normalizer", source, [&](const std::string& type) {
    return build_normalizer(j, type, source);
  });
}

Replacer::Replacer(const Json& pattern, std::string content, const std::string& source)
    : content_(std::move(content)) {
  if (pattern.contains("String")) {
    literal_ = pattern["String"].get<std::string>();
  } else if (pattern.contains("Regex")) {
    regex_ = std::make_unique<Regex>(pattern["Regex"].get<std::string>(), source);
  } else {
    throw Error(source + ": Replace pattern must be {\"String\": ...} or {\"Regex\": ...}");
  }
}

Replacer::~Replacer() = default;

std::string Replacer::apply(const std::string& t) const {
  std::string out;
  size_t prev = 0;
  if (regex_) {
    for (auto [b, e] : regex_->find_all(t)) {
      if (e == b) continue;
      out.append(t, prev, b - prev);
      out += content_;
      prev = e;
    }
  } else if (!literal_.empty()) {
    for (size_t pos = t.find(literal_); pos != std::string::npos; pos = t.find(literal_, prev)) {
      out.append(t, prev, pos - prev);
      out += content_;
      prev = pos + literal_.size();
    }
  }
  out.append(t, prev, std::string::npos);
  return out;
}

}  // namespace anvil::tok
