// Keys and values of every layer for a batch, preallocated to the longest sequence the caller
// will run, so decoding never allocates.
#pragma once

#include <memory>
#include <vector>

#include "anvil/config.h"
#include "anvil/tensor.h"

namespace anvil {

struct KvCache {
  std::vector<Tensor> keys, values;  ///< per layer: [batch, kv_heads, capacity, head_dim]
  int64_t batch = 0;
  int64_t capacity = 0;
  int64_t length = 0;  ///< positions filled
  /// The decoder's recorded one-token step for this cache (graph replay), made on first use.
  std::shared_ptr<void> step_graph;

  /// Bytes of keys and values one position holds, every layer and row together (what a decode
  /// step reads per position it attends to).
  int64_t bytes_per_position() const;

  static KvCache allocate(const ModelConfig& config, int64_t batch, int64_t capacity, DType dtype,
                          Device device);
};

/// Copies positions [0, length) of every layer's keys and values: row r of `to` from row
/// `source_rows[r]` of `from` (rows with a negative source are left alone), on their device.
/// The caches may differ in rows and capacity, not in layers, heads or dtype; `from` and `to`
/// must not be the same cache (beam search gathers through a scratch cache).
void copy_cache_rows(const KvCache& from, KvCache& to, const std::vector<int64_t>& source_rows,
                     int64_t length);

}  // namespace anvil
