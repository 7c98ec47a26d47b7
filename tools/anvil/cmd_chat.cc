// `anvil chat`: an interactive conversation. Each user line is added to the history, the chat
// template renders the whole conversation with the assistant prompt, and the reply streams
// until any eos id of generation_config.json (or the tokenizer's eos token). A prompt cache
// keeps the conversation's keys and values from turn to turn, so a turn runs only the tokens
// after what the last one's already ran (the new message, and whatever the template rendered
// differently).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "anvil/auto_tokenizer.h"
#include "anvil/error.h"
#include "cli_common.h"
#include "commands.h"

namespace anvil::cli {

void add_chat(CLI::App& app) {
  struct Flags {
    std::string model, system, thinking, prompt_cache;
    bool no_prompt_cache = false, timings = false;
    SamplingFlags sampling;
    ModelFlags model_flags;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "chat", "chat interactively (one message per line; /reset clears, empty line or EOF quits)");
  cmd->add_option("MODEL", f->model,
                  "model folder, .gguf file or Hub id (default: SmolLM2-135M-Instruct Q4_1, "
                  "fetched once into ~/.cache/anvil)");
  cmd->add_option("--system", f->system, "a system message");
  cmd->add_option("--enable-thinking", f->thinking, "true or false (Qwen3 templates)");
  cmd->add_flag("--no-prompt-cache", f->no_prompt_cache,
                "run each turn's whole conversation again instead of reusing the keys and values "
                "of what earlier turns ran");
  cmd->add_option("--prompt-cache", f->prompt_cache,
                  "also keep the conversation's keys and values in this file, written after each "
                  "reply: a later chat that begins the same way (a long --system message) starts "
                  "from it; refused if another model made it");
  cmd->add_flag("--timings", f->timings,
                "after each reply, print to stderr the prompt's tokens (and how many came from the "
                "cache), the time to the first new token and the reply's rate");
  f->sampling.add_to(*cmd);
  f->model_flags.add_to(*cmd);
  cmd->callback([f] {
    f->model = model_or_default(f->model);
    ChatOptions chat;
    chat.add_generation_prompt = true;
    if (f->thinking == "true" || f->thinking == "false") {
      chat.enable_thinking = f->thinking == "true";
    } else if (!f->thinking.empty()) {
      throw Error("--enable-thinking: expected true or false, got '" + f->thinking + "'");
    }
    const auto tok = AutoTokenizer::from_pretrained(f->model);
    if (!tok.has_chat_template()) throw Error(f->model + ": the tokenizer has no chat template");
    const CausalLM model = CausalLM::from_pretrained(f->model, f->model_flags.options());
    GenerateOptions o = f->sampling.options();
    const auto assistant = load_assistant(f->sampling, f->model_flags, o);
    if (!o.max_new_tokens) o.max_new_tokens = 512;
    const int64_t max_new = *o.max_new_tokens;
    const int64_t context = model.config().max_position_embeddings;
    std::vector<int64_t> eos = model.generation_config().eos_token_ids;
    if (auto e = tok.eos_token_id()) eos.push_back(*e);
    o.eos_token_ids = eos;
    o.tokenizer = &tok.tokenizer();  // for stop strings
    const auto bridge = bridge_assistant_tokenizer(f->sampling, tok.tokenizer(), o);
    const bool interactive = isatty(0);

    // Beam search's replies come once final and take no prompt cache.
    const bool streamed = streams(o, model.generation_config());
    PromptCache cache;
    if (streamed && !f->no_prompt_cache) o.prompt_cache = &cache;
    if (!f->prompt_cache.empty()) {
      if (!o.prompt_cache) {
        throw Error(std::string("--prompt-cache: not with ") +
                    (f->no_prompt_cache ? "--no-prompt-cache" : "beam search"));
      }
      if (std::filesystem::exists(f->prompt_cache)) cache.load(f->prompt_cache, model);
    }
    using Clock = std::chrono::steady_clock;

    nlohmann::ordered_json history = nlohmann::ordered_json::array();
    if (!f->system.empty()) history.push_back({{"role", "system"}, {"content", f->system}});
    std::string line;
    for (;;) {
      if (interactive) std::fprintf(stderr, "> ");
      if (!std::getline(std::cin, line) || line.empty()) break;
      if (line == "/reset") {
        history.erase(history.begin() + (f->system.empty() ? 0 : 1), history.end());
        continue;
      }
      history.push_back({{"role", "user"}, {"content", line}});
      const auto ids = tok.encode(tok.apply_chat_template(history, chat), false);
      // A reply stops at the model's context (max_position_embeddings); a conversation that
      // leaves no room for one is refused, and an interactive chat goes on after /reset.
      const auto room = context > 0 ? context - static_cast<int64_t>(ids.size()) : max_new;
      if (room <= 0) {
        const std::string why = "the conversation (" + std::to_string(ids.size()) +
                                " tokens) fills the model's context of " + std::to_string(context) +
                                " (max_position_embeddings)";
        if (!interactive) throw Error(why);
        std::fprintf(stderr, "%s: /reset to start a new conversation\n", why.c_str());
        history.erase(history.end() - 1);
        continue;
      }
      o.max_new_tokens = std::min(max_new, room);
      if (!streamed) {  // beam search: the reply once it is final
        const auto out = model.generate(ids, o);
        DecodeOptions skip;
        skip.skip_special_tokens = true;
        const std::string reply = tok.decode(
            std::vector<int64_t>(out.begin() + static_cast<int64_t>(ids.size()), out.end()), skip);
        std::printf("%s\n", reply.c_str());
        std::fflush(stdout);
        history.push_back({{"role", "assistant"}, {"content", reply}});
        continue;
      }
      StreamingDecoder stream(tok.tokenizer(), true);
      std::string reply;
      const Clock::time_point started = Clock::now();
      Clock::time_point first;
      int64_t new_tokens = 0;
      o.streamer = [&](const std::vector<int64_t>& step) {
        if (new_tokens++ == 0) first = Clock::now();
        const std::string piece = stream.push(step[0]);
        reply += piece;
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
      };
      model.generate(ids, o);
      const std::string rest = stream.finish();
      reply += rest;
      std::printf("%s\n", rest.c_str());
      std::fflush(stdout);
      if (f->timings && new_tokens > 0) {
        const auto ms = [](Clock::duration d) {
          return std::chrono::duration<double, std::milli>(d).count();
        };
        const double rest_ms = ms(Clock::now() - first);
        std::fprintf(stderr,
                     "[prompt: %zu tokens, %lld from the cache; first token after %.1f ms; "
                     "reply: %lld tokens, %.1f tok/s after the first]\n",
                     ids.size(), static_cast<long long>(o.prompt_cache ? cache.reused() : 0),
                     ms(first - started), static_cast<long long>(new_tokens),
                     new_tokens > 1 && rest_ms > 0
                         ? 1e3 * static_cast<double>(new_tokens - 1) / rest_ms
                         : 0.0);
      }
      history.push_back({{"role", "assistant"}, {"content", reply}});
      if (!f->prompt_cache.empty()) cache.save(f->prompt_cache);
    }
  });
}

}  // namespace anvil::cli
