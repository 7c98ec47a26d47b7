// The GGUF block type of each matrix `anvil init-model` writes for a quantized --dtype: one type
// for every matrix (q8_0 ... q6_k), or llama.cpp's K-quant mixes (q4_k_m, q5_k_m), whose choices
// follow llama-quantize's (llama_tensor_get_type) so benchmarks see the files users run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "anvil/gguf.h"

namespace anvil {

/// What a matrix is, for the mixes' choices.
enum class MatrixRole { embedding, output, attn_v, ffn_down, other };

struct GgufQuantPlan {
  GgmlType base = GgmlType::q8_0;
  bool k_mix = false;  ///< q4_k_m / q5_k_m

  /// The plan for a --dtype name; nullopt for a name that is not a quantized type.
  static std::optional<GgufQuantPlan> parse(const std::string& name);

  /// The names parse() takes, for messages.
  static const char* names();

  /// The type of a [rows, cols] matrix. Mixes: the output matrix (the embedding when it is tied)
  /// and attn_v / ffn_down of the first and last eighth of the layers and every third between
  /// in Q6_K, the rest in the base type. A K type for rows that are not whole 256-value
  /// super-blocks falls back as llama-quantize does: Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0.
  GgmlType type_for(MatrixRole role, int64_t layer, int64_t layers, int64_t cols,
                    bool tied_embeddings) const;
};

}  // namespace anvil
