// The tokenizer commands of the CLI on a folder holding only tokenizer files: tokenize,
// detokenize, render-chat; text and JSON output; errors as one line.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

struct Out {
  int code;
  std::string out, err;
};

Out cli(const std::string& args, const std::string& stdin_text = "") {
  test::TempDir dir;
  std::ofstream(dir.file("in"), std::ios::binary) << stdin_text;
  const std::string cmd = test::cli_path() + " " + args + " <" + dir.file("in") + " >" +
                          dir.file("out") + " 2>" + dir.file("err");
  const int status = std::system(cmd.c_str());
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir.file("out")),
          slurp(dir.file("err"))};
}

std::string qwen3() {
  return test::data_dir() + "/tokenizers/qwen3";
}

TEST(TokenizerCli, TokenizeAndDetokenize) {
  Out r = cli("tokenize " + qwen3() + " 'Hello world'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "9707,1879\n");
  r = cli("tokenize " + qwen3() + " --json 'Hello world'");
  EXPECT_EQ(r.out, "[9707,1879]\n");
  r = cli("tokenize " + qwen3() + " --file - --json", "<|im_start|>user\nhi<|im_end|>\n");
  EXPECT_EQ(nlohmann::json::parse(r.out),
            nlohmann::json::parse("[151644,872,198,6023,151645,198]"));
  r = cli("tokenize " + qwen3() + " -- '-starts with a dash'");
  EXPECT_EQ(r.code, 0) << r.err;
  r = cli("detokenize " + qwen3() + " --ids 151644,872,198,6023,151645,198");
  EXPECT_EQ(r.out, "<|im_start|>user\nhi<|im_end|>\n\n");
  r = cli("detokenize " + qwen3() +
          " --ids 151644,872,198,6023,151645,198 --skip-special-tokens --json");
  EXPECT_EQ(r.out, "\"user\\nhi\\n\"\n");
}

TEST(TokenizerCli, RenderChatMatchesTransformers) {
  test::TempDir dir;
  std::ofstream(dir.file("m.json")) << R"([{"role": "user", "content": "Hello!"}])";
  Out r = cli("render-chat " + qwen3() + " --messages " + dir.file("m.json") +
              " --add-generation-prompt --enable-thinking false --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).get<std::string>(),
            "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
  r = cli("render-chat " + qwen3() + " --messages " + dir.file("m.json"));
  EXPECT_EQ(r.out, "<|im_start|>user\nHello!<|im_end|>\n");
  // transformers' continue_final_message: the prompt ends inside the last message.
  std::ofstream(dir.file("c.json"))
      << R"([{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4", "reasoning_content": "Add"}])";
  r = cli("render-chat " + qwen3() + " --messages " + dir.file("c.json") +
          " --continue-final-message");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out,
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nAdd\n</think>\n\n4");
  r = cli("render-chat " + qwen3() + " --messages " + dir.file("c.json") +
          " --continue-final-message=reasoning_content");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n<think>\nAdd");
}

TEST(TokenizerCli, ErrorsAreOneLine) {
  test::TempDir dir;
  auto one_line = [](const Out& r, const std::string& fragment) {
    EXPECT_NE(r.code, 0);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find(fragment), std::string::npos) << r.err;
  };
  one_line(cli("tokenize " + dir.path() + " hi"), "no tokenizer.json");
  one_line(cli("detokenize " + qwen3() + " --ids 1,99999999"), "not in the tokenizer's vocabulary");
  one_line(cli("tokenize " + qwen3() + " --file -", std::string("bad \xff byte")),
           "invalid UTF-8 at byte 4");
  std::ofstream(dir.file("bad.json")) << "[{";
  one_line(cli("render-chat " + qwen3() + " --messages " + dir.file("bad.json")), "not valid JSON");
  std::ofstream(dir.file("tokenizer.json"))
      << R"({"model": {"type": "BPE", "vocab": {}, "merges": [)";
  one_line(cli("tokenize " + dir.path() + " hi"), "tokenizer.json: not valid JSON");
}

}  // namespace
}  // namespace anvil
