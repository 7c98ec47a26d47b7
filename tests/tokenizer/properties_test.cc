// Properties every byte-level tokenizer must have, checked on the real Qwen3 tokenizer with
// random Unicode text: decode(encode(s)) == NFC(s); the streaming decoder emits whole characters
// only and adds up to the full decode; text around a special token encodes as its parts.
#include <gtest/gtest.h>

#include <random>

#include "anvil/error.h"
#include "anvil/tokenizer.h"
#include "test_data.h"
#include "tokenizer/utf8.h"

namespace anvil {
namespace {

const Tokenizer& qwen3() {
  static const Tokenizer t =
      Tokenizer::from_file(test::data_dir() + "/tokenizers/qwen3/tokenizer.json");
  return t;
}

// Random text from character classes that stress tokenizers.
std::string random_text(std::mt19937& rng) {
  static const std::vector<std::pair<char32_t, char32_t>> ranges = {
      {0x20, 0x7e},        // ASCII
      {0x09, 0x0d},        // tabs and newlines
      {0xa0, 0xff},        // Latin-1
      {0x300, 0x36f},      // combining marks
      {0x391, 0x3c9},      // Greek
      {0x410, 0x44f},      // Cyrillic
      {0x5d0, 0x5ea},      // Hebrew
      {0x627, 0x64a},      // Arabic
      {0x905, 0x939},      // Devanagari
      {0xe01, 0xe3a},      // Thai
      {0x3041, 0x3096},    // Hiragana
      {0x4e00, 0x9fff},    // CJK
      {0xac00, 0xd7a3},    // Hangul
      {0x2000, 0x200d},    // spaces, zero-width joiner
      {0x1f300, 0x1f64f},  // emoji
      {0x1f3fb, 0x1f3ff},  // skin tones
      {0xff01, 0xff5e},    // full width
  };
  std::uniform_int_distribution<size_t> len(0, 40), pick(0, ranges.size() - 1);
  std::string s;
  const size_t n = len(rng);
  for (size_t i = 0; i < n; ++i) {
    const auto [lo, hi] = ranges[pick(rng)];
    std::uniform_int_distribution<uint32_t> cp(lo, hi);
    utf8::append(s, static_cast<char32_t>(cp(rng)));
    if (i % 7 == 3) s += std::string(len(rng) % 4, ' ');  // whitespace runs
  }
  return s;
}

TEST(TokenizerProperties, DecodeOfEncodeIsTheNfcText) {
  std::mt19937 rng(2024);
  for (int i = 0; i < 3000; ++i) {
    const std::string s = random_text(rng);
    const auto ids = qwen3().encode(s);
    EXPECT_EQ(qwen3().decode(ids), utf8::normalize(s, utf8::NormalForm::nfc)) << i;
  }
}

TEST(TokenizerProperties, StreamingNeverCutsACharacter) {
  std::mt19937 rng(7);
  for (int i = 0; i < 500; ++i) {
    const std::string s = random_text(rng);
    const auto ids = qwen3().encode(s);
    StreamingDecoder stream(qwen3(), false);
    std::string joined;
    for (int64_t id : ids) {
      const std::string piece = stream.push(id);
      EXPECT_EQ(utf8::find_invalid(piece), std::string::npos);
      EXPECT_EQ(piece.find("\xef\xbf\xbd"), std::string::npos) << "a half character leaked";
      joined += piece;
    }
    joined += stream.finish();
    EXPECT_EQ(joined, qwen3().decode(ids)) << i;
  }
}

TEST(TokenizerProperties, TextAroundSpecialTokensEncodesAsItsParts) {
  std::mt19937 rng(99);
  const auto specials = qwen3().special_tokens();
  ASSERT_FALSE(specials.empty());
  for (int i = 0; i < 300; ++i) {
    const std::string a = random_text(rng), b = random_text(rng);
    const std::string& special = specials[i % specials.size()];
    std::vector<int64_t> want = qwen3().encode(a, false);
    want.push_back(*qwen3().token_to_id(special));
    const auto tail = qwen3().encode(b, false);
    want.insert(want.end(), tail.begin(), tail.end());
    EXPECT_EQ(qwen3().encode(a + special + b, false), want) << a << special << b;
  }
}

TEST(TokenizerProperties, SkipSpecialTokensDropsThemOnly) {
  const std::string text = "<|im_start|>user\nhi<|im_end|>\n";
  const auto ids = qwen3().encode(text);
  EXPECT_EQ(qwen3().decode(ids), text);
  EXPECT_EQ(qwen3().decode(ids, true), "user\nhi\n");
}

TEST(TokenizerErrors, InvalidUtf8IsRefusedWithTheOffset) {
  for (const auto& [bytes, offset] : std::vector<std::pair<std::string, int>>{
           {"ab\xff", 2}, {"\xc3", 0}, {"ok \xe2\x82", 3}, {"\xed\xa0\x80", 0}, {"x\xc0\xaf", 1}}) {
    try {
      qwen3().encode(bytes);
      FAIL() << "accepted invalid UTF-8";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "text to encode: invalid UTF-8 at byte " + std::to_string(offset));
    }
  }
}

TEST(TokenizerErrors, DecodeOfUnknownIdIsAnError) {
  const std::vector<int64_t> ids{9707, 99999999};
  EXPECT_THROW(qwen3().decode(ids), Error);
  const std::vector<int64_t> negative{-1};
  EXPECT_THROW(qwen3().decode(negative), Error);
}

std::string load_error(const std::string& text) {
  try {
    Tokenizer::from_json_text(text, "tok.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TokenizerErrors, MalformedTokenizerJsonNamesTheProblem) {
  const std::string model =
      R"("model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"]})";
  EXPECT_EQ(load_error("{" + model + "}"), "");
  EXPECT_NE(load_error("{\"model\": ").find("tok.json: not valid JSON"), std::string::npos);
  EXPECT_NE(load_error("{}").find("tok.json: no \"model\""), std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "Unigram", "vocab": []}})")
                .find("'Unigram' is not supported"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a c"]}})")
                .find("not in the vocab"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["ac"]}})")
                .find("is not two tokens"),
            std::string::npos);
  EXPECT_NE(load_error(R"({"model": {"type": "BPE", "vocab": {"a": "x"}, "merges": []}})")
                .find("no integer id"),
            std::string::npos);
  EXPECT_NE(load_error("{" + model + R"(, "pre_tokenizer": {"type": "Fancy"}})")
                .find("pre-tokenizer type 'Fancy' is not supported"),
            std::string::npos);
  EXPECT_NE(
      load_error(
          "{" + model +
          R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "(["}, "behavior": "Isolated"}})")
          .find("invalid regex"),
      std::string::npos);
  EXPECT_NE(
      load_error(
          "{" + model +
          R"(, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"}})")
          .find("unknown split behavior 'Sideways'"),
      std::string::npos);
  EXPECT_NE(load_error("{" + model + R"(, "normalizer": {"type": "Precompiled"}})")
                .find("'Precompiled' is not supported"),
            std::string::npos);
  EXPECT_NE(load_error("{" + model + R"(, "decoder": {"type": "Strip"}})").find("decoder Strip"),
            std::string::npos);
  EXPECT_NE(load_error("{" + model + R"(, "added_tokens": [{"id": 5}]})").find("tok.json"),
            std::string::npos);
  // A field of another JSON type: a number as model.type had escaped as the JSON library's own
  // exception (tools/file_fuzz.py found it); components' types were already checked.
  EXPECT_NE(load_error(R"({"model": {"type": 7, "vocab": {"a": 0}, "merges": []}})")
                .find("tok.json: not a tokenizers file of the expected structure"),
            std::string::npos);
  EXPECT_NE(load_error("{" + model + R"(, "pre_tokenizer": {"type": ["Split"]}})")
                .find("tok.json: a pre-tokenizer has no \"type\""),
            std::string::npos);
  EXPECT_NE(load_error("{" + model + R"(, "decoder": {"type": {"x": 1}}})")
                .find("tok.json: a decoder has no \"type\""),
            std::string::npos);
}

}  // namespace
}  // namespace anvil
