// `anvil init-model`: random-weight models with the exact shapes of public checkpoints, for
// benchmarks that need no download. Weights follow transformers' _init_weights: normal(0,
// initializer_range) for projections and embeddings, ones for norms, zeros for biases.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "anvil/dtype.h"

namespace anvil {

struct EmbeddedConfig {
  const char* name;  ///< "qwen3-0.6b"
  const char* json;  ///< the Hub's config.json
};

/// The configs compiled in from configs/*.json.
const std::vector<EmbeddedConfig>& embedded_configs();

/// Where the weights go: model.safetensors for float dtypes and model.gguf for block types
/// (automatic), or model.gguf for either (float GGUF tensors, as llama.cpp's converter writes
/// with --outtype f32/f16/bf16, so llama.cpp can run the same float weights).
enum class InitFormat { automatic, gguf };

/// Writes config.json, generation_config.json and model.safetensors into `out_dir` (f32, bf16,
/// f16), or model.gguf for a quantized dtype (gguf_quant_plan.h: q8_0 ... q6_k, q4_k_m, q5_k_m)
/// or for any dtype with InitFormat::gguf. `like` names an embedded Hub config ("qwen3-0.6b")
/// or is the path of a config.json. Throws anvil::Error naming the accepted dtypes for any
/// other.
void init_model(const std::string& like, const std::string& out_dir, uint64_t seed,
                const std::string& dtype, InitFormat format = InitFormat::automatic);
/// The same for a dtype by value (f32, bf16, f16, or a block type written in that type alone).
void init_model(const std::string& like, const std::string& out_dir, uint64_t seed, DType dtype);

}  // namespace anvil
