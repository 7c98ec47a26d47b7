// GGUF tokenizer metadata -> tokenizer.json. The pre-tokenizer of a byte-level BPE model is not
// in the file; llama.cpp's converters record its name (tokenizer.ggml.pre), and each name maps to
// the regex of the Hugging Face tokenizer it was detected from. SentencePiece ("llama") models
// carry scores instead of merges; merges are rebuilt from the scores as transformers'
// SentencePieceExtractor does.
#include "tokenizer/gguf_vocab.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "anvil/error.h"
#include "tokenizer/utf8.h"

namespace anvil {
namespace {

using Json = nlohmann::json;

// Regexes of the pre-tokenizers (from the Hugging Face tokenizer.json files of each family;
// GPT-2's is ByteLevel's built-in one).
const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Json byte_level(bool add_prefix_space, bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}

Json split_isolated(const char* regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

Json pre_tokenizer_for(const std::string& pre, bool add_prefix_space, const std::string& source) {
  if (pre == "gpt2" || pre == "default" || pre.empty()) return byte_level(add_prefix_space, true);
  if (pre == "smollm" || pre == "starcoder" || pre == "refact") {
    return {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Digits"}, {"individual_digits", true}}, byte_level(add_prefix_space, true)}}};
  }
  if (pre == "llama-bpe" || pre == "llama3" || pre == "dbrx" || pre == "smaug-bpe") {
    return {{"type", "Sequence"},
            {"pretokenizers", {split_isolated(kLlama3Regex), byte_level(false, false)}}};
  }
  if (pre == "qwen2" || pre == "deepseek-r1-qwen") {
    return {{"type", "Sequence"},
            {"pretokenizers", {split_isolated(kQwen2Regex), byte_level(false, false)}}};
  }
  throw Error(source + ": tokenizer.ggml.pre '" + pre +
              "' is not a pre-tokenizer anvil knows (it knows gpt2, smollm, llama-bpe, qwen2)");
}

Json template_processor(const GgufVocab& v, bool bos, bool eos) {
  Json single = Json::array();
  Json special = Json::object();
  auto add = [&](int64_t id) {
    const std::string& t = v.tokens[static_cast<size_t>(id)];
    single.push_back({{"SpecialToken", {{"id", t}, {"type_id", 0}}}});
    special[t] = {{"id", t}, {"ids", {id}}, {"tokens", {t}}};
  };
  if (bos) add(*v.bos);
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (eos) add(*v.eos);
  return {{"type", "TemplateProcessing"},
          {"single", single},
          {"pair", single},
          {"special_tokens", special}};
}

// transformers' SentencePieceExtractor: every split of a piece into two vocab pieces is a merge,
// ordered by the merged piece's score (highest first), ties by the parts' ids.
Json merges_from_scores(const GgufVocab& v) {
  std::unordered_map<std::string, int64_t> id;
  for (size_t i = 0; i < v.tokens.size(); ++i) id.emplace(v.tokens[i], static_cast<int64_t>(i));
  struct Merge {
    int64_t left, right;
    float score;
  };
  std::vector<Merge> merges;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& piece = v.tokens[i];
    const auto chars = utf8::chars(piece);
    std::vector<Merge> local;
    size_t offset = 0;
    for (size_t k = 0; k + 1 < chars.size(); ++k) {
      offset += chars[k].size();
      auto l = id.find(piece.substr(0, offset)), r = id.find(piece.substr(offset));
      if (l != id.end() && r != id.end()) local.push_back({l->second, r->second, v.scores[i]});
    }
    std::sort(local.begin(), local.end(), [](const Merge& a, const Merge& b) {
      return a.left != b.left ? a.left < b.left : a.right < b.right;
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  Json out = Json::array();
  for (const auto& m : merges) {
    out.push_back({v.tokens[static_cast<size_t>(m.left)], v.tokens[static_cast<size_t>(m.right)]});
  }
  return out;
}

}  // namespace

std::vector<std::string> known_gguf_pre_tokenizers() {
  return {"gpt2",   "default", "smollm",    "starcoder", "refact",          "llama-bpe",
          "llama3", "dbrx",    "smaug-bpe", "qwen2",     "deepseek-r1-qwen"};
}

Json tokenizer_json_from_gguf(const GgufVocab& v, const std::string& source) {
  const size_t n = v.tokens.size();
  if (n == 0) throw Error(source + ": tokenizer.ggml.tokens is empty");
  if (!v.token_types.empty() && v.token_types.size() != n) {
    throw Error(source + ": tokenizer.ggml.token_type has " + std::to_string(v.token_types.size()) +
                " entries for " + std::to_string(n) + " tokens");
  }
  for (const auto* id : {&v.bos, &v.eos, &v.unk, &v.pad}) {
    if (*id && (**id < 0 || static_cast<size_t>(**id) >= n)) {
      throw Error(source + ": special token id " + std::to_string(**id) + " is outside the " +
                  std::to_string(n) + "-token vocabulary");
    }
  }
  for (const auto& t : v.tokens) utf8::check_valid(t, source + ": tokenizer.ggml.tokens entry");

  Json vocab = Json::object();
  for (size_t i = 0; i < n; ++i) vocab[v.tokens[i]] = i;

  // Control and user-defined tokens are added tokens (control ones special), as in the
  // tokenizer.json files the GGUFs were converted from.
  Json added = Json::array();
  for (size_t i = 0; i < v.token_types.size(); ++i) {
    const int32_t type = v.token_types[i];
    if (type != 3 && type != 4) continue;
    added.push_back({{"id", i},
                     {"content", v.tokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", type == 4 && v.model == "llama"},
                     {"special", type == 3}});
  }

  Json j = Json::object();
  j["version"] = "1.0";
  j["added_tokens"] = added;
  if (v.model == "gpt2") {
    Json merges = Json::array();
    for (const auto& m : v.merges) {
      const auto space = m.find(' ');
      if (space == std::string::npos) {
        throw Error(source + ": tokenizer.ggml.merges entry \"" + m + "\" is not two tokens");
      }
      merges.push_back({m.substr(0, space), m.substr(space + 1)});
    }
    const bool prefix = v.add_space_prefix.value_or(false);
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = pre_tokenizer_for(v.pre, prefix, source);
    j["decoder"] = byte_level(true, true);
    j["model"] = {
        {"type", "BPE"},          {"dropout", nullptr},
        {"unk_token", nullptr},   {"fuse_unk", false},
        {"byte_fallback", false}, {"ignore_merges", v.pre == "llama-bpe" || v.pre == "llama3"},
        {"vocab", vocab},         {"merges", merges}};
  } else if (v.model == "llama") {
    if (v.scores.size() != n) {
      throw Error(source + ": tokenizer.ggml.scores has " + std::to_string(v.scores.size()) +
                  " entries for " + std::to_string(n) + " tokens");
    }
    const bool prepend = v.add_space_prefix.value_or(true);
    Json normalizers = Json::array();
    if (prepend) normalizers.push_back({{"type", "Prepend"}, {"prepend", "\xe2\x96\x81"}});
    normalizers.push_back(
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xe2\x96\x81"}});
    j["normalizer"] = {{"type", "Sequence"}, {"normalizers", normalizers}};
    j["pre_tokenizer"] = nullptr;
    Json decoders = Json::array();
    decoders.push_back(
        {{"type", "Replace"}, {"pattern", {{"String", "\xe2\x96\x81"}}}, {"content", " "}});
    decoders.push_back({{"type", "ByteFallback"}});
    decoders.push_back({{"type", "Fuse"}});
    if (prepend)
      decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    Json unk = nullptr;
    if (v.unk) unk = v.tokens[static_cast<size_t>(*v.unk)];
    j["model"] = {{"type", "BPE"},         {"dropout", nullptr},
                  {"unk_token", unk},      {"fuse_unk", true},
                  {"byte_fallback", true}, {"ignore_merges", false},
                  {"vocab", vocab},        {"merges", merges_from_scores(v)}};
  } else {
    throw Error(source + ": tokenizer.ggml.model '" + v.model +
                "' is not supported (anvil reads gpt2 and llama tokenizers)");
  }
  const bool bos = v.add_bos.value_or(v.model == "llama") && v.bos;
  const bool eos = v.add_eos.value_or(false) && v.eos;
  j["post_processor"] = (bos || eos) ? template_processor(v, bos, eos) : byte_level(true, false);
  return j;
}

}  // namespace anvil
