// Characters Unicode 15.0-16.0 assigned, which Debian 12's PCRE2 (Unicode 14.0 tables) leaves
// unassigned: tokenizers' regexes must classify them as Hugging Face tokenizers 0.23 does
// (Unicode 16.0), and characters of Unicode 17.0 as it does too (unassigned).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "anvil/tokenizer.h"
#include "test_data.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace anvil {
namespace {

std::string u8(char32_t cp) {
  return utf8::encode(cp);
}

TEST(UnicodeAdditions, RegexPropertiesIncludeThem) {
  const std::string text = u8(0x31350) + u8(0x13C8C) + "\xe2\x80\x99" + u8(0x10D40);
  const auto spans = [&](const char* pattern) { return Regex(pattern, "test").find_all(text); };
  using Spans = std::vector<std::pair<size_t, size_t>>;
  EXPECT_EQ(spans("\\p{L}+"), (Spans{{0, 8}}));
  EXPECT_EQ(spans("\\pL+"), (Spans{{0, 8}}));
  EXPECT_EQ(spans("[\\p{Lo}]+"), (Spans{{0, 8}}));
  EXPECT_EQ(spans("\\p{N}"), (Spans{{11, 15}}));
  EXPECT_EQ(spans("[^\\s\\p{L}\\p{N}]+"), (Spans{{8, 11}}));
  EXPECT_EQ(spans("\\P{L}+"), (Spans{{8, 15}}));
  EXPECT_EQ(spans("\\w+"), (Spans{{0, 8}, {11, 15}}));
  EXPECT_EQ(spans("\\d"), (Spans{{11, 15}}));
  EXPECT_EQ(spans("[\\d]"), (Spans{{11, 15}}));
  EXPECT_EQ(spans("\\D+"), (Spans{{0, 11}}));
}

// Ids from Hugging Face tokenizers 0.23.3 on the same tokenizer.json: "’s" after a letter is
// one pre-token (id 748); after a character the regex does not take for a letter, "’" joins
// the preceding run and "s" stands alone (527, 82).
TEST(UnicodeAdditions, Qwen3TokenizerMatchesTokenizers) {
  const Tokenizer t = Tokenizer::from_file(test::data_dir() + "/tokenizers/qwen3/tokenizer.json");
  const std::string s = "\xe2\x80\x99s";
  const std::vector<std::pair<char32_t, std::vector<int64_t>>> cases = {
      {0x31350, {172, 109, 235, 238, 748}}, {0x2EBF0, {172, 106, 107, 108, 748}},
      {0x13C8C, {124373, 110, 234, 748}},   {0x11F04, {128240, 120, 226, 748}},
      {0x10D40, {123934, 113, 222, 748}},   {0xA7CB, {166, 253, 233, 748}},
      {0x1D2C0, {56252, 233, 222, 748}},    {0x1E030, {172, 252, 222, 108, 748}},
      {0x9FFF, {101871, 123, 748}},         {0x32551, {172, 110, 243, 239, 527, 82}},
      {0x088F, {156, 95, 237, 527, 82}},
  };
  for (const auto& [cp, ids] : cases) {
    EXPECT_EQ(t.encode(u8(cp) + s), ids) << "U+" << std::hex << static_cast<unsigned>(cp);
  }
}

}  // namespace
}  // namespace anvil
