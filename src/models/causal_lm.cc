// CausalLM: loading a model folder or Hub id into the decoder, and the user-level entry points.
#include <cstdio>
#include <filesystem>
#include <optional>

#include "anvil/error.h"
#include "anvil/model.h"
#include "anvil/safetensors.h"
#include "formats/model_path.h"
#include "generate/generate.h"
#include "generate/prompt_cache.h"
#include "models/decoder.h"
#include "models/gguf_model.h"
#include "models/weights.h"
#include "ops/ops.h"

namespace anvil {
namespace fs = std::filesystem;

namespace {

ops::AttentionImpl parse_attention(const std::string& s) {
  if (s == "sdpa") return ops::AttentionImpl::sdpa;
  if (s == "eager") return ops::AttentionImpl::eager;
  throw Error("attn_implementation '" + s + "' is not supported (use sdpa or eager)");
}

// A device without kernels for some of a checkpoint's quantized types (GPUs read bf16/f16/f32
// weights only) gets the whole model dequantized at load, in bf16 where its kernels read bf16,
// and says so; unset otherwise (quantized blocks stay as stored).
std::optional<DType> float_fallback_for(const WeightSource& src, const ModelConfig& config,
                                        Device device) {
  const Backend& backend = backend_for(device);
  for (const auto& [name, shape] : hf_weight_names(config)) {
    if (!src.contains(name)) continue;
    const DType d = src.dtype(name);
    if (!is_quantized(d)) continue;
    const bool readable = supports(ops::kLinear, device.type, backend.activation_dtype(d), d) &&
                          supports(ops::kEmbedding, device.type, backend.activation_dtype(d), d);
    if (readable) continue;
    const DType to =
        supports(ops::kLinear, device.type, backend.activation_dtype(DType::bf16), DType::bf16)
            ? DType::bf16
            : DType::f32;
    std::fprintf(stderr, "anvil: %s has no kernels for %s weights; dequantizing the model to %s\n",
                 device.str().c_str(), std::string(dtype_name(d)).c_str(),
                 std::string(dtype_name(to)).c_str());
    return to;
  }
  return std::nullopt;
}

}  // namespace

Batch Batch::left_padded(const std::vector<std::vector<int64_t>>& prompts, int64_t pad_id) {
  Batch b;
  size_t len = 0;
  for (const auto& p : prompts) len = std::max(len, p.size());
  for (const auto& p : prompts) {
    std::vector<int64_t> ids(len - p.size(), pad_id), mask(len - p.size(), 0);
    ids.insert(ids.end(), p.begin(), p.end());
    mask.insert(mask.end(), p.size(), 1);
    b.input_ids.push_back(std::move(ids));
    b.attention_mask.push_back(std::move(mask));
  }
  return b;
}

CausalLM CausalLM::from_pretrained(const std::string& model, const ModelOptions& options) {
  const std::string path = resolve_model_path(model);
  if (is_gguf_path(path) && !fs::is_directory(path)) return from_gguf(path, options);
  if (!fs::is_directory(path)) {
    throw Error(path + ": expected a model folder (config.json and *.safetensors) or a .gguf file");
  }
  if (const std::string gguf = folder_gguf(path); !gguf.empty()) return from_gguf(gguf, options);
  const std::string config_path = (fs::path(path) / "config.json").string();
  if (!fs::exists(config_path)) throw Error(path + ": no config.json in this folder");
  ModelConfig config = ModelConfig::from_file(config_path);
  const fs::path gen_path = fs::path(path) / "generation_config.json";
  GenerationConfig gen = fs::exists(gen_path) ? GenerationConfig::from_file(gen_path.string())
                                              : GenerationConfig::from_model_config(config);
  const Device device = Device::parse(options.device_map);
  backend_for(device);  // fail early, with the reason, when the device is absent
  const DType dtype = options.dtype.value_or(config.dtype.value_or(DType::f32));
  if (dtype != DType::f32 && dtype != DType::bf16 && dtype != DType::f16) {
    throw Error("dtype " + std::string(dtype_name(dtype)) +
                " is not a model dtype (f32, bf16, f16)");
  }
  const ops::AttentionImpl attention = parse_attention(options.attn_implementation);
  const SafetensorsSource source(Checkpoint::open(path));
  ModelWeights weights = load_weights(source, config, dtype, device);
  CausalLM lm;
  lm.decoder_ = std::make_shared<Decoder>(std::move(config), std::move(weights), dtype, device,
                                          attention, options.kv_cache_dtype);
  lm.generation_config_ = std::move(gen);
  return lm;
}

CausalLM CausalLM::from_gguf(const std::string& path, const ModelOptions& options) {
  GgufModel gguf = open_gguf_model(path);
  const Device device = Device::parse(options.device_map);
  backend_for(device);
  // Unset dtype keeps each tensor as stored: quantized blocks stay quantized, F32 norms F32.
  if (options.dtype && *options.dtype != DType::f32 && *options.dtype != DType::bf16 &&
      *options.dtype != DType::f16) {
    throw Error("dtype " + std::string(dtype_name(*options.dtype)) + " is not a model dtype");
  }
  const ops::AttentionImpl attention = parse_attention(options.attn_implementation);
  std::optional<DType> load_dtype = options.dtype;
  if (!load_dtype) load_dtype = float_fallback_for(*gguf.weights, gguf.config, device);
  ModelWeights weights = load_weights(*gguf.weights, gguf.config, load_dtype, device);
  const DType dtype = load_dtype.value_or(
      weights.layers.empty() ? weights.embed_tokens.dtype() : weights.layers[0].q_proj.dtype());
  CausalLM lm;
  lm.decoder_ = std::make_shared<Decoder>(std::move(gguf.config), std::move(weights), dtype, device,
                                          attention, options.kv_cache_dtype);
  lm.generation_config_ = std::move(gguf.generation);
  return lm;
}

const ModelConfig& CausalLM::config() const {
  return decoder_->config();
}
const GenerationConfig& CausalLM::generation_config() const {
  return generation_config_;
}
Device CausalLM::device() const {
  return decoder_->device();
}
DType CausalLM::dtype() const {
  return decoder_->dtype();
}
DType CausalLM::kv_cache_dtype() const {
  return decoder_->kv_cache_dtype();
}

namespace {

// One step over the whole batch with a fresh cache: every position's logits or hidden states,
// copied out of the decoder's scratch (which the next step overwrites).
Tensor whole_batch_step(const Decoder& decoder, const Batch& batch, bool hidden_states) {
  const auto mask = checked_mask(batch);
  StepInput step;
  step.hidden_states = hidden_states;
  step.batch = static_cast<int64_t>(batch.input_ids.size());
  step.seq = static_cast<int64_t>(batch.input_ids[0].size());
  step.all_logits = true;
  for (size_t r = 0; r < batch.input_ids.size(); ++r) {
    step.ids.insert(step.ids.end(), batch.input_ids[r].begin(), batch.input_ids[r].end());
    const auto pos = positions_from_mask(mask[r]);
    step.positions.insert(step.positions.end(), pos.begin(), pos.end());
    step.key_mask.insert(step.key_mask.end(), mask[r].begin(), mask[r].end());
  }
  KvCache cache = decoder.new_cache(step.batch, step.seq);
  const Tensor result = decoder.forward(step, cache);
  Tensor out = Tensor::empty(result.shape(), result.dtype());
  out.copy_from(result);
  return out;
}

}  // namespace

Tensor CausalLM::logits(const Batch& batch) const {
  return whole_batch_step(*decoder_, batch, false);
}

Tensor CausalLM::hidden_states(const Batch& batch) const {
  return whole_batch_step(*decoder_, batch, true);
}

std::atomic<int64_t>* CausalLM::carried_assistant_tokens(const GenerateOptions& opts) const {
  // An early exit's assistant is this model: transformers writes the count into its config.
  return opts.assistant_model ? opts.assistant_model->carried_assistant_tokens_.get()
                              : carried_assistant_tokens_.get();
}

std::vector<std::vector<int64_t>> CausalLM::generate(const Batch& batch,
                                                     const GenerateOptions& opts) const {
  if (opts.prompt_cache) claim_prompt_cache(opts.prompt_cache->state(), decoder_);
  return run_generate(*decoder_, generation_config_, batch, opts, carried_assistant_tokens(opts));
}

std::vector<int64_t> CausalLM::generate(const std::vector<int64_t>& input_ids,
                                        const GenerateOptions& opts) const {
  Batch b;
  b.input_ids = {input_ids};
  if (opts.num_return_sequences.value_or(generation_config_.num_return_sequences) > 1) {
    throw Error(
        "num_return_sequences > 1 returns several rows: call generate() with a Batch for them");
  }
  if (opts.prompt_cache) claim_prompt_cache(opts.prompt_cache->state(), decoder_);
  return run_generate(*decoder_, generation_config_, b, opts, carried_assistant_tokens(opts))[0];
}

}  // namespace anvil
