// A model in a GGUF file: its config from `{arch}.*` metadata, its weights under Hugging Face's
// names (llama.cpp's tensor names mapped back, Llama's q/k rows un-permuted), its tokenizer and
// chat template from `tokenizer.*`.
#pragma once

#include <memory>
#include <string>

#include "anvil/config.h"
#include "models/weight_source.h"
#include "tokenizer/gguf_vocab.h"

namespace anvil {

class GgufFile;

struct GgufModel {
  ModelConfig config;
  GenerationConfig generation;
  std::unique_ptr<WeightSource> weights;
  GgufVocab vocab;
  std::string chat_template;  ///< empty when the file has none
  std::shared_ptr<const GgufFile> file;
};

/// Reads `path`; throws anvil::Error naming the file and the key or tensor at fault.
GgufModel open_gguf_model(const std::string& path);
/// The tokenizer part only (for tokenizer-only use of a GGUF).
GgufVocab read_gguf_vocab(const GgufFile& file);

/// True when `path` names a .gguf file.
bool is_gguf_path(const std::string& path);

/// The GGUF file a model folder holds in place of safetensors weights (what `anvil init-model
/// --dtype q4_0` writes: config.json beside model.gguf): its path when the folder has no
/// model.safetensors or model.safetensors.index.json and exactly one .gguf file; "" when it has
/// safetensors weights or no .gguf file; an anvil::Error naming them when it has several.
std::string folder_gguf(const std::string& dir);

}  // namespace anvil
