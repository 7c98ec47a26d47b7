// The tokenizer.json pipeline: added tokens are cut out of the raw text, the rest is normalized
// (and searched again for normalized added tokens), pre-tokenized, and BPE-merged word by word;
// the post-processor adds template special tokens. Decoding maps ids back to token strings and
// runs the decoder chain.
#include "anvil/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "anvil/error.h"
#include "formats/mapped_file.h"
#include "tokenizer/added_vocab.h"
#include "tokenizer/bpe.h"
#include "tokenizer/components.h"
#include "tokenizer/utf8.h"

namespace anvil {

using tok::Json;

// Template post-processing: the ids that surround a single sequence.
struct PostProcessor {
  std::vector<int32_t> before, after;
};

class TokenizerImpl {
 public:
  TokenizerImpl(const Json& j, const std::string& source);
  std::vector<int64_t> encode(std::string_view text, bool add_special) const;
  std::string decode(std::span<const int64_t> ids, bool skip_special) const;

  std::unique_ptr<tok::Normalizer> normalizer;
  std::unique_ptr<tok::PreTokenizer> pre_tokenizer;
  std::unique_ptr<tok::Decoder> decoder;
  std::unique_ptr<tok::BpeModel> model;
  PostProcessor post;
  tok::AddedTokenMatcher raw_matcher, normalized_matcher;
  std::map<int32_t, tok::AddedToken> added;  // by id
  std::map<std::string, int32_t> added_by_content;
  std::set<std::string> special_contents;
  /// How StopStringCriteria reads this vocabulary (from the decoder): a ByteLevel decoder's
  /// tokens as raw bytes, a ByteFallback one's <0xNN> tokens as their byte, else as text.
  enum class Surface { text, byte_level, byte_fallback } surface = Surface::text;
};

namespace {

bool has_type(const Json& j, const std::string& type) {
  if (j.is_object()) {
    if (j.contains("type") && j["type"] == type) return true;
    for (const auto& [key, value] : j.items()) {
      if (has_type(value, type)) return true;
    }
  } else if (j.is_array()) {
    for (const auto& value : j) {
      if (has_type(value, type)) return true;
    }
  }
  return false;
}

// StopStringCriteria._get_stop_string_matching_mode: a top-level ByteLevel decoder, then a
// ByteFallback anywhere in the decoder, then a ByteLevel anywhere.
TokenizerImpl::Surface surface_of(const Json& decoder) {
  if (decoder.is_null()) return TokenizerImpl::Surface::text;
  if (decoder.is_object() && decoder.value("type", std::string()) == "ByteLevel") {
    return TokenizerImpl::Surface::byte_level;
  }
  if (has_type(decoder, "ByteFallback")) return TokenizerImpl::Surface::byte_fallback;
  if (has_type(decoder, "ByteLevel")) return TokenizerImpl::Surface::byte_level;
  return TokenizerImpl::Surface::text;
}

std::vector<int32_t> template_ids(const Json& items, const Json& special, const std::string& source,
                                  bool& seen_sequence, std::vector<int32_t>& after) {
  std::vector<int32_t> before;
  for (const auto& item : items) {
    if (item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    if (!item.contains("SpecialToken")) {
      throw Error(source + ": TemplateProcessing item " + item.dump() + " is not understood");
    }
    const std::string name = item["SpecialToken"].at("id").get<std::string>();
    if (!special.contains(name)) {
      throw Error(source + ": TemplateProcessing uses special token '" + name +
                  "' it does not define");
    }
    for (const auto& id : special[name].at("ids")) {
      (seen_sequence ? after : before).push_back(id.get<int32_t>());
    }
  }
  return before;
}

void parse_post_processor(const Json& j, PostProcessor& post, const std::string& source) {
  if (j.is_null()) return;
  const std::string type = j.value("type", std::string());
  if (type == "TemplateProcessing") {
    bool seen = false;
    post.before = template_ids(j.at("single"), j.at("special_tokens"), source, seen, post.after);
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    post.before.push_back(j.at("cls").at(1).get<int32_t>());
    post.after.push_back(j.at("sep").at(1).get<int32_t>());
  } else if (type == "Sequence") {
    for (const auto& p : j.at("processors")) parse_post_processor(p, post, source);
  } else if (type != "ByteLevel") {  // ByteLevel only trims offsets: ids are unchanged
    throw Error(source + ": post-processor type '" + type + "' is not supported");
  }
}

}  // namespace

TokenizerImpl::TokenizerImpl(const Json& j, const std::string& source) {
  if (!j.is_object()) throw Error(source + ": not a JSON object");
  if (!j.contains("model") || !j["model"].is_object()) throw Error(source + ": no \"model\"");
  const std::string type = j["model"].value("type", std::string("BPE"));
  if (type != "BPE") {
    throw Error(source + ": model type '" + type + "' is not supported (anvil implements BPE)");
  }
  try {
    normalizer = tok::make_normalizer(j.value("normalizer", Json()), source);
    pre_tokenizer = tok::make_pre_tokenizer(j.value("pre_tokenizer", Json()), source);
    decoder = tok::make_decoder(j.value("decoder", Json()), source);
    surface = surface_of(j.value("decoder", Json()));
    model = std::make_unique<tok::BpeModel>(j["model"], source);
    parse_post_processor(j.value("post_processor", Json()), post, source);
    if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
      for (const auto& a : j["added_tokens"]) {
        tok::AddedToken t;
        t.id = a.at("id").get<int32_t>();
        t.content = a.at("content").get<std::string>();
        t.special = a.value("special", false);
        t.lstrip = a.value("lstrip", false);
        t.rstrip = a.value("rstrip", false);
        t.single_word = a.value("single_word", false);
        t.normalized = a.value("normalized", !t.special);
        if (t.id < 0) throw Error(source + ": added token '" + t.content + "' has a negative id");
        utf8::check_valid(t.content, source + ": added token");
        // tokenizers decodes a normalized added token as its normalized content.
        if (t.normalized && normalizer)
          t.decoded = normalizer->normalize(t.content);
        else
          t.decoded = t.content;
        added[t.id] = t;
        if (t.special) special_contents.insert(t.content);
        added_by_content[t.content] = t.id;
        if (t.normalized) {
          normalized_matcher.add(t, normalizer ? normalizer->normalize(t.content) : t.content);
        } else {
          raw_matcher.add(t, t.content);
        }
      }
    }
  } catch (const Json::exception& e) {
    throw Error(source + ": " + e.what());
  }
}

std::vector<int64_t> TokenizerImpl::encode(std::string_view text, bool add_special) const {
  utf8::check_valid(text, "text to encode");
  std::vector<int32_t> ids;
  const std::string input(text);
  for (const auto& raw : raw_matcher.split(input, true)) {
    if (raw.id) {
      ids.push_back(*raw.id);
      continue;
    }
    const std::string norm = normalizer ? normalizer->normalize(raw.text) : raw.text;
    for (const auto& seg : normalized_matcher.split(norm, raw.at_origin)) {
      if (seg.id) {
        ids.push_back(*seg.id);
        continue;
      }
      if (seg.text.empty()) continue;  // tokenizers never pre-tokenizes an empty split
      std::vector<tok::Piece> pieces{{seg.text, seg.at_origin}};
      if (pre_tokenizer) pre_tokenizer->split(pieces);
      for (const auto& p : pieces) model->tokenize(p.text, ids);
    }
  }
  std::vector<int64_t> out;
  out.reserve(ids.size() + post.before.size() + post.after.size());
  if (add_special) out.insert(out.end(), post.before.begin(), post.before.end());
  out.insert(out.end(), ids.begin(), ids.end());
  if (add_special) out.insert(out.end(), post.after.begin(), post.after.end());
  return out;
}

std::string TokenizerImpl::decode(std::span<const int64_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int64_t id : ids) {
    if (id >= 0 && id <= INT32_MAX) {
      auto a = added.find(static_cast<int32_t>(id));
      if (a != added.end()) {
        // tokenizers skips a token whose decoded string is a special token's content; for a
        // normalized special token the two differ, and it is kept (replicated on purpose).
        if (!(skip_special && special_contents.count(a->second.decoded))) {
          tokens.push_back(a->second.decoded);
        }
        continue;
      }
      if (const std::string* t = model->id_to_token(static_cast<int32_t>(id))) {
        tokens.push_back(*t);
        continue;
      }
    }
    throw Error("id " + std::to_string(id) + " is not in the tokenizer's vocabulary");
  }
  if (!decoder) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
  std::string out;
  for (const auto& piece : decoder->decode(std::move(tokens))) out += piece;
  return out;
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  return from_json_text(read_text_file(path), path);
}

Tokenizer Tokenizer::from_json_text(const std::string& text, const std::string& source) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::exception& e) {
    throw Error(source + ": not valid JSON: " + e.what());
  }
  Tokenizer t;
  try {
    t.impl_ = std::make_shared<const TokenizerImpl>(j, source);
  } catch (const Json::exception& e) {  // a field of another JSON type than the format's
    throw Error(source + ": not a tokenizers file of the expected structure: " + e.what());
  }
  return t;
}

std::vector<int64_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return impl_->encode(text, add_special_tokens);
}

std::string Tokenizer::decode(std::span<const int64_t> ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens);
}

std::string Tokenizer::token_bytes(int64_t id) const {
  const TokenizerImpl& t = *impl_;
  std::optional<std::string> token = id_to_token(id);
  if (!token) throw Error("id " + std::to_string(id) + " is not in the tokenizer's vocabulary");
  if (t.surface == TokenizerImpl::Surface::byte_level) {
    std::string bytes;
    bool mapped = true;
    for (size_t i = 0; i < token->size() && mapped;) {
      const int b = tok::char_to_byte(utf8::next(*token, i));
      mapped = b >= 0;
      if (mapped) bytes += static_cast<char>(b);
    }
    if (mapped) return bytes;
  } else if (t.surface == TokenizerImpl::Surface::byte_fallback) {
    unsigned value = 0;
    const std::string& s = *token;
    if (s.size() == 6 && s.compare(0, 3, "<0x") == 0 && s[5] == '>' &&
        std::isxdigit(static_cast<unsigned char>(s[3])) &&
        std::isxdigit(static_cast<unsigned char>(s[4]))) {
      value = static_cast<unsigned>(std::stoul(s.substr(3, 2), nullptr, 16));
      return std::string(1, static_cast<char>(value));
    }
  }
  // Decoded after a fixed prefix, then cut after it: a token's text as it reads mid-sentence.
  static constexpr std::string_view kPrefix = "abcdef";
  std::vector<int64_t> ids = t.encode(kPrefix, false);
  ids.push_back(id);
  const std::string text = t.decode(ids, false);
  const size_t at = text.find(kPrefix);
  return at == std::string::npos ? text : text.substr(at + kPrefix.size());
}

std::optional<int64_t> Tokenizer::token_to_id(std::string_view token) const {
  auto a = impl_->added_by_content.find(std::string(token));
  if (a != impl_->added_by_content.end()) return a->second;
  auto id = impl_->model->token_to_id(token);
  if (!id) return std::nullopt;
  return *id;
}

std::optional<std::string> Tokenizer::id_to_token(int64_t id) const {
  if (id < 0 || id > INT32_MAX) return std::nullopt;
  auto a = impl_->added.find(static_cast<int32_t>(id));
  if (a != impl_->added.end()) return a->second.decoded;
  if (const std::string* t = impl_->model->id_to_token(static_cast<int32_t>(id))) return *t;
  return std::nullopt;
}

int64_t Tokenizer::vocab_size() const {
  int64_t n = impl_->model->vocab_end();
  if (!impl_->added.empty()) n = std::max<int64_t>(n, impl_->added.rbegin()->first + 1);
  return n;
}

bool Tokenizer::is_special(int64_t id) const {
  if (id < 0 || id > INT32_MAX) return false;
  auto a = impl_->added.find(static_cast<int32_t>(id));
  return a != impl_->added.end() && a->second.special;
}

std::vector<std::string> Tokenizer::special_tokens() const {
  std::vector<std::string> out;
  for (const auto& [id, t] : impl_->added) {
    if (t.special) out.push_back(t.content);
  }
  return out;
}

std::string StreamingDecoder::push(int64_t id) {
  ids_.push_back(id);
  // Decode a window that starts a few tokens back, so decoders that look at the first token
  // (Metaspace, Strip) see the same context as a full decode would.
  const std::span<const int64_t> all(ids_);
  const std::string prefix_text =
      tokenizer_.decode(all.subspan(prefix_, read_ - prefix_), skip_special_);
  const std::string new_text = tokenizer_.decode(all.subspan(prefix_), skip_special_);
  const bool incomplete =
      new_text.size() >= 3 && new_text.compare(new_text.size() - 3, 3, "\xef\xbf\xbd") == 0;
  if (new_text.size() > prefix_text.size() && !incomplete) {
    std::string out = new_text.substr(prefix_text.size());
    prefix_ = read_;
    read_ = ids_.size();
    return out;
  }
  return "";
}

std::string StreamingDecoder::finish() {
  const std::span<const int64_t> all(ids_);
  const std::string prefix_text =
      tokenizer_.decode(all.subspan(prefix_, read_ - prefix_), skip_special_);
  const std::string new_text = tokenizer_.decode(all.subspan(prefix_), skip_special_);
  prefix_ = read_ = ids_.size();
  return new_text.size() > prefix_text.size() ? new_text.substr(prefix_text.size()) : "";
}

}  // namespace anvil
