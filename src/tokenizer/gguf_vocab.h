// A tokenizer described by GGUF metadata (tokenizer.ggml.*), turned into the tokenizer.json
// pipeline Hugging Face ships for the same model, so one implementation serves both formats and
// `anvil convert` can write the tokenizer.json out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace anvil {

struct GgufVocab {
  std::string model;  ///< tokenizer.ggml.model: "gpt2" (byte-level BPE) or "llama" (SentencePiece)
  std::string pre;    ///< tokenizer.ggml.pre: which pre-tokenizer the model was trained with
  std::vector<std::string> tokens;
  std::vector<int32_t> token_types;  ///< 1 normal, 2 unknown, 3 control, 4 user, 5 unused, 6 byte
  std::vector<float> scores;         ///< SentencePiece scores ("llama" model)
  std::vector<std::string> merges;   ///< "a b" ("gpt2" model)
  std::optional<int64_t> bos, eos, unk, pad;
  std::optional<bool> add_bos, add_eos, add_space_prefix;
};

/// The tokenizer.json (as JSON) equivalent to `vocab`; `source` names the file in errors.
/// Unknown pre-tokenizer names are refused by name rather than guessed.
nlohmann::json tokenizer_json_from_gguf(const GgufVocab& vocab, const std::string& source);

/// The pre-tokenizer names anvil maps (tokenizer.ggml.pre).
std::vector<std::string> known_gguf_pre_tokenizers();

}  // namespace anvil
