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

// Regexes of the pre-tokenizers: the Hugging Face tokenizer.json files' own where llama.cpp's
// table (llama-vocab.cpp) records them, else that table's (GPT-2's is ByteLevel's built-in one).
const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
const char* kTekkenRegex =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek LLM's letters: Latin, Greek, Cyrillic, Armenian, Georgian, Cherokee and other cased
// scripts' ranges, as its tokenizer.json lists them.
const char* kDeepseekLetters =
    "\\s?[A-Za-z\xc2\xb5\xc3\x80-\xc3\x96\xc3\x98-\xc3\xb6\xc3\xb8-\xc6\xba\xc6\xbc-\xc6\xbf"
    "\xc7\x84-\xca\x93\xca\x95-\xca\xaf\xcd\xb0-\xcd\xb3\xcd\xb6\xcd\xb7\xcd\xbb-\xcd\xbd\xcd\xbf"
    "\xce\x86\xce\x88-\xce\x8a\xce\x8c\xce\x8e-\xce\xa1\xce\xa3-\xcf\xb5\xcf\xb7-\xd2\x81"
    "\xd2\x8a-\xd4\xaf\xd4\xb1-\xd5\x96\xe1\x82\xa0-\xe1\x83\x85\xe1\x8e\xa0-\xe1\x8f\xb5"
    "\xe1\x8f\xb8-\xe1\x8f\xbd\xe1\xb2\x90-\xe1\xb2\xba\xe1\xb2\xbd-\xe1\xb2\xbf\xe1\xb4\x80-"
    "\xe1\xb4\xab\xe1\xb5\xab-\xe1\xb5\xb7\xe1\xb5\xb9-\xe1\xb6\x9a\xe1\xb8\x80-\xe1\xbc\x95"
    "\xe1\xbc\x98-\xe1\xbc\x9d\xe1\xbc\xa0-\xe1\xbd\x85\xe1\xbd\x88-\xe1\xbd\x8d\xe1\xbd\x90-"
    "\xe1\xbd\x97\xe1\xbd\x99\xe1\xbd\x9b\xe1\xbd\x9d\xe1\xbd\x9f-\xe1\xbd\xbd\xe1\xbe\x80-"
    "\xe1\xbe\xb4\xe1\xbe\xb6-\xe1\xbe\xbc\xe1\xbe\xbe\xe1\xbf\x82-\xe1\xbf\x84\xe1\xbf\x86-"
    "\xe1\xbf\x8c\xe1\xbf\x90-\xe1\xbf\x93\xe1\xbf\x96-\xe1\xbf\x9b\xe1\xbf\xa0-\xe1\xbf\xac"
    "\xe1\xbf\xb2-\xe1\xbf\xb4\xe1\xbf\xb6-\xe1\xbf\xbc\xe2\x84\x82\xe2\x84\x87\xe2\x84\x8a-"
    "\xe2\x84\x93\xe2\x84\x95\xe2\x84\x99-\xe2\x84\x9d\xe2\x84\xa4\xe2\x84\xa6\xe2\x84\xa8"
    "\xe2\x84\xaa-\xe2\x84\xad\xe2\x84\xaf-\xe2\x84\xb4\xe2\x84\xb9\xe2\x84\xbc-\xe2\x84\xbf"
    "\xe2\x85\x85-\xe2\x85\x89\xe2\x85\x8e\xe2\x86\x83\xe2\x86\x84\xe2\xb0\x80-\xe2\xb1\xbb"
    "\xe2\xb1\xbe-\xe2\xb3\xa4\xe2\xb3\xab-\xe2\xb3\xae\xe2\xb3\xb2\xe2\xb3\xb3\xea\x99\x80-"
    "\xea\x99\xad\xea\x9a\x80-\xea\x9a\x9b\xea\x9c\xa2-\xea\x9d\xaf\xea\x9d\xb1-\xea\x9e\x87"
    "\xea\x9e\x8b-\xea\x9e\x8e\xea\xad\xb0-\xea\xae\xbf\xef\xac\x80-\xef\xac\x86\xef\xac\x93-"
    "\xef\xac\x97\xef\xbc\xa1-\xef\xbc\xba\xef\xbd\x81-\xef\xbd\x9a\xf0\x90\x90\x80-\xf0\x90\x91"
    "\x8f\xf0\x90\x92\xb0-\xf0\x90\x93\x93\xf0\x90\x93\x98-\xf0\x90\x93\xbb\xf0\x90\xb2\x80-"
    "\xf0\x90\xb2\xb2\xf0\x90\xb3\x80-\xf0\x90\xb3\xb2\xf0\x91\xa2\xa0-\xf0\x91\xa3\x9f"
    "\xf0\x9e\xa4\x80-\xf0\x9e\xa5\x83]+";
// CJK ideographs (U+4E00-U+9FA5), U+0800-U+4E00 and Hangul syllables (U+AC00-U+D7FF).
const char* kDeepseekCjk =
    "[\xe4\xb8\x80-\xe9\xbe\xa5\xe0\xa0\x80-\xe4\xb8\x80\xea\xb0\x80-\xed\x9f\xbf]+";

// How a family of GGUF byte-level BPE vocabularies splits text before BPE, and the names
// llama.cpp's converters give it (tokenizer.ggml.pre, as llama-vocab.cpp groups them).
enum class PreKind {
  kByteLevel,        // GPT-2's: ByteLevel with its own regex
  kDigitsByteLevel,  // each digit alone, then GPT-2's (StarCoder, SmolLM, Command R)
  kSplits,           // each regex in turn (Split, Isolated), then ByteLevel without a regex
};
struct PreFamily {
  std::vector<std::string> names;
  PreKind kind;
  std::vector<std::string> regexes;  // kSplits
  bool ignore_merges = false;        // a pre-token in the vocabulary is taken whole
};

const std::vector<PreFamily>& pre_families() {
  static const std::vector<PreFamily> families = {
      {{"gpt2", "default", "gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion", "granite-docling",
        "gigachat", "a.x-4.0", "mellum"},
       PreKind::kByteLevel,
       {}},
      {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b",
        "mellum2"},
       PreKind::kDigitsByteLevel,
       {}},
      {{"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2"},
       PreKind::kSplits,
       {kLlama3Regex},
       true},
      {{"dbrx", "smaug-bpe"}, PreKind::kSplits, {kLlama3Regex}},
      {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "hunyuan", "solar-open",
        "grok-2"},
       PreKind::kSplits,
       {kQwen2Regex}},
      {{"qwen35"}, PreKind::kSplits, {kQwen35Regex}},
      {{"tekken"}, PreKind::kSplits, {kTekkenRegex}, true},
      {{"deepseek-llm"},
       PreKind::kSplits,
       {"[\r\n]", kDeepseekLetters,
        "\\s?[!-/:-~\xef\xbc\x81-\xef\xbc\x8f\xef\xbc\x9a-\xef\xbd\x9e\xe2\x80\x98-\xe2\x80\x9f"
        "\xe3\x80\x80-\xe3\x80\x82]+",
        "\\s+$", kDeepseekCjk, "\\p{N}+"}},
      {{"deepseek-coder"},
       PreKind::kSplits,
       {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kDeepseekCjk, "\\p{N}"}},
      {{"falcon"}, PreKind::kSplits, {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2Regex, "[0-9][0-9][0-9]"}},
  };
  return families;
}

Json byte_level(bool add_prefix_space, bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", add_prefix_space},
          {"trim_offsets", true},
          {"use_regex", use_regex}};
}

Json split_isolated(const std::string& regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

const PreFamily& pre_family(const std::string& pre, const std::string& source) {
  const std::string name = pre.empty() ? "default" : pre;
  for (const auto& f : pre_families()) {
    if (std::find(f.names.begin(), f.names.end(), name) != f.names.end()) return f;
  }
  std::string known;
  for (const auto& n : known_gguf_pre_tokenizers()) known += (known.empty() ? "" : ", ") + n;
  throw Error(source + ": tokenizer.ggml.pre '" + pre +
              "' is not a pre-tokenizer anvil knows (it knows " + known + ")");
}

Json pre_tokenizer_for(const PreFamily& family, bool add_prefix_space) {
  switch (family.kind) {
    case PreKind::kByteLevel:
      return byte_level(add_prefix_space, true);
    case PreKind::kDigitsByteLevel:
      return {{"type", "Sequence"},
              {"pretokenizers",
               {{{"type", "Digits"}, {"individual_digits", true}},
                byte_level(add_prefix_space, true)}}};
    case PreKind::kSplits:
      break;
  }
  Json steps = Json::array();
  for (const auto& r : family.regexes) steps.push_back(split_isolated(r));
  steps.push_back(byte_level(false, false));
  return {{"type", "Sequence"}, {"pretokenizers", steps}};
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
  std::vector<std::string> names;
  for (const auto& f : pre_families()) names.insert(names.end(), f.names.begin(), f.names.end());
  return names;
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
    const PreFamily& family = pre_family(v.pre, source);
    j["pre_tokenizer"] = pre_tokenizer_for(family, prefix);
    j["decoder"] = byte_level(true, true);
    j["model"] = {{"type", "BPE"},          {"dropout", nullptr},
                  {"unk_token", nullptr},   {"fuse_unk", false},
                  {"byte_fallback", false}, {"ignore_merges", family.ignore_merges},
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
