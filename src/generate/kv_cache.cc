// KV cache allocation.
#include "generate/kv_cache.h"

namespace anvil {

KvCache KvCache::allocate(const ModelConfig& c, int64_t batch, int64_t capacity, DType dtype,
                          Device device) {
  KvCache kv;
  kv.batch = batch;
  kv.capacity = capacity;
  const Shape shape{batch, c.num_key_value_heads, capacity, c.head_dim};
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    kv.keys.push_back(Tensor::empty(shape, dtype, device));
    kv.values.push_back(Tensor::empty(shape, dtype, device));
  }
  return kv;
}

int64_t KvCache::bytes_per_position() const {
  if (capacity <= 0) return 0;
  int64_t bytes = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    bytes += static_cast<int64_t>(keys[i].nbytes() + values[i].nbytes());
  }
  return bytes / capacity;
}

}  // namespace anvil
