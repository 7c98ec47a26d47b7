#include "generate/prompt_cache_file.h"

#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "anvil/error.h"
#include "anvil/safetensors.h"

namespace anvil {

namespace {

constexpr const char* kFormatKey = "anvil.prompt_cache";
constexpr const char* kFormatVersion = "1";
constexpr const char* kFingerprintKey = "anvil.fingerprint";

std::string layer_name(size_t layer, const char* what) {
  return "layers." + std::to_string(layer) + "." + what;
}

// Positions [0, n) of row 0 of a cache layer [batch, heads, capacity, dim], as [heads, n, dim].
void add_positions(SafetensorsWriter& w, const std::string& name, const Tensor& layer, int64_t n) {
  const Tensor host = layer.to(Device::cpu()).contiguous();
  const int64_t heads = layer.size(1), capacity = layer.size(2), dim = layer.size(3);
  const size_t row = dtype_nbytes(layer.dtype(), dim);
  w.add(name, layer.dtype(), {heads, n, dim},
        [host, heads, capacity, n, row](std::span<std::byte> out) {
          const auto* from = static_cast<const std::byte*>(host.raw());
          for (int64_t h = 0; h < heads; ++h) {
            std::memcpy(out.data() + h * n * row, from + h * capacity * row, n * row);
          }
        });
}

}  // namespace

void save_prompt_cache_file(const PromptCache::State& state, const std::string& path) {
  const std::shared_ptr<const Decoder> decoder = state.owner.lock();
  if (state.tokens.empty() || !decoder) {
    throw Error(path + ": the prompt cache holds no tokens to save (run generate() with it first)");
  }
  const auto n = static_cast<int64_t>(state.tokens.size());
  const std::string partial = path + ".partial";
  {
    SafetensorsWriter w(partial);
    w.set_metadata(kFormatKey, kFormatVersion);
    w.set_metadata(kFingerprintKey, decoder->fingerprint());
    w.add("tokens", Tensor::from_i64(state.tokens, {n}));
    for (size_t l = 0; l < state.cache.keys.size(); ++l) {
      add_positions(w, layer_name(l, "keys"), state.cache.keys[l], n);
      add_positions(w, layer_name(l, "values"), state.cache.values[l], n);
    }
    w.finish();
  }
  std::error_code ec;
  std::filesystem::rename(partial, path, ec);
  if (ec) {
    std::filesystem::remove(partial, ec);
    throw Error(path + ": could not write the prompt cache: " + ec.message());
  }
}

void load_prompt_cache_file(PromptCache::State& state,
                            const std::shared_ptr<const Decoder>& decoder,
                            const std::string& path) {
  const SafetensorsFile file = SafetensorsFile::open(path);
  const auto fail = [&](const std::string& problem) { throw Error(path + ": " + problem); };
  const auto& meta = file.metadata();
  const auto format = meta.find(kFormatKey);
  if (format == meta.end())
    fail("not an anvil prompt cache (no anvil.prompt_cache in its metadata)");
  if (format->second != kFormatVersion) {
    fail("prompt cache format version " + format->second + ", this anvil reads version " +
         kFormatVersion);
  }
  const auto fingerprint = meta.find(kFingerprintKey);
  if (fingerprint == meta.end() || fingerprint->second != decoder->fingerprint()) {
    fail(
        "the prompt cache was made by another model (other weights, dtype or KV cache dtype "
        "than this one's)");
  }
  const ModelConfig& config = decoder->config();
  const SafetensorsEntry* tokens_entry = file.find("tokens");
  if (!tokens_entry) fail("no 'tokens' tensor");
  if (tokens_entry->dtype != DType::i64 || tokens_entry->shape.size() != 1) {
    fail("'tokens' must be int64 [n], is " + std::string(dtype_name(tokens_entry->dtype)) + " " +
         shape_str(tokens_entry->shape));
  }
  const int64_t n = tokens_entry->shape[0];
  if (n < 1) fail("'tokens' is empty");
  if (config.max_position_embeddings > 0 && n > config.max_position_embeddings) {
    fail(std::to_string(n) + " tokens, more than the model's max_position_embeddings (" +
         std::to_string(config.max_position_embeddings) + ")");
  }
  std::vector<int64_t> tokens = file.load("tokens").to_i64_vector();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= config.vocab_size) {
      fail("token " + std::to_string(i) + " is " + std::to_string(tokens[i]) +
           ", outside the vocabulary [0, " + std::to_string(config.vocab_size) + ")");
    }
  }
  // Each layer's positions, checked against the shapes this decoder's cache has, then put in a
  // cache of n positions on its device.
  KvCache loaded = decoder->new_cache(1, n);
  const size_t layers = loaded.keys.size();
  if (file.entries().size() != 1 + 2 * layers) {
    fail(std::to_string(file.entries().size()) + " tensors, a prompt cache of this model has " +
         std::to_string(1 + 2 * layers) + " (tokens, and keys and values of " +
         std::to_string(layers) + " layers)");
  }
  KvCache staged;
  staged.batch = 1;
  staged.capacity = n;
  for (size_t l = 0; l < layers; ++l) {
    for (const char* what : {"keys", "values"}) {
      const std::string name = layer_name(l, what);
      const Tensor& like = std::strcmp(what, "keys") == 0 ? loaded.keys[l] : loaded.values[l];
      const Shape want{like.size(1), n, like.size(3)};
      const SafetensorsEntry* e = file.find(name);
      if (!e) fail("no '" + name + "' tensor");
      if (e->dtype != like.dtype() || e->shape != want) {
        fail("'" + name + "' is " + std::string(dtype_name(e->dtype)) + " " + shape_str(e->shape) +
             ", this model's cache needs " + std::string(dtype_name(like.dtype())) + " " +
             shape_str(want));
      }
      Tensor rows = file.load(name).view({1, want[0], n, want[2]}).to(decoder->device());
      (std::strcmp(what, "keys") == 0 ? staged.keys : staged.values).push_back(std::move(rows));
    }
  }
  copy_cache_rows(staged, loaded, {0}, n);
  loaded.length = n;
  PromptCache::State next;
  next.cache = std::move(loaded);
  next.tokens = std::move(tokens);
  next.owner = decoder;
  state = std::move(next);
}

void PromptCache::save(const std::string& path) const {
  save_prompt_cache_file(*state_, path);
}

void PromptCache::load(const std::string& path, const CausalLM& model) {
  load_prompt_cache_file(*state_, model.decoder_, path);
}

}  // namespace anvil
