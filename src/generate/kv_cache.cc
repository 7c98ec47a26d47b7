// KV cache allocation, and copies of rows between caches.
#include "generate/kv_cache.h"

#include <utility>

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

void copy_cache_rows(const KvCache& from, KvCache& to, const std::vector<int64_t>& source_rows,
                     int64_t length) {
  if (length == 0) return;
  for (size_t layer = 0; layer < to.keys.size(); ++layer) {
    for (size_t r = 0; r < source_rows.size(); ++r) {
      if (source_rows[r] < 0) continue;
      for (const auto& [src, dst] : {std::pair(&from.keys[layer], &to.keys[layer]),
                                     std::pair(&from.values[layer], &to.values[layer])}) {
        const Tensor s = src->select(0, source_rows[r]);
        const Tensor d = dst->select(0, static_cast<int64_t>(r));
        // Each head's first `length` positions are contiguous in both.
        for (int64_t h = 0; h < s.size(0); ++h) {
          d.select(0, h).narrow(0, 0, length).copy_from(s.select(0, h).narrow(0, 0, length));
        }
      }
    }
  }
}

}  // namespace anvil
