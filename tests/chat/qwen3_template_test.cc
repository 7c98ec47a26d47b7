// Renders the Qwen3 chat template from tokenizer_config.json for every case of the transformers
// fixture qwen3_chat.json and compares with the text transformers produced.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "anvil/chat_template.h"
#include "chat/jinja_test_util.h"
#include "test_data.h"

namespace anvil::test {
namespace {

using json = nlohmann::ordered_json;

json read_json(const std::string& path) {
  return json::parse(read_file(path));
}

TEST(ChatTemplateQwen3, MatchesTransformersOnEveryFixtureCase) {
  const json config = read_json(data_dir() + "/chat/qwen3_tokenizer_config.json");
  const ChatTemplate tmpl(config.at("chat_template").get<std::string>());
  const json cases = read_json(data_dir() + "/chat/qwen3_chat.json");
  ASSERT_EQ(cases.size(), 12u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const json& c = cases[i];
    json ctx = json::object();
    ctx["messages"] = c.at("messages");
    ctx["add_generation_prompt"] = c.at("add_generation_prompt");
    if (!c.at("enable_thinking").is_null()) ctx["enable_thinking"] = c.at("enable_thinking");
    if (c.contains("tools")) ctx["tools"] = c.at("tools");
    EXPECT_EQ(tmpl.render(ctx), c.at("text").get<std::string>()) << "case " << i;
  }
}

}  // namespace
}  // namespace anvil::test
