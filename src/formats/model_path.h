// Resolving what the user typed as MODEL: a model folder, a file, or a Hub id ("Qwen/Qwen3-0.6B")
// found in the Hugging Face cache. anvil never downloads from the Hub.
#pragma once

#include <string>

namespace anvil {

/// The Hugging Face hub cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else
/// ~/.cache/huggingface/hub.
std::string hf_hub_cache_dir();

/// A local path for `model`: the folder or file itself when it exists, else the snapshot folder
/// of a Hub id in the cache (refs/main when present). Throws saying where it looked.
std::string resolve_model_path(const std::string& model);

}  // namespace anvil
