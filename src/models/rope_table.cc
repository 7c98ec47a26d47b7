// inv_freq = 1 / base^(2i/d) in float32 (torch computes `base ** (arange(0, d, 2).float() / d)`
// in float32), then linear scaling, GGUF's per-frequency factors, or llama3's wavelength-dependent
// scaling (_compute_llama3_parameters).
#include "models/rope_table.h"

#include <cmath>

namespace anvil {

RopeFrequencies rope_frequencies(const RopeConfig& rope, int64_t head_dim) {
  RopeFrequencies f;
  const int64_t half = head_dim / 2;
  f.inv_freq.resize(half);
  const float base = static_cast<float>(rope.theta);
  for (int64_t i = 0; i < half; ++i) {
    const float exponent = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    f.inv_freq[i] = 1.0f / std::pow(base, exponent);
  }
  if (rope.type == RopeType::linear) {
    // transformers' _compute_linear_scaling_rope_parameters: positions / factor.
    for (float& inv : f.inv_freq) inv /= static_cast<float>(rope.factor);
  }
  if (!rope.freq_factors.empty()) {
    for (size_t i = 0; i < f.inv_freq.size(); ++i) f.inv_freq[i] /= rope.freq_factors[i];
  }
  if (rope.type == RopeType::llama3) {
    const float factor = static_cast<float>(rope.factor);
    const float low = static_cast<float>(rope.low_freq_factor);
    const float high = static_cast<float>(rope.high_freq_factor);
    const float old_len = static_cast<float>(rope.original_max_position_embeddings);
    const float low_freq_wavelen = old_len / low;
    const float high_freq_wavelen = old_len / high;
    for (float& inv : f.inv_freq) {
      const float wavelen = static_cast<float>(2.0 * M_PI) / inv;
      float scaled = wavelen > low_freq_wavelen ? inv / factor : inv;
      const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
      if (medium) {
        const float smooth = (old_len / wavelen - low) / (high - low);
        scaled = (1.0f - smooth) * scaled / factor + smooth * scaled;
      }
      inv = scaled;
    }
  }
  return f;
}

}  // namespace anvil
