// The real Qwen3 tokenizer against transformers' own outputs (the shared fixture): ids, and both
// decodings, for every text.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "anvil/tokenizer.h"
#include "test_data.h"

namespace anvil {
namespace {

std::string qwen3_dir() {
  return test::data_dir() + "/tokenizers/qwen3";
}

const Tokenizer& qwen3() {
  static const Tokenizer t = Tokenizer::from_file(qwen3_dir() + "/tokenizer.json");
  return t;
}

TEST(Qwen3Tokenizer, MatchesTransformersOnThePublicFixture) {
  std::ifstream in(qwen3_dir() + "/public_cases.json");
  const auto cases = nlohmann::json::parse(in);
  ASSERT_GT(cases.size(), 10u);
  for (const auto& c : cases) {
    const std::string text = c["text"];
    const auto want = c["ids"].get<std::vector<int64_t>>();
    EXPECT_EQ(qwen3().encode(text), want) << text;
    EXPECT_EQ(qwen3().decode(want), c["decoded"].get<std::string>()) << text;
    EXPECT_EQ(qwen3().decode(want, true), c["decoded_skip_special"].get<std::string>()) << text;
  }
}

}  // namespace
}  // namespace anvil
