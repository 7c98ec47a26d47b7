// generation_config.json: the defaults generate() starts from, with transformers' defaults for
// what a file leaves out.
#include "anvil/config.h"
#include "anvil/error.h"
#include "formats/json_fields.h"
#include "formats/mapped_file.h"

namespace anvil {

namespace jf = json_fields;

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
  g.max_length = jf::opt_int(j, "max_length", source).value_or(20);
  if (g.temperature < 0) jf::fail(source, "temperature", "must not be negative");
  if (g.top_k < 0) jf::fail(source, "top_k", "must not be negative");
  if (g.top_p <= 0 || g.top_p > 1) jf::fail(source, "top_p", "must be in (0, 1]");
  if (g.min_p < 0 || g.min_p > 1) jf::fail(source, "min_p", "must be in [0, 1]");
  if (g.repetition_penalty <= 0) jf::fail(source, "repetition_penalty", "must be positive");
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
