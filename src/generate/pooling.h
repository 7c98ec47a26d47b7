// Sentence embeddings from a model's last hidden states, pooled as sentence-transformers'
// Pooling module pools them, and the pooling a model folder's sentence-transformers files
// (modules.json, the Pooling module's config.json) ask for.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace anvil {

enum class Pooling { last, mean, cls, max, mean_sqrt_len, weighted_mean };

/// "last" (sentence-transformers' lasttoken), "mean", "cls", "max", "mean_sqrt_len" and
/// "weighted_mean"; throws anvil::Error naming the others.
Pooling pooling_named(const std::string& name);

/// One text's embedding from its hidden states [tokens, hidden] (row-major, float32): the last
/// token's row, the first's (cls), or the mean / element-wise max / sum over sqrt(tokens) /
/// mean weighted by position (1, 2, ..., as sentence-transformers' weightedmean) over the rows;
/// then, with `normalize`, divided by its L2 norm (left as is when that is 0).
std::vector<float> pool(std::span<const float> states, int64_t tokens, int64_t hidden,
                        Pooling pooling, bool normalize);

/// What a model folder's sentence-transformers files say: the Pooling module's mode and whether
/// a Normalize module follows. Empty fields where the folder has no such files.
struct SentenceTransformersConfig {
  std::optional<Pooling> pooling;
  std::optional<bool> normalize;
};
/// Reads `folder`/modules.json and the Pooling module's config.json; nothing when the folder
/// has no modules.json (a .gguf file, a bare checkpoint). Throws anvil::Error naming the file
/// for unreadable JSON or a pooling mode anvil does not have.
SentenceTransformersConfig read_sentence_transformers(const std::string& folder);

}  // namespace anvil
