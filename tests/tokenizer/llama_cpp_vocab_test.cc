// llama.cpp's tokenizer test vocabularies (models/ggml-vocab-*.gguf in its source, with the texts
// in *.inp and Hugging Face tokenizers' ids for them in *.out, written by its
// convert_hf_to_gguf_update.py from each model's own tokenizer): the GGUF tokenizer path
// (tokenizer.ggml.pre mapped to the Hub tokenizer's pre-tokenizer) gives the Hub tokenizer's ids.
// The files come from the pinned llama-cpp-python source package on PyPI, fetched by
// scripts/fetch-llama-cpp-vocabs (scripts/test runs it); without them the tests skip and say so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "anvil/auto_tokenizer.h"
#include "anvil/error.h"
#include "formats/default_model.h"

namespace anvil {
namespace {

std::string vocab_dir() {
  return anvil_cache_dir() + "/llama.cpp-vocab-0.3.36";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct VocabCase {
  std::string text;
  std::vector<int64_t> ids;
};

// *.inp: each text followed by "\n__ggml_vocab_test__\n"; *.out: one line of ids per text.
std::vector<VocabCase> read_cases(const std::string& gguf) {
  const std::string inp = read_file(gguf + ".inp"), out = read_file(gguf + ".out");
  const std::string marker = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  for (size_t at = 0; at < inp.size();) {
    const size_t end = inp.find(marker, at);
    if (end == std::string::npos) break;
    cases.push_back({inp.substr(at, end - at), {}});
    at = end + marker.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (auto& c : cases) {
    if (!std::getline(lines, line)) break;
    std::istringstream ids(line);
    for (int64_t id; ids >> id;) c.ids.push_back(id);
  }
  return cases;
}

class LlamaCppVocab : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    path_ = vocab_dir() + "/ggml-vocab-" + GetParam() + ".gguf";
    if (!std::filesystem::exists(path_) || !std::filesystem::exists(path_ + ".out")) {
      GTEST_SKIP() << "llama.cpp's test vocabulary is not at " << path_
                   << " (scripts/test fetches it with scripts/fetch-llama-cpp-vocabs)";
    }
  }
  std::string path_;
};

TEST_P(LlamaCppVocab, EncodesAsTheHubTokenizer) {
  const auto tok = AutoTokenizer::from_pretrained(path_);
  const auto cases = read_cases(path_);
  ASSERT_GE(cases.size(), 40u) << path_ << ": the texts were not read";
  for (const auto& c : cases) {
    EXPECT_EQ(tok.encode(c.text, false), c.ids) << GetParam() << ": \"" << c.text << "\"";
  }
}

// Byte-level vocabularies give the text back exactly (SentencePiece ones drop a leading space).
TEST_P(LlamaCppVocab, ByteLevelIdsDecodeToTheText) {
  if (GetParam() == "llama-spm" || GetParam() == "phi-3") GTEST_SKIP() << "SentencePiece";
  const auto tok = AutoTokenizer::from_pretrained(path_);
  for (const auto& c : read_cases(path_)) {
    EXPECT_EQ(tok.decode(c.ids), c.text) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Vocabularies, LlamaCppVocab,
                         ::testing::Values("llama-bpe", "llama-spm", "phi-3", "qwen2", "qwen35",
                                           "gpt-2", "mpt", "starcoder", "refact", "command-r",
                                           "falcon", "deepseek-llm", "deepseek-coder"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

// Vocabularies of tokenizer models anvil does not implement are refused by name.
TEST(LlamaCppVocabRefused, OtherTokenizerModelsSayWhich) {
  for (const std::string name : {"bert-bge", "gemma-4"}) {
    const std::string path = vocab_dir() + "/ggml-vocab-" + name + ".gguf";
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " is not fetched";
    try {
      AutoTokenizer::from_pretrained(path);
      ADD_FAILURE() << path << " loaded";
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find("tokenizer.ggml.model"), std::string::npos) << what;
    }
  }
}

}  // namespace
}  // namespace anvil
