// What identifies the keys and values a model makes: a digest of its shape, its dtypes and the
// bytes of the weights that make them, so a prompt cache saved by one model is refused by
// another (other weights of the same architecture included) instead of giving garbage.
#pragma once

#include <string>

#include "anvil/config.h"
#include "anvil/dtype.h"
#include "models/weights.h"

namespace anvil {

/// SHA-256 (hex) of the config's shape and RoPE, the weight and KV cache dtypes, and the first MiB
/// of layer 0's k_proj, the last layer's v_proj and the final norm (whatever their dtype and
/// device). Computed from the weights as loaded, before any backend repacks them.
std::string weights_fingerprint(const ModelConfig& config, const ModelWeights& weights, DType dtype,
                                DType kv_dtype);

}  // namespace anvil
