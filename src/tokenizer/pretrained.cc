// tokenizer_config.json on top of tokenizer.json, as transformers' fast tokenizers read it:
// special tokens (strings or {"content": ...} objects), add_bos_token/add_eos_token (which, when
// given, replace the post-processor's template as LlamaTokenizerFast.update_post_processor
// does), padding side, chat templates (a string, a list of named ones, or chat_template.jinja).
#include <algorithm>
#include <filesystem>

#include "anvil/auto_tokenizer.h"
#include "anvil/chat_template.h"
#include "anvil/error.h"
#include "anvil/gguf.h"
#include "chat/jinja_strings.h"
#include "formats/mapped_file.h"
#include "formats/model_path.h"
#include "models/gguf_model.h"
#include "tokenizer/gguf_vocab.h"

namespace anvil {
namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

namespace {

std::string token_string(const Json& cfg, const char* key, const std::string& source) {
  if (!cfg.contains(key) || cfg[key].is_null()) return "";
  const Json& v = cfg[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  throw Error(source + ": field '" + key + "' must be a string or {\"content\": ...}, got " +
              v.dump());
}

// transformers' clean_up_tokenization.
std::string clean_up_spaces(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    const std::string f(from), t(to);
    for (size_t pos = s.find(f); pos != std::string::npos; pos = s.find(f, pos + t.size())) {
      s.replace(pos, f.size(), t);
    }
  }
  return s;
}

}  // namespace

PreTrainedTokenizer PreTrainedTokenizer::from_pretrained(const std::string& model) {
  const std::string dir = resolve_model_path(model);
  if (is_gguf_path(dir) && !fs::is_directory(dir)) return from_gguf(dir);
  if (!fs::is_directory(dir)) {
    throw Error(dir + ": expected a folder holding tokenizer.json, or a .gguf file");
  }
  const fs::path tj = fs::path(dir) / "tokenizer.json";
  if (!fs::exists(tj)) {
    // A folder of GGUF weights (config.json beside model.gguf): the file's own vocabulary.
    if (const std::string gguf = folder_gguf(dir); !gguf.empty()) return from_gguf(gguf);
    throw Error(dir + ": no tokenizer.json (anvil reads the tokenizers library's format)");
  }
  PreTrainedTokenizer t;
  t.tokenizer_ = Tokenizer::from_file(tj.string());

  const fs::path cj = fs::path(dir) / "tokenizer_config.json";
  Json cfg = Json::object();
  if (fs::exists(cj)) {
    try {
      cfg = Json::parse(read_text_file(cj.string()));
    } catch (const Json::exception& e) {
      throw Error(cj.string() + ": not valid JSON: " + e.what());
    }
    if (!cfg.is_object()) throw Error(cj.string() + ": not a JSON object");
  }
  const std::string source = cj.string();
  try {
    t.bos_token_ = token_string(cfg, "bos_token", source);
    t.eos_token_ = token_string(cfg, "eos_token", source);
    t.pad_token_ = token_string(cfg, "pad_token", source);
    t.unk_token_ = token_string(cfg, "unk_token", source);
    if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean()) {
      t.add_bos_token_ = cfg["add_bos_token"].get<bool>();
    }
    if (cfg.contains("add_eos_token") && cfg["add_eos_token"].is_boolean()) {
      t.add_eos_token_ = cfg["add_eos_token"].get<bool>();
    }
    t.clean_up_spaces_ = cfg.value("clean_up_tokenization_spaces", false);
    if (cfg.contains("model_max_length") && cfg["model_max_length"].is_number()) {
      t.model_max_length_ = static_cast<int64_t>(cfg["model_max_length"].get<double>());
    }
    t.padding_side_ = cfg.value("padding_side", std::string("right"));
    if (t.padding_side_ != "left" && t.padding_side_ != "right") {
      throw Error(source + ": field 'padding_side' must be left or right");
    }
    // Chat templates: chat_template.jinja beside the config wins, as in transformers 5.
    const fs::path jinja = fs::path(dir) / "chat_template.jinja";
    auto compile = [&](const std::string& text, const std::string& where) {
      try {
        return std::make_shared<const ChatTemplate>(text);
      } catch (const Error& e) {
        throw Error(where + ": " + e.what());
      }
    };
    if (fs::exists(jinja)) {
      t.templates_["default"] = compile(read_text_file(jinja.string()), jinja.string());
    } else if (cfg.contains("chat_template") && !cfg["chat_template"].is_null()) {
      const Json& ct = cfg["chat_template"];
      if (ct.is_string()) {
        t.templates_["default"] = compile(ct.get<std::string>(), source);
      } else if (ct.is_array()) {
        for (const auto& entry : ct) {
          if (!entry.contains("name") || !entry.contains("template")) {
            throw Error(source + ": chat_template list entries need 'name' and 'template'");
          }
          t.templates_[entry["name"].get<std::string>()] =
              compile(entry["template"].get<std::string>(), source);
        }
      } else {
        throw Error(source + ": field 'chat_template' must be a string or a list");
      }
    }
  } catch (const Json::exception& e) {
    throw Error(source + ": " + e.what());
  }
  for (const std::string* tok : {&t.bos_token_, &t.eos_token_, &t.pad_token_}) {
    if (!tok->empty() && !t.tokenizer_.token_to_id(*tok)) {
      throw Error(source + ": special token '" + *tok + "' is not in tokenizer.json's vocabulary");
    }
  }
  return t;
}

PreTrainedTokenizer PreTrainedTokenizer::from_gguf(const std::string& path) {
  const GgufFile file = GgufFile::open(path);
  const GgufVocab vocab = read_gguf_vocab(file);
  PreTrainedTokenizer t;
  t.tokenizer_ = Tokenizer::from_json_text(tokenizer_json_from_gguf(vocab, path).dump(), path);
  auto name = [&](const std::optional<int64_t>& id) {
    return id ? vocab.tokens[static_cast<size_t>(*id)] : std::string();
  };
  t.bos_token_ = name(vocab.bos);
  t.eos_token_ = name(vocab.eos);
  t.pad_token_ = name(vocab.pad);
  t.unk_token_ = name(vocab.unk);
  if (const auto ctx =
          file.find_u64(std::string(file.get_string("general.architecture")) + ".context_length")) {
    t.model_max_length_ = static_cast<int64_t>(*ctx);
  }
  if (const auto tmpl = file.find_string("tokenizer.chat_template")) {
    try {
      t.templates_["default"] = std::make_shared<const ChatTemplate>(std::string(*tmpl));
    } catch (const Error& e) {
      throw Error(path + ": tokenizer.chat_template: " + e.what());
    }
  }
  return t;
}

std::optional<int64_t> PreTrainedTokenizer::id_of(const std::string& token) const {
  if (token.empty()) return std::nullopt;
  return tokenizer_.token_to_id(token);
}

std::vector<int64_t> PreTrainedTokenizer::encode(const std::string& text,
                                                 bool add_special_tokens) const {
  if (!add_special_tokens) return tokenizer_.encode(text, false);
  if (!add_bos_token_ && !add_eos_token_) return tokenizer_.encode(text, true);
  // The config's flags decide, not tokenizer.json's template.
  std::vector<int64_t> ids = tokenizer_.encode(text, false);
  if (add_bos_token_.value_or(false)) {
    const auto bos = bos_token_id();
    if (!bos) throw Error("add_bos_token is true but the tokenizer has no bos_token");
    ids.insert(ids.begin(), *bos);
  }
  if (add_eos_token_.value_or(false)) {
    const auto eos = eos_token_id();
    if (!eos) throw Error("add_eos_token is true but the tokenizer has no eos_token");
    ids.push_back(*eos);
  }
  return ids;
}

Batch PreTrainedTokenizer::encode_batch(const std::vector<std::string>& texts,
                                        bool add_special_tokens,
                                        const std::string& padding_side) const {
  const std::string side = padding_side.empty() ? padding_side_ : padding_side;
  if (side != "left" && side != "right") throw Error("padding_side must be left or right");
  std::vector<std::vector<int64_t>> rows;
  size_t longest = 0;
  for (const auto& t : texts) {
    rows.push_back(encode(t, add_special_tokens));
    longest = std::max(longest, rows.back().size());
  }
  Batch b;
  bool needs_pad = false;
  for (const auto& r : rows) needs_pad = needs_pad || r.size() != longest;
  const auto pad = pad_token_id();
  if (needs_pad && !pad) {
    throw Error("padding needs a pad token, and tokenizer_config.json defines none");
  }
  for (auto& r : rows) {
    const size_t n = longest - r.size();
    std::vector<int64_t> mask(r.size(), 1);
    if (side == "left") {
      r.insert(r.begin(), n, pad.value_or(0));
      mask.insert(mask.begin(), n, 0);
    } else {
      r.insert(r.end(), n, pad.value_or(0));
      mask.insert(mask.end(), n, 0);
    }
    b.input_ids.push_back(std::move(r));
    b.attention_mask.push_back(std::move(mask));
  }
  return b;
}

std::string PreTrainedTokenizer::decode(const std::vector<int64_t>& ids,
                                        const DecodeOptions& options) const {
  std::string text = tokenizer_.decode(ids, options.skip_special_tokens);
  if (options.clean_up_tokenization_spaces.value_or(clean_up_spaces_)) {
    text = clean_up_spaces(std::move(text));
  }
  return text;
}

namespace {

// The messages as transformers 5 hands them to the template: keys whose value is None dropped
// (tokenization_utils_base._normalize_chat_messages: APIs send content=None or tool_calls=None,
// which templates would print or trip on), and a message's reasoning under each name templates
// read (chat_template_utils._alias_reasoning_fields: the first of reasoning_content, thinking,
// reasoning becomes `thinking`, first unless the message has one, and `reasoning_content`).
Json chat_messages_as_transformers_passes_them(const Json& messages) {
  if (!messages.is_array()) throw Error("messages must be a JSON array");
  Json out = Json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!m.is_object()) {
      throw Error("chat message " + std::to_string(i) + " is not a JSON object: " + m.dump());
    }
    const Json* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
      auto it = m.find(key);
      if (it != m.end() && !it->is_null()) {
        reasoning = &*it;
        break;
      }
    }
    Json message = Json::object();
    if (reasoning) message["thinking"] = *reasoning;
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it->is_null()) message[it.key()] = it.value();
    }
    if (reasoning) message["reasoning_content"] = *reasoning;
    out.push_back(std::move(message));
  }
  return out;
}

// transformers' continue_final_message (chat_template_utils.render_jinja_template): a tag is
// appended to the last message's text before rendering and the rendering is cut where it
// appears, so the prompt ends inside that message.
constexpr const char* kContinueTag = "CONTINUE_FINAL_MESSAGE_TAG ";

std::string py_strip(const std::string& s) {
  return jinja::pystr::strip(s, nullptr, true, true);
}

// Marks the text to continue in `messages` (prepared) and returns it as it was.
std::string mark_final_message(Json& messages, const std::string& field,
                               const std::string& template_source) {
  if (messages.empty()) throw Error("continue_final_message is set but the conversation is empty");
  Json& last = messages.back();
  const auto final_it = last.find(field);
  if (final_it == last.end() || final_it->is_null()) {
    throw Error("continue_final_message is set but the final message has no \"" + field +
                "\" to continue");
  }
  const Json final_message = *final_it;
  std::vector<std::string> fields{field};
  const std::vector<std::string> reasoning{"reasoning_content", "thinking", "reasoning"};
  if (std::find(reasoning.begin(), reasoning.end(), field) != reasoning.end()) {
    // Reasoning is under several names (chat_messages_as_transformers_passes_them): every copy
    // is tagged, and whichever the template reads counts.
    fields.clear();
    for (const auto& f : reasoning) {
      if (last.contains(f) && last[f] == final_message) fields.push_back(f);
    }
  }
  const bool named = std::any_of(fields.begin(), fields.end(), [&](const std::string& f) {
    return template_source.find(f) != std::string::npos;
  });
  if (!named) {
    throw Error("continue_final_message is set to \"" + field +
                "\" but this is not an accepted field in the chat template");
  }
  if (final_message.is_array()) {  // content blocks: the last one with text
    for (auto block = last[field].rbegin(); block != last[field].rend(); ++block) {
      if (block->is_object() && block->contains("text") && (*block)["text"].is_string()) {
        const std::string text = (*block)["text"].get<std::string>();
        (*block)["text"] = text + kContinueTag;
        return text;
      }
    }
    throw Error(
        "continue_final_message is set but there is no text to continue in the final message");
  }
  if (!final_message.is_string()) {
    throw Error("continue_final_message: the final message's \"" + field + "\" is " +
                final_message.dump() + ", not text");
  }
  for (const auto& f : fields) last[f] = last[f].get<std::string>() + kContinueTag;
  return final_message.get<std::string>();
}

// The rendering cut where the tagged text ends (trailing spaces the template trimmed stay
// trimmed).
std::string cut_at_final_message(std::string rendered, const std::string& final_text) {
  const std::string tag = py_strip(kContinueTag);
  if (rendered.find(py_strip(final_text)) == std::string::npos ||
      rendered.find(tag) == std::string::npos) {
    throw Error(
        "continue_final_message is set but the final message does not appear in the chat after "
        "applying the chat template (the template deletes part of it)");
  }
  const size_t at = rendered.rfind(tag);
  if (rendered.compare(at, std::string(kContinueTag).size(), kContinueTag) == 0) {
    rendered.resize(at);
    return rendered;
  }
  return jinja::pystr::strip(rendered.substr(0, at), nullptr, false, true);
}

}  // namespace

std::string PreTrainedTokenizer::apply_chat_template(const Json& messages,
                                                     const ChatOptions& options) const {
  if (templates_.empty()) {
    throw Error("this tokenizer has no chat template (tokenizer_config.json has no chat_template)");
  }
  const ChatTemplate* tmpl = nullptr;
  if (!options.template_name.empty()) {
    auto it = templates_.find(options.template_name);
    if (it == templates_.end())
      throw Error("no chat template named '" + options.template_name + "'");
    tmpl = it->second.get();
  } else if (auto it = templates_.find("default"); it != templates_.end()) {
    tmpl = it->second.get();
  } else if (templates_.size() == 1) {
    tmpl = templates_.begin()->second.get();
  } else {
    throw Error("the tokenizer has several chat templates and none is named 'default'; pick one");
  }
  const std::string& cont = options.continue_final_message;
  if (!cont.empty() && options.add_generation_prompt) {
    throw Error(
        "continue_final_message and add_generation_prompt are not compatible: the one continues "
        "the last message, the other opens a new assistant message");
  }
  Json prepared = chat_messages_as_transformers_passes_them(messages);
  const std::string final_text =
      cont.empty() ? std::string() : mark_final_message(prepared, cont, tmpl->source());
  Json context = Json::object();
  context["messages"] = std::move(prepared);
  // transformers passes tools and documents whether given or not (None when not): a template's
  // `tools is defined` is true and `tools is none` tells.
  context["tools"] = options.tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = options.add_generation_prompt;
  if (options.enable_thinking) context["enable_thinking"] = *options.enable_thinking;
  for (const auto& [key, value] : std::map<std::string, std::string>{{"bos_token", bos_token_},
                                                                     {"eos_token", eos_token_},
                                                                     {"pad_token", pad_token_},
                                                                     {"unk_token", unk_token_}}) {
    if (!value.empty()) context[key] = value;
  }
  if (options.extra.is_object()) {
    for (auto it = options.extra.begin(); it != options.extra.end(); ++it) {
      context[it.key()] = it.value();
    }
  }
  std::string rendered = tmpl->render(context);
  return cont.empty() ? rendered : cut_at_final_message(std::move(rendered), final_text);
}

}  // namespace anvil
