#include "models/weights_fingerprint.h"

#include <algorithm>

#include "core/sha256.h"

namespace anvil {

namespace {

// Up to the first MiB of a tensor's bytes as stored: enough that other weights differ, little
// enough that a large model's load does not notice.
void append_bytes(std::string& out, const Tensor& t) {
  if (!t.defined()) {
    out += "-;";
    return;
  }
  const Tensor host = t.to(Device::cpu()).contiguous();
  const size_t n = std::min<size_t>(host.nbytes(), size_t{1} << 20);
  out.append(static_cast<const char*>(host.raw()), n);
  out += ';';
}

}  // namespace

std::string weights_fingerprint(const ModelConfig& config, const ModelWeights& weights, DType dtype,
                                DType kv_dtype) {
  std::string s = config.architecture + ';';
  for (int64_t v : {config.num_hidden_layers, config.hidden_size, config.num_attention_heads,
                    config.num_key_value_heads, config.head_dim, config.vocab_size}) {
    s += std::to_string(v) + ';';
  }
  // Keys are cached after RoPE: its kind and base change them as much as the weights do.
  s += std::to_string(static_cast<int>(config.rope.type)) + ';' +
       std::to_string(config.rope.theta) + ';' + std::to_string(config.rope.factor) + ';';
  s += std::string(dtype_name(dtype)) + ";" + std::string(dtype_name(kv_dtype)) + ";";
  if (!weights.layers.empty()) {
    append_bytes(s, weights.layers.front().k_proj);
    append_bytes(s, weights.layers.back().v_proj);
  }
  append_bytes(s, weights.norm);
  return sha256_hex(s);
}

}  // namespace anvil
