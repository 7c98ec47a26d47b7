// `anvil chat`: a conversation read line by line from stdin, each turn through the prompt cache
// (its --timings line says how much of the prompt came from it), the replies the same as
// without the cache; a cache file carries a conversation from one chat to the next.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli_run.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil {
namespace {

using test::CliRun;
using test::run_cli;
using test::TempDir;

// The --timings lines' numbers, a turn each: its prompt's tokens, those from the cache, and
// the reply's tokens. (Parsed by hand: GCC 12's <regex> trips -Werror=maybe-uninitialized.)
struct Timing {
  int prompt, cached, reply;
};
std::vector<Timing> timings(const std::string& err) {
  std::vector<Timing> out;
  for (size_t at = err.find("[prompt: "); at != std::string::npos;
       at = err.find("[prompt: ", at + 1)) {
    Timing t{};
    double ms = 0;
    if (std::sscanf(err.c_str() + at,
                    "[prompt: %d tokens, %d from the cache; first token after %lf ms; reply: %d",
                    &t.prompt, &t.cached, &ms, &t.reply) == 4) {
      out.push_back(t);
    }
  }
  return out;
}
std::vector<int> cached_counts(const std::string& err) {
  std::vector<int> counts;
  for (const Timing& t : timings(err)) counts.push_back(t.cached);
  return counts;
}

// A random float32 model with Qwen3's vocabulary, its real tokenizer and chat template, in
// `dir`/model, and three questions in `dir`/turns.txt; returns chat's arguments for it (seeded
// sampling: a random model's greedy replies repeat one token).
std::string chat_model(const TempDir& dir, int context) {
  {
    std::ofstream config(dir.file("config.json"));
    config << R"({"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
      "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 2, "num_key_value_heads": 1, "head_dim": 16,
      "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
      "vocab_size": 151936, "bos_token_id": 151643, "eos_token_id": 151645,
      "max_position_embeddings": )"
           << context << "}";
  }
  const std::string model = dir.file("model");
  const CliRun made = run_cli("init-model --like " + dir.file("config.json") +
                              " --dtype f32 --seed 3 --out " + model);
  EXPECT_EQ(made.exit_code, 0) << made.err;
  for (const char* f : {"tokenizer.json", "tokenizer_config.json"}) {
    std::filesystem::copy_file(test::data_dir() + "/tokenizers/qwen3/" + f, model + "/" + f);
  }
  std::ofstream turns(dir.file("turns.txt"));
  turns << "What is the capital of France?\nAnd of Germany?\nName three rivers.\n";
  return "chat " + model +
         " --temperature 1 --top-k 0 --seed 11 --max-new-tokens 8 --threads 2 --timings";
}

TEST(ChatCli, TurnsReuseTheConversationsKeysAndReplyAsWithout) {
  TempDir dir;
  const std::string args = chat_model(dir, 4096);
  const CliRun cached = run_cli(args, dir.file("turns.txt"));
  const CliRun whole = run_cli(args + " --no-prompt-cache", dir.file("turns.txt"));
  ASSERT_EQ(cached.exit_code, 0) << cached.err;
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_EQ(cached.out, whole.out);
  const std::vector<int> reused = cached_counts(cached.err);
  ASSERT_EQ(reused.size(), 3u) << cached.err;
  EXPECT_EQ(reused[0], 0);
  // Each later turn reuses at least the last turn's prompt (the reply's tokens only as far as
  // the template renders them back the same).
  EXPECT_GE(reused[1], 14) << cached.err;
  EXPECT_GT(reused[2], reused[1]) << cached.err;
  EXPECT_EQ(cached_counts(whole.err), (std::vector<int>{0, 0, 0})) << whole.err;
}

// --prompt-cache FILE: a chat leaves its conversation's keys and values in the file; the next
// chat with the same system message starts its first turn from them and replies as the first
// chat did.
TEST(ChatCli, APromptCacheFileCarriesTheConversationToTheNextChat) {
  TempDir dir;
  const std::string args = chat_model(dir, 4096) + " --system \"You answer in one word.\"" +
                           " --prompt-cache " + dir.file("chat.cache");
  const CliRun one = run_cli(args, dir.file("turns.txt"));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_TRUE(std::filesystem::exists(dir.file("chat.cache")));
  EXPECT_EQ(cached_counts(one.err).at(0), 0) << one.err;
  const CliRun two = run_cli(args, dir.file("turns.txt"));
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.out, one.out);
  const std::vector<Timing> turns = timings(two.err);
  ASSERT_EQ(turns.size(), 3u) << two.err;
  // The whole first prompt but its last token came from the file.
  EXPECT_EQ(turns[0].cached, turns[0].prompt - 1) << two.err;
  const CliRun refused = run_cli(args + " --no-prompt-cache", dir.file("turns.txt"));
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--prompt-cache: not with --no-prompt-cache"), std::string::npos)
      << refused.err;
}

// Replies stop at the model's context; a conversation that fills it is refused (a piped chat
// ends with the error; an interactive one would go on after /reset).
TEST(ChatCli, RepliesStopAtTheModelsContext) {
  TempDir dir;
  const CliRun r = run_cli(chat_model(dir, 40), dir.file("turns.txt"));
  EXPECT_NE(r.exit_code, 0);
  const std::vector<Timing> turns = timings(r.err);
  for (const Timing& t : turns) EXPECT_LE(t.prompt + t.reply, 40) << r.err;
  EXPECT_GE(turns.size(), 1u) << r.err;
  EXPECT_NE(r.err.find("fills the model's context of 40 (max_position_embeddings)"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace anvil
