// One-row building blocks shared by the CPU's ops and its fused decode_layers team kernel, so
// that the fused kernel computes exactly what the ops do: RMSNorm of a row, RoPE's rotation of
// head vectors, and a KV-cache row written as float32 or rounded to half.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "anvil/dtype.h"
#include "backends/cpu/weight_load.h"

namespace anvil::cpu {

/// out = weight * (x / sqrt(mean(x^2) + eps)) over d values (float32 math as transformers'
/// LlamaRMSNorm); out may be x.
template <class W>
inline void rms_norm_row(const float* x, const W* w, int64_t d, float eps, float* out) {
  float acc[8] = {};
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    for (int u = 0; u < 8; ++u) acc[u] += x[j + u] * x[j + u];
  }
  float ss = 0;
  for (float v : acc) ss += v;
  for (; j < d; ++j) ss += x[j] * x[j];
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
  for (j = 0; j < d; ++j) out[j] = widen(w[j]) * (x[j] * inv);
}

/// Rotates `heads` consecutive head vectors of d values in place (half-split RoPE layout) by
/// one token's cos/sin (d / 2 each).
inline void rotate_heads(float* x, int64_t heads, int64_t d, const float* c, const float* s) {
  const int64_t half = d / 2;
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * d;
    for (int64_t i = 0; i < half; ++i) {
      const float x1 = v[i], x2 = v[i + half];
      v[i] = x1 * c[i] - x2 * s[i];
      v[i + half] = x2 * c[i] + x1 * s[i];
    }
  }
}

/// One cache row from float32 values: copied, or rounded to half (nearest even).
inline void write_cache_row(float* dst, const float* src, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
inline void write_cache_row(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

}  // namespace anvil::cpu
