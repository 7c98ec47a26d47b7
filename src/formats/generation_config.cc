// generation_config.json: the defaults generate() starts from, with transformers' defaults for
// what a file leaves out.
#include <algorithm>

#include "anvil/config.h"
#include "anvil/error.h"
#include "formats/json_fields.h"
#include "formats/mapped_file.h"

namespace anvil {

namespace jf = json_fields;

namespace {

// Fields of transformers' GenerationConfig that change what generate() returns and that anvil
// does not implement, when set to anything but their default: the first one's message, which
// generate() raises (the model still loads: its logits do not depend on them). Fields that change
// nothing in the returned tokens, such as output_scores, use_cache, renormalize_logits or an
// assistant model for greedy decoding, are not listed.
std::string unimplemented_field(const nlohmann::json& j, const std::string& source) {
  std::string first;
  const auto refuse = [&](const char* key, const std::string& what) {
    if (first.empty()) {
      first = source + ": field '" + key + "' is " + j.at(key).dump() + ": " + what +
              " is not implemented";
    }
  };
  const auto number = [&](const char* key) -> std::optional<double> {
    const nlohmann::json* v = jf::find(j, key);
    return v && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
  };
  if (auto n = number("num_beam_groups"); n && *n > 1) {
    refuse("num_beam_groups", "group beam search");
  }
  if (auto n = number("penalty_alpha"); n && *n > 0) refuse("penalty_alpha", "contrastive search");
  if (auto n = number("guidance_scale"); n && *n != 1) {
    refuse("guidance_scale", "classifier-free guidance");
  }
  if (auto n = number("top_h"); n) refuse("top_h", "top-H sampling");
  if (auto n = number("encoder_repetition_penalty"); n && *n != 1) {
    refuse("encoder_repetition_penalty", "an encoder repetition penalty");
  }
  if (auto n = number("encoder_no_repeat_ngram_size"); n && *n > 0) {
    refuse("encoder_no_repeat_ngram_size", "an encoder n-gram ban");
  }
  for (const char* key : {"force_words_ids", "constraints", "watermarking_config"}) {
    const nlohmann::json* v = jf::find(j, key);
    if (v && !((v->is_array() || v->is_object()) && v->empty())) {
      refuse(key, std::string("'") + key + "'");
    }
  }
  return first;
}

// sequence_bias as generation_config.json holds it: [[ids, ...], bias] pairs (a later pair for
// the same ids replaces an earlier one, as transformers' conversion to a dict does).
std::vector<std::pair<std::vector<int64_t>, float>> parse_sequence_bias(const nlohmann::json& j,
                                                                        const std::string& source) {
  std::vector<std::pair<std::vector<int64_t>, float>> out;
  const nlohmann::json* v = jf::find(j, "sequence_bias");
  if (!v || v->is_null() || (v->is_array() && v->empty())) return out;
  const auto malformed = [&] {
    jf::fail(source, "sequence_bias",
             "must be a list of [[token ids], bias] pairs with non-empty lists of non-negative "
             "ids, got " +
                 v->dump());
  };
  if (!v->is_array()) malformed();
  for (const auto& pair : *v) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_array() || pair[0].empty() ||
        !pair[1].is_number()) {
      malformed();
    }
    std::vector<int64_t> ids;
    for (const auto& id : pair[0]) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0) malformed();
      ids.push_back(id.get<int64_t>());
    }
    const auto same =
        std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == ids; });
    if (same != out.end()) {
      same->second = pair[1].get<float>();
    } else {
      out.emplace_back(std::move(ids), pair[1].get<float>());
    }
  }
  return out;
}

}  // namespace

std::optional<AssistantTokensSchedule> assistant_tokens_schedule_named(const std::string& name) {
  if (name == "constant") return AssistantTokensSchedule::constant;
  if (name == "heuristic") return AssistantTokensSchedule::heuristic;
  if (name == "heuristic_transient") return AssistantTokensSchedule::heuristic_transient;
  return std::nullopt;
}

GenerationConfig GenerationConfig::from_file(const std::string& path) {
  return from_json_text(read_text_file(path), path);
}

GenerationConfig GenerationConfig::from_json_text(const std::string& text,
                                                  const std::string& source) {
  const auto j = jf::parse(text, source);
  if (!j.is_object()) throw Error(source + ": not a JSON object");
  GenerationConfig g;
  g.eos_token_ids = jf::int_or_list(j, "eos_token_id", source);
  g.pad_token_id = jf::opt_int(j, "pad_token_id", source);
  g.bos_token_id = jf::opt_int(j, "bos_token_id", source);
  g.do_sample = jf::opt_bool(j, "do_sample", source).value_or(false);
  g.temperature = static_cast<float>(jf::opt_number(j, "temperature", source).value_or(1.0));
  g.top_k = jf::opt_int(j, "top_k", source).value_or(50);
  g.top_p = static_cast<float>(jf::opt_number(j, "top_p", source).value_or(1.0));
  g.min_p = static_cast<float>(jf::opt_number(j, "min_p", source).value_or(0.0));
  g.repetition_penalty =
      static_cast<float>(jf::opt_number(j, "repetition_penalty", source).value_or(1.0));
  g.max_new_tokens = jf::opt_int(j, "max_new_tokens", source);
  g.max_length = jf::opt_int(j, "max_length", source);
  if (g.max_length.value_or(1) < 1) jf::fail(source, "max_length", "must be positive");
  if (g.temperature < 0) jf::fail(source, "temperature", "must not be negative");
  if (g.top_k < 0) jf::fail(source, "top_k", "must not be negative");
  if (g.top_p <= 0 || g.top_p > 1) jf::fail(source, "top_p", "must be in (0, 1]");
  if (g.min_p < 0 || g.min_p > 1) jf::fail(source, "min_p", "must be in [0, 1]");
  if (g.repetition_penalty <= 0) jf::fail(source, "repetition_penalty", "must be positive");
  g.typical_p = static_cast<float>(jf::opt_number(j, "typical_p", source).value_or(1.0));
  g.epsilon_cutoff = static_cast<float>(jf::opt_number(j, "epsilon_cutoff", source).value_or(0));
  g.eta_cutoff = static_cast<float>(jf::opt_number(j, "eta_cutoff", source).value_or(0));
  if (!(g.typical_p > 0 && g.typical_p <= 1)) jf::fail(source, "typical_p", "must be in (0, 1]");
  if (!(g.epsilon_cutoff >= 0 && g.epsilon_cutoff < 1)) {
    jf::fail(source, "epsilon_cutoff", "must be in [0, 1)");
  }
  if (!(g.eta_cutoff >= 0 && g.eta_cutoff < 1)) jf::fail(source, "eta_cutoff", "must be in [0, 1)");
  g.min_new_tokens = jf::opt_int(j, "min_new_tokens", source);
  g.min_length = jf::opt_int(j, "min_length", source).value_or(0);
  g.no_repeat_ngram_size = jf::opt_int(j, "no_repeat_ngram_size", source).value_or(0);
  if (g.min_new_tokens.value_or(0) < 0) {
    jf::fail(source, "min_new_tokens", "must not be negative");
  }
  if (g.min_length < 0) jf::fail(source, "min_length", "must not be negative");
  if (g.no_repeat_ngram_size < 0) jf::fail(source, "no_repeat_ngram_size", "must not be negative");
  g.suppress_tokens = jf::int_or_list(j, "suppress_tokens", source);
  g.begin_suppress_tokens = jf::int_or_list(j, "begin_suppress_tokens", source);
  g.forced_eos_token_ids = jf::int_or_list(j, "forced_eos_token_id", source);
  if (const nlohmann::json* bad = jf::find(j, "bad_words_ids")) {
    const auto malformed = [&] {
      jf::fail(source, "bad_words_ids", "must be a list of non-empty lists of token ids");
    };
    if (!bad->is_array()) malformed();
    for (const auto& seq : *bad) {
      if (!seq.is_array() || seq.empty()) malformed();
      std::vector<int64_t> ids;
      for (const auto& id : seq) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0) malformed();
        ids.push_back(id.get<int64_t>());
      }
      g.bad_words_ids.push_back(std::move(ids));
    }
  }
  g.num_beams = jf::opt_int(j, "num_beams", source).value_or(1);
  g.num_return_sequences = jf::opt_int(j, "num_return_sequences", source).value_or(1);
  if (g.num_beams < 1) jf::fail(source, "num_beams", "must be at least 1");
  if (g.num_return_sequences < 1) jf::fail(source, "num_return_sequences", "must be at least 1");
  g.length_penalty = static_cast<float>(jf::opt_number(j, "length_penalty", source).value_or(1.0));
  if (const nlohmann::json* e = jf::find(j, "early_stopping"); e && !e->is_null()) {
    if (e->is_boolean()) {
      g.early_stopping =
          e->get<bool>() ? EarlyStopping::when_beams_finished : EarlyStopping::heuristic;
    } else if (e->is_string() && e->get<std::string>() == "never") {
      g.early_stopping = EarlyStopping::never;
    } else {
      jf::fail(source, "early_stopping", "must be true, false or \"never\", got " + e->dump());
    }
  }
  g.sequence_bias = parse_sequence_bias(j, source);
  g.forced_bos_token_id = jf::opt_int(j, "forced_bos_token_id", source);
  if (g.forced_bos_token_id.value_or(0) < 0) {
    jf::fail(source, "forced_bos_token_id", "must not be negative");
  }
  if (const nlohmann::json* e = jf::find(j, "exponential_decay_length_penalty");
      e && !e->is_null()) {
    if (!e->is_array() || e->size() != 2 || !(*e)[0].is_number_integer() ||
        (*e)[0].get<int64_t>() < 0 || !(*e)[1].is_number()) {
      jf::fail(source, "exponential_decay_length_penalty",
               "must be [start, factor]: a non-negative number of new tokens and a number, got " +
                   e->dump());
    }
    g.exponential_decay_length_penalty = {(*e)[0].get<int64_t>(), (*e)[1].get<float>()};
  }
  if (const nlohmann::json* v = jf::find(j, "stop_strings"); v && !v->is_null()) {
    if (v->is_string()) {
      g.stop_strings.push_back(v->get<std::string>());
    } else if (v->is_array()) {
      for (const auto& x : *v) {
        if (!x.is_string() || x.get<std::string>().empty()) {
          jf::fail(source, "stop_strings", "must be a string or a list of non-empty strings");
        }
        g.stop_strings.push_back(x.get<std::string>());
      }
    } else {
      jf::fail(source, "stop_strings", "must be a string or a list of non-empty strings");
    }
  }
  g.renormalize_logits = jf::opt_bool(j, "renormalize_logits", source).value_or(false);
  g.max_time = jf::opt_number(j, "max_time", source);
  if (g.max_time && !(*g.max_time >= 0)) jf::fail(source, "max_time", "must not be negative");
  g.prompt_lookup_num_tokens = jf::opt_int(j, "prompt_lookup_num_tokens", source);
  g.max_matching_ngram_size = jf::opt_int(j, "max_matching_ngram_size", source);
  g.num_assistant_tokens = jf::opt_int(j, "num_assistant_tokens", source);
  if (const nlohmann::json* e = jf::find(j, "num_assistant_tokens_schedule"); e && !e->is_null()) {
    g.num_assistant_tokens_schedule =
        e->is_string() ? assistant_tokens_schedule_named(e->get<std::string>()) : std::nullopt;
    if (!g.num_assistant_tokens_schedule) {
      jf::fail(source, "num_assistant_tokens_schedule",
               "must be \"constant\", \"heuristic\" or \"heuristic_transient\", got " + e->dump());
    }
  }
  if (auto c = jf::opt_number(j, "assistant_confidence_threshold", source)) {
    g.assistant_confidence_threshold = static_cast<float>(*c);
  }
  g.assistant_early_exit = jf::opt_int(j, "assistant_early_exit", source);
  g.assistant_ensemble_weight = jf::opt_number(j, "assistant_ensemble_weight", source);
  g.unimplemented = unimplemented_field(j, source);
  return g;
}

GenerationConfig GenerationConfig::from_model_config(const ModelConfig& c) {
  GenerationConfig g;
  g.eos_token_ids = c.eos_token_ids;
  g.pad_token_id = c.pad_token_id;
  g.bos_token_id = c.bos_token_id;
  return g;
}

}  // namespace anvil
