// A PromptCache saved to a file and read back (llama.cpp's --prompt-cache): a safetensors file
// with the tokens, every layer's keys and values of those positions, and the fingerprint of the
// decoder that made them (weights_fingerprint.h), which another decoder refuses.
//
//   metadata  anvil.prompt_cache = "1", anvil.fingerprint = the decoder's fingerprint()
//   tokens              int64 [n]
//   layers.L.keys       the KV cache's dtype [kv_heads, n, head_dim]
//   layers.L.values     the same
#pragma once

#include <memory>
#include <string>

#include "generate/prompt_cache.h"

namespace anvil {

/// Writes what `state` holds to `path` (through a temporary file renamed over it, so a reader
/// never sees half a file). Throws if it holds nothing or its decoder is gone.
void save_prompt_cache_file(const PromptCache::State& state, const std::string& path);

/// Replaces `state` with the file's tokens, keys and values, on `decoder`'s device, claimed by
/// it. Throws "PATH: PROBLEM" for a file that is not a prompt cache, was made by another model
/// (or dtype), or whose tensors do not fit this model; `state` is then left as it was.
void load_prompt_cache_file(PromptCache::State& state,
                            const std::shared_ptr<const Decoder>& decoder, const std::string& path);

}  // namespace anvil
