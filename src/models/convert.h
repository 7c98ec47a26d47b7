// `anvil convert`: a GGUF file written out as a Hugging Face model folder (config.json,
// generation_config.json, model.safetensors, tokenizer.json, tokenizer_config.json with the chat
// template) that transformers loads.
#pragma once

#include <string>

#include "anvil/dtype.h"

namespace anvil {

/// Converts `gguf_path` into `out_dir`; weights are dequantized to `dtype` (f32, bf16 or f16).
void convert_gguf_to_hf(const std::string& gguf_path, const std::string& out_dir, DType dtype);

}  // namespace anvil
