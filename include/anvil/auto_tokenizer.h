/// @file auto_tokenizer.h
/// A model's tokenizer as transformers loads it: `tokenizer.json` plus `tokenizer_config.json`
/// (special tokens, add_bos_token/add_eos_token, padding side, model_max_length, chat templates,
/// clean_up_tokenization_spaces).
///
///     auto tok = anvil::AutoTokenizer::from_pretrained("Qwen/Qwen3-0.6B");
///     auto ids = tok.encode("Intel GPUs are");
///     std::string prompt = tok.apply_chat_template(messages, {.add_generation_prompt = true});
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "anvil/model.h"
#include "anvil/tokenizer.h"

namespace anvil {

class ChatTemplate;

struct DecodeOptions {
  bool skip_special_tokens = false;
  /// Unset: tokenizer_config.json's clean_up_tokenization_spaces.
  std::optional<bool> clean_up_tokenization_spaces;
};

struct ChatOptions {
  bool add_generation_prompt = false;
  /// A JSON array of tool schemas, passed to the template as `tools` when not null.
  nlohmann::ordered_json tools;
  /// Passed as `enable_thinking` when set (Qwen3's switch); unset leaves it undefined.
  std::optional<bool> enable_thinking;
  /// More template variables (transformers' **kwargs of apply_chat_template).
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  /// A named template from a list of templates; empty: "default" or the only one.
  std::string template_name;
  /// transformers' continue_final_message: the prompt stops where the last message's text ends
  /// (no end-of-turn after it), so that generation continues that message. The field to continue:
  /// "content" (transformers' True) or another, such as "reasoning_content"; empty: off.
  /// Refused with add_generation_prompt, as in transformers.
  std::string continue_final_message;
};

class PreTrainedTokenizer {
 public:
  /// Loads a folder (tokenizer.json required, tokenizer_config.json and chat_template.jinja
  /// optional), a .gguf file (its tokenizer.* metadata), or a Hub id from the Hugging Face cache.
  static PreTrainedTokenizer from_pretrained(const std::string& model);

  /// Ids of `text`, with BOS/EOS as the tokenizer's config asks when `add_special_tokens`.
  std::vector<int64_t> encode(const std::string& text, bool add_special_tokens = true) const;
  /// Encodes each text and pads them to one length (on `padding_side`, default the config's).
  Batch encode_batch(const std::vector<std::string>& texts, bool add_special_tokens = true,
                     const std::string& padding_side = "") const;
  std::string decode(const std::vector<int64_t>& ids, const DecodeOptions& options = {}) const;

  /// Renders the chat template (Jinja, as transformers runs it) for `messages`.
  std::string apply_chat_template(const nlohmann::ordered_json& messages,
                                  const ChatOptions& options = {}) const;
  bool has_chat_template() const { return !templates_.empty(); }

  const Tokenizer& tokenizer() const { return tokenizer_; }
  std::optional<int64_t> bos_token_id() const { return id_of(bos_token_); }
  std::optional<int64_t> eos_token_id() const { return id_of(eos_token_); }
  std::optional<int64_t> pad_token_id() const { return id_of(pad_token_); }
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }
  const std::string& pad_token() const { return pad_token_; }
  int64_t model_max_length() const { return model_max_length_; }
  const std::string& padding_side() const { return padding_side_; }

 private:
  static PreTrainedTokenizer from_gguf(const std::string& path);
  std::optional<int64_t> id_of(const std::string& token) const;

  Tokenizer tokenizer_;
  std::string bos_token_, eos_token_, pad_token_, unk_token_;
  std::optional<bool> add_bos_token_, add_eos_token_;
  bool clean_up_spaces_ = false;
  int64_t model_max_length_ = 0;
  std::string padding_side_ = "right";
  std::map<std::string, std::shared_ptr<const ChatTemplate>> templates_;
};

/// transformers' name for the loader.
struct AutoTokenizer {
  static PreTrainedTokenizer from_pretrained(const std::string& model) {
    return PreTrainedTokenizer::from_pretrained(model);
  }
};

}  // namespace anvil
