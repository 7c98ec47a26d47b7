// AutoTokenizer: tokenizer_config.json on top of tokenizer.json (special tokens, padding,
// add_bos/add_eos, clean-up, chat templates), on the Qwen3 files and on hand-made configs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "anvil/auto_tokenizer.h"
#include "anvil/error.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

namespace fs = std::filesystem;

std::string qwen3() {
  return test::data_dir() + "/tokenizers/qwen3";
}

TEST(AutoTokenizer, ReadsTheQwen3Config) {
  const auto tok = AutoTokenizer::from_pretrained(qwen3());
  EXPECT_EQ(tok.eos_token(), "<|im_end|>");
  EXPECT_EQ(tok.eos_token_id(), 151645);
  EXPECT_EQ(tok.pad_token_id(), 151643);
  EXPECT_FALSE(tok.bos_token_id().has_value());
  EXPECT_EQ(tok.model_max_length(), 131072);
  EXPECT_TRUE(tok.has_chat_template());
  EXPECT_EQ(tok.encode("Hello world"), (std::vector<int64_t>{9707, 1879}));
}

TEST(AutoTokenizer, PadsBatchesOnEitherSide) {
  const auto tok = AutoTokenizer::from_pretrained(qwen3());
  const Batch left = tok.encode_batch({"Hello world", "Hi"}, true, "left");
  ASSERT_EQ(left.input_ids.size(), 2u);
  EXPECT_EQ(left.input_ids[0], (std::vector<int64_t>{9707, 1879}));
  EXPECT_EQ(left.input_ids[1], (std::vector<int64_t>{151643, 13048}));
  EXPECT_EQ(left.attention_mask[1], (std::vector<int64_t>{0, 1}));
  const Batch right = tok.encode_batch({"Hello world", "Hi"}, true, "right");
  EXPECT_EQ(right.input_ids[1], (std::vector<int64_t>{13048, 151643}));
  EXPECT_EQ(right.attention_mask[1], (std::vector<int64_t>{1, 0}));
  EXPECT_THROW(tok.encode_batch({"a"}, true, "middle"), Error);
}

// A copy of the Qwen3 tokenizer with a different tokenizer_config.json.
std::string with_config(const test::TempDir& dir, const std::string& config) {
  fs::copy_file(qwen3() + "/tokenizer.json", dir.file("tokenizer.json"));
  std::ofstream(dir.file("tokenizer_config.json")) << config;
  return dir.path();
}

TEST(AutoTokenizer, AddBosAndEosFlagsDecide) {
  test::TempDir dir;
  const auto tok = AutoTokenizer::from_pretrained(with_config(
      dir,
      R"({"bos_token": "<|im_start|>", "eos_token": {"content": "<|im_end|>"}, "add_bos_token": true, "add_eos_token": true})"));
  EXPECT_EQ(tok.encode("Hello world"), (std::vector<int64_t>{151644, 9707, 1879, 151645}));
  EXPECT_EQ(tok.encode("Hello world", false), (std::vector<int64_t>{9707, 1879}));
}

TEST(AutoTokenizer, CleanUpTokenizationSpaces) {
  test::TempDir dir;
  const auto tok =
      AutoTokenizer::from_pretrained(with_config(dir, R"({"clean_up_tokenization_spaces": true})"));
  const auto ids = tok.encode("Hello , world . it 's");
  EXPECT_EQ(tok.decode(ids), "Hello, world. it's");
  DecodeOptions raw;
  raw.clean_up_tokenization_spaces = false;
  EXPECT_EQ(tok.decode(ids, raw), "Hello , world . it 's");
}

TEST(AutoTokenizer, NamedChatTemplatesAndErrors) {
  test::TempDir dir;
  const auto tok = AutoTokenizer::from_pretrained(with_config(
      dir,
      R"({"chat_template": [{"name": "default", "template": "{% for m in messages %}[{{ m.content }}]{% endfor %}"}, {"name": "tool_use", "template": "{{ tools | length }}"}]})"));
  const nlohmann::ordered_json messages = {{{"role", "user"}, {"content", "hi"}}};
  EXPECT_EQ(tok.apply_chat_template(messages), "[hi]");
  ChatOptions o;
  o.template_name = "tool_use";
  o.tools = nlohmann::ordered_json::array({{{"name", "f"}}});
  EXPECT_EQ(tok.apply_chat_template(messages, o), "1");
  o.template_name = "missing";
  EXPECT_THROW(tok.apply_chat_template(messages, o), Error);

  test::TempDir bad;
  try {
    AutoTokenizer::from_pretrained(with_config(bad, R"({"chat_template": "{% for %}"})"));
    FAIL() << "a broken template was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json: chat template: line 1"),
              std::string::npos)
        << e.what();
  }
  test::TempDir unknown;
  EXPECT_THROW(AutoTokenizer::from_pretrained(with_config(unknown, R"({"eos_token": "<nope>"})")),
               Error);
}

// The messages as transformers 5.25 passes them (expected strings from its apply_chat_template):
// keys whose value is None dropped, reasoning under `thinking` and `reasoning_content` too, and
// `tools` and `documents` defined (None) when not given.
TEST(AutoTokenizer, ChatMessagesArePreparedAsTransformersDoes) {
  test::TempDir dir;
  const auto tok = AutoTokenizer::from_pretrained(with_config(
      dir,
      R"({"chat_template": "{% for m in messages %}{{ m }}|{% endfor %}{{ tools }}|{{ documents }}|{{ tools is defined }}"})"));
  const auto messages = nlohmann::ordered_json::parse(R"([
    {"role": "user", "content": "u", "name": null},
    {"role": "assistant", "content": null,
     "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": null}}}]},
    {"role": "assistant", "content": "x", "reasoning_content": "r"},
    {"role": "assistant", "content": "y", "thinking": null, "reasoning": "z"},
    {"role": "assistant", "reasoning_content": "a", "content": "w", "thinking": "b"}])");
  EXPECT_EQ(tok.apply_chat_template(messages),
            "{'role': 'user', 'content': 'u'}|{'role': 'assistant', 'tool_calls': [{'type': "
            "'function', 'function': {'name': 'f', 'arguments': {'a': None}}}]}|{'thinking': 'r', "
            "'role': 'assistant', 'content': 'x', 'reasoning_content': 'r'}|{'thinking': 'z', "
            "'role': 'assistant', 'content': 'y', 'reasoning': 'z', 'reasoning_content': "
            "'z'}|{'thinking': 'b', 'role': 'assistant', 'reasoning_content': 'a', 'content': "
            "'w'}|None|None|True");
  ChatOptions o;
  o.tools = nlohmann::ordered_json::array({{{"name", "f"}}});
  EXPECT_EQ(tok.apply_chat_template(nlohmann::ordered_json::array({messages[0]}), o),
            "{'role': 'user', 'content': 'u'}|[{'name': 'f'}]|None|True");
  try {
    tok.apply_chat_template(nlohmann::ordered_json::array({"hi"}));
    FAIL() << "a message that is not an object was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("chat message 0 is not a JSON object"), std::string::npos)
        << e.what();
  }
}

// transformers' continue_final_message (expected strings from transformers 5.25): the prompt
// ends inside the last message, in its content, its reasoning or its last text block; trimmed
// trailing spaces stay trimmed; the refusals name the field.
TEST(AutoTokenizer, ContinueFinalMessageEndsInsideTheLastMessage) {
  using nlohmann::ordered_json;
  const auto qwen = AutoTokenizer::from_pretrained(qwen3());
  const auto haiku = ordered_json::parse(
      R"([{"role": "user", "content": "Write a haiku"}, {"role": "assistant", "content": "Autumn moonlight  "}])");
  ChatOptions o;
  o.continue_final_message = "content";
  EXPECT_EQ(qwen.apply_chat_template(haiku, o),
            "<|im_start|>user\nWrite a haiku<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>"
            "\n\nAutumn moonlight  ");
  o.continue_final_message = "reasoning_content";
  EXPECT_EQ(
      qwen.apply_chat_template(
          ordered_json::parse(
              R"([{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4", "reasoning_content": "Add them"}])"),
          o),
      "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nAdd them");

  test::TempDir trim_dir;
  const auto trimmed = AutoTokenizer::from_pretrained(with_config(
      trim_dir,
      R"({"chat_template": "{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}</{{ m.role }}>\n{% endfor %}"})"));
  o.continue_final_message = "content";
  EXPECT_EQ(trimmed.apply_chat_template(haiku, o),
            "<user>Write a haiku</user>\n<assistant>Autumn moonlight");

  test::TempDir blocks_dir;
  const auto blocks = AutoTokenizer::from_pretrained(with_config(
      blocks_dir,
      R"({"chat_template": "{% for m in messages %}[{{ m.role }}]{% for b in m.content %}{{ b.text }}|{% endfor %}[/]{% endfor %}"})"));
  EXPECT_EQ(
      blocks.apply_chat_template(
          ordered_json::parse(R"([{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                    {"role": "assistant", "content": [{"type": "text", "text": "one"}, {"type": "image"},
                     {"type": "text", "text": "two"}, {"type": "image"}]}])"),
          o),
      "[user]hi|[/][assistant]one||two");

  const auto refused = [&](const PreTrainedTokenizer& tok, const ChatOptions& options,
                           const std::string& why) {
    try {
      tok.apply_chat_template(haiku, options);
      ADD_FAILURE() << "rendered; expected: " << why;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  };
  o.continue_final_message = "reasoning_content";
  refused(trimmed, o, "the final message has no \"reasoning_content\" to continue");
  o.continue_final_message = "content";
  test::TempDir roles_dir, cut_dir;
  refused(
      AutoTokenizer::from_pretrained(with_config(
          roles_dir, R"({"chat_template": "{% for m in messages %}{{ m.role }}{% endfor %}"})")),
      o, "continue_final_message is set to \"content\" but this is not an accepted field");
  refused(AutoTokenizer::from_pretrained(with_config(
              cut_dir,
              R"({"chat_template": "{% for m in messages %}{{ m.content[:3] }}{% endfor %}"})")),
          o, "the final message does not appear in the chat");
  o.add_generation_prompt = true;
  refused(qwen, o, "continue_final_message and add_generation_prompt are not compatible");
}

}  // namespace
}  // namespace anvil
