// `anvil tokenize` and `anvil detokenize`: the model's tokenizer from the command line.
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "anvil/auto_tokenizer.h"
#include "anvil/error.h"
#include "cli_common.h"
#include "commands.h"
#include "formats/mapped_file.h"

namespace anvil::cli {

void add_tokenize(CLI::App& app) {
  struct Flags {
    std::string model, text, file;
    bool json = false, no_special = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("tokenize", "print the token ids of a text");
  cmd->add_option("MODEL", f->model, "model or tokenizer folder, or Hub id")->required();
  cmd->add_option("TEXT", f->text, "text to tokenize (use -- before text that starts with -)");
  cmd->add_option("--file", f->file, "read the text from a file (- for standard input)");
  cmd->add_flag("--json", f->json, "print one JSON array");
  cmd->add_flag("--no-special-tokens", f->no_special, "do not add BOS/EOS or template tokens");
  cmd->callback([f] {
    std::string text = f->text;
    if (!f->file.empty()) {
      if (!f->text.empty()) throw Error("give TEXT or --file, not both");
      text = read_file_option(f->file);
    }
    const auto tok = AutoTokenizer::from_pretrained(f->model);
    const auto ids = tok.encode(text, !f->no_special);
    if (f->json) {
      std::printf("%s\n", nlohmann::json(ids).dump().c_str());
      return;
    }
    std::string line;
    for (size_t i = 0; i < ids.size(); ++i) line += (i ? "," : "") + std::to_string(ids[i]);
    std::printf("%s\n", line.c_str());
  });
}

void add_detokenize(CLI::App& app) {
  struct Flags {
    std::string model, ids;
    bool json = false, skip_special = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("detokenize", "print the text of token ids");
  cmd->add_option("MODEL", f->model, "model or tokenizer folder, or Hub id")->required();
  cmd->add_option("--ids", f->ids, "comma-separated ids")->required();
  cmd->add_flag("--skip-special-tokens", f->skip_special, "drop special tokens");
  cmd->add_flag("--json", f->json, "print one JSON string");
  cmd->callback([f] {
    const auto rows = parse_id_rows(f->ids, "--ids");
    if (rows.size() != 1) throw Error("--ids: one row of ids, without ';'");
    const auto tok = AutoTokenizer::from_pretrained(f->model);
    DecodeOptions o;
    o.skip_special_tokens = f->skip_special;
    const std::string text = tok.decode(rows[0], o);
    if (f->json) {
      std::printf("%s\n", nlohmann::json(text).dump().c_str());
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::printf("\n");
    }
  });
}

void add_render_chat(CLI::App& app) {
  struct Flags {
    std::string model, messages, tools, thinking, continue_final;
    bool generation_prompt = false, json = false;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("render-chat", "render the chat template for a conversation");
  cmd->add_option("MODEL", f->model, "model or tokenizer folder, or Hub id")->required();
  cmd->add_option("--messages", f->messages, "JSON file with the list of messages")->required();
  cmd->add_option("--tools", f->tools, "JSON file with the list of tool schemas");
  cmd->add_flag("--add-generation-prompt", f->generation_prompt, "end with the assistant prompt");
  cmd->add_option("--enable-thinking", f->thinking, "true or false (Qwen3 templates)");
  cmd->add_flag("--continue-final-message{content}", f->continue_final,
                "end inside the last message, for generation to continue it (transformers' "
                "continue_final_message; =FIELD continues another field, e.g. reasoning_content)");
  cmd->add_flag("--json", f->json, "print one JSON string");
  cmd->callback([f] {
    auto load = [](const std::string& path) {
      try {
        return nlohmann::ordered_json::parse(read_text_file(path));
      } catch (const nlohmann::ordered_json::exception& e) {
        throw Error(path + ": not valid JSON: " + e.what());
      }
    };
    ChatOptions o;
    o.add_generation_prompt = f->generation_prompt;
    o.continue_final_message = f->continue_final;
    if (!f->tools.empty()) o.tools = load(f->tools);
    if (f->thinking == "true") {
      o.enable_thinking = true;
    } else if (f->thinking == "false") {
      o.enable_thinking = false;
    } else if (!f->thinking.empty()) {
      throw Error("--enable-thinking: expected true or false, got '" + f->thinking + "'");
    }
    const auto messages = load(f->messages);
    const auto tok = AutoTokenizer::from_pretrained(f->model);
    const std::string text = tok.apply_chat_template(messages, o);
    if (f->json) {
      std::printf("%s\n", nlohmann::json(text).dump().c_str());
    } else {
      std::fwrite(text.data(), 1, text.size(), stdout);
    }
  });
}

}  // namespace anvil::cli
