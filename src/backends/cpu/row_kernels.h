// One-row building blocks shared by the CPU's ops and its fused decode_layers team kernel, so
// that the fused kernel computes exactly what the ops do: RMSNorm of a row, RoPE's angles and
// rotation of head vectors, a KV-cache row written as float32 or rounded to half, and decode
// attention's split of the keys into ranges and the merge of those ranges.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "anvil/dtype.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/half_rows_f16c.h"
#include "backends/cpu/weight_load.h"

namespace anvil::cpu {

/// 1 / sqrt(mean(x^2) + eps) over d values, the factor rms_norm_row scales by.
inline float rms_inverse(const float* x, int64_t d, float eps) {
  float acc[8] = {};
  int64_t j = 0;
  for (; j + 8 <= d; j += 8) {
    for (int u = 0; u < 8; ++u) acc[u] += x[j + u] * x[j + u];
  }
  float ss = 0;
  for (float v : acc) ss += v;
  for (; j < d; ++j) ss += x[j] * x[j];
  return 1.0f / std::sqrt(ss / static_cast<float>(d) + eps);
}

/// out = w * (x * inv) over d values: an RMSNorm whose factor is already known.
template <class W>
inline void scaled_row(const float* x, const W* w, float inv, int64_t d, float* out) {
  for (int64_t j = 0; j < d; ++j) out[j] = widen(w[j]) * (x[j] * inv);
}

/// out = weight * (x / sqrt(mean(x^2) + eps)) over d values (float32 math as transformers'
/// LlamaRMSNorm); out may be x.
template <class W>
inline void rms_norm_row(const float* x, const W* w, int64_t d, float eps, float* out) {
  scaled_row(x, w, rms_inverse(x, d, eps), d, out);
}

/// cos/sin (times the attention scaling) of one token's RoPE angles, half values each. A zero
/// frequency marks a pair that does not rotate (partial rotary): cos 1, sin 0, unscaled.
inline void rope_angles(int32_t pos, const float* inv_freq, int64_t half, float scaling, float* c,
                        float* s) {
  for (int64_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq[i];
    const float scale = inv_freq[i] == 0.0f ? 1.0f : scaling;
    c[i] = std::cos(angle) * scale;
    s[i] = std::sin(angle) * scale;
  }
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

/// One head vector made ready for attention into out (d values): its RMSNorm when the model
/// has one (Qwen3's q/k norms), then RoPE, exactly as the in-place sequence rope_store runs.
template <class W>
inline void rotated_head(const float* x, const W* norm, int64_t d, float eps, const float* c,
                         const float* s, float* out) {
  if (norm) {
    rms_norm_row(x, norm, d, eps, out);
  } else {
    std::memcpy(out, x, static_cast<size_t>(d) * sizeof(float));
  }
  rotate_heads(out, 1, d, c, s);
}

/// One head of a projection normalised as a whole (OLMo 2's q/k norms over every head at once):
/// out = weight * (x * inv), inv being rms_inverse over the whole projection, then RoPE. x and
/// weight point at the head's d values.
template <class W>
inline void rotated_slice(const float* x, const W* norm, float inv, int64_t d, const float* c,
                          const float* s, float* out) {
  scaled_row(x, norm, inv, d, out);
  rotate_heads(out, 1, d, c, s);
}

/// One cache row from float32 values: copied, or rounded to half (nearest even).
inline void write_cache_row(float* dst, const float* src, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}
inline void write_cache_row(uint16_t* dst, const float* src, int64_t n) {
  // F16C where the CPU has it: f32_to_f16 is a call per value, and a decode step's two rows a
  // KV head took Zen 4 ~1.5 us that way (a 2,048-token prefill's cache writes ~2% of it).
  if (isa() >= Isa::avx2) return f32_to_f16_row_f16c(src, n, dst);
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

/// Decode attention's split of `total` keys into ranges per KV head (flash-decoding): enough
/// (head, range) tasks for every thread twice over, none shorter than 64 keys.
struct KeySplit {
  int64_t parts, per_part;
};
inline KeySplit decode_key_split(int64_t total, int64_t heads_total, int threads) {
  const int64_t want = (2 * threads + heads_total - 1) / heads_total;
  const int64_t parts = std::clamp<int64_t>(total / 64, 1, want);
  return {parts, (total + parts - 1) / parts};
}

/// Merges query row r's key ranges into out (dim values): out = sum_p e^(m_p - m) acc_p /
/// sum_p e^(m_p - m) l_p, m = max_p m_p; zeros when no range saw a key. Range p's state starts
/// at states + p * state: acc [rows][dim], then m [rows], then l [rows].
inline void merge_key_ranges(const float* states, int64_t parts, int64_t state, int64_t rows,
                             int64_t dim, int64_t r, float* out) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t p = 0; p < parts; ++p) m = std::max(m, states[p * state + rows * dim + r]);
  std::fill(out, out + dim, 0.0f);
  if (m == -std::numeric_limits<float>::infinity()) return;  // sees no key: zeros
  float l = 0;
  for (int64_t p = 0; p < parts; ++p) {
    const float* st = states + p * state;
    const float w = std::exp(st[rows * dim + r] - m);  // 0 for a range with no visible key
    if (w == 0.0f) continue;
    l += w * st[rows * dim + rows + r];
    for (int64_t d = 0; d < dim; ++d) out[d] += w * st[r * dim + d];
  }
  const float inv = 1.0f / l;
  for (int64_t d = 0; d < dim; ++d) out[d] *= inv;
}

}  // namespace anvil::cpu
