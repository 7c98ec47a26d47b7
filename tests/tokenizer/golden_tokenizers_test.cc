// Every tokenizer folder in tests/data/tokenizers (made by scripts/goldens/
// make_tokenizer_goldens.py with Hugging Face tokenizers): encode with and without special
// tokens, decode with and without skipping them, and decoding of arbitrary id sequences.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "anvil/tokenizer.h"
#include "test_data.h"
#include "tokenizer/utf8.h"

namespace anvil {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> tokenizer_folders() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(test::data_dir() + "/tokenizers")) {
    if (e.is_directory() && fs::exists(e.path() / "cases.json")) {
      out.push_back(e.path().filename().string());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

nlohmann::json load(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

class GoldenTokenizer : public ::testing::TestWithParam<std::string> {
 protected:
  fs::path dir() const { return fs::path(test::data_dir()) / "tokenizers" / GetParam(); }
};

TEST_P(GoldenTokenizer, EncodesAndDecodesLikeHuggingFace) {
  const Tokenizer tok = Tokenizer::from_file((dir() / "tokenizer.json").string());
  const auto cases = load(dir() / "cases.json");
  ASSERT_GT(cases.size(), 50u);
  int failures = 0;
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const auto ids = c["ids"].get<std::vector<int64_t>>();
    const auto plain = c["ids_no_special"].get<std::vector<int64_t>>();
    const bool ok = tok.encode(text) == ids && tok.encode(text, false) == plain &&
                    tok.decode(ids) == c["decoded"].get<std::string>() &&
                    tok.decode(ids, true) == c["decoded_skip_special"].get<std::string>();
    if (!ok && ++failures <= 5) {
      EXPECT_EQ(tok.encode(text), ids) << "text: " << nlohmann::json(text).dump();
      EXPECT_EQ(tok.encode(text, false), plain) << "text: " << nlohmann::json(text).dump();
      EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>());
      EXPECT_EQ(tok.decode(ids, true), c["decoded_skip_special"].get<std::string>());
    }
  }
  EXPECT_EQ(failures, 0) << "of " << cases.size() << " cases";
}

TEST_P(GoldenTokenizer, DecodesArbitraryIdsLikeHuggingFace) {
  if (!fs::exists(dir() / "decode_cases.json")) GTEST_SKIP() << "no decode cases";
  const Tokenizer tok = Tokenizer::from_file((dir() / "tokenizer.json").string());
  int failures = 0;
  for (const auto& c : load(dir() / "decode_cases.json")) {
    const auto ids = c["ids"].get<std::vector<int64_t>>();
    const bool ok = tok.decode(ids) == c["decoded"].get<std::string>() &&
                    tok.decode(ids, true) == c["decoded_skip_special"].get<std::string>();
    if (!ok && ++failures <= 5) {
      EXPECT_EQ(tok.decode(ids), c["decoded"].get<std::string>()) << nlohmann::json(ids).dump();
      EXPECT_EQ(tok.decode(ids, true), c["decoded_skip_special"].get<std::string>());
    }
  }
  EXPECT_EQ(failures, 0);
}

// Streaming the ids of every case piece by piece gives back the full decode, and no piece ends in
// half a character, for every pipeline (byte-level, byte fallback, Metaspace, WordPiece, ...).
TEST_P(GoldenTokenizer, StreamingAddsUpToTheFullDecode) {
  const Tokenizer tok = Tokenizer::from_file((dir() / "tokenizer.json").string());
  for (const auto& c : load(dir() / "cases.json")) {
    const auto ids = c["ids"].get<std::vector<int64_t>>();
    for (bool skip : {false, true}) {
      StreamingDecoder stream(tok, skip);
      std::string joined;
      for (int64_t id : ids) {
        const std::string piece = stream.push(id);
        ASSERT_EQ(utf8::find_invalid(piece), std::string::npos);
        joined += piece;
      }
      joined += stream.finish();
      EXPECT_EQ(joined, tok.decode(ids, skip)) << nlohmann::json(c["text"]).dump();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Folders, GoldenTokenizer, ::testing::ValuesIn(tokenizer_folders()),
                         test::ParamName());

}  // namespace
}  // namespace anvil
