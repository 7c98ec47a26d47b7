// inv_freq = 1 / base^(2i/d) in float32 (torch computes `base ** (arange(0, d, 2).float() / d)`
// in float32), then linear scaling, GGUF's per-frequency factors, llama3's wavelength-dependent
// scaling (_compute_llama3_parameters) or YaRN's ramp (_compute_yarn_parameters), each step in
// the precision transformers computes it in (float32 tensors, Python floats in double).
#include "models/rope_table.h"

#include <algorithm>
#include <cmath>

namespace anvil {
namespace {

// base^(2i/d): the wavelength over 2 pi of frequency i.
float position_frequency(float base, int64_t i, int64_t head_dim) {
  return std::pow(base, static_cast<float>(2 * i) / static_cast<float>(head_dim));
}

// YaRN's mscale (the paper's equation 21).
double yarn_mscale(double scale, double mscale) {
  return scale <= 1 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// The dimension whose wavelength makes `turns` rotations over `context` positions.
double correction_dim(double turns, int64_t dim, double base, double context) {
  return static_cast<double>(dim) * std::log(context / (turns * 2 * M_PI)) / (2 * std::log(base));
}

// Frequency i (of head_dim / 2) interpolated (divided by factor) below the ramp's start,
// extrapolated (kept) above its end, mixed linearly between.
void apply_yarn(const RopeConfig& rope, int64_t head_dim, RopeFrequencies& f) {
  const double context = static_cast<double>(rope.original_max_position_embeddings);
  double low = correction_dim(rope.beta_fast, head_dim, rope.theta, context);
  double high = correction_dim(rope.beta_slow, head_dim, rope.theta, context);
  if (rope.truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(head_dim - 1));
  if (low == high) high += 0.001;  // transformers' guard against a zero-width ramp
  const float start = static_cast<float>(low), width = static_cast<float>(high - low);
  const float factor = static_cast<float>(rope.factor);
  for (size_t i = 0; i < f.inv_freq.size(); ++i) {
    const float pos_freq =
        position_frequency(static_cast<float>(rope.theta), static_cast<int64_t>(i), head_dim);
    const float extrapolated = 1.0f / pos_freq, interpolated = 1.0f / (factor * pos_freq);
    const float ramp = std::clamp((static_cast<float>(i) - start) / width, 0.0f, 1.0f);
    const float keep = 1.0f - ramp;
    f.inv_freq[i] = interpolated * (1.0f - keep) + extrapolated * keep;
  }
  f.attention_scaling = static_cast<float>(yarn_attention_factor(rope));
}

}  // namespace

std::vector<float> frequencies_for_length(const RopeConfig& rope, int64_t head_dim,
                                          int64_t seq_len) {
  const int64_t original = rope.original_max_position_embeddings;
  if (rope.type == RopeType::longrope) {
    RopeConfig set = rope;
    if (seq_len > original) set.short_factor = rope.long_factor;
    return rope_frequencies(set, head_dim).inv_freq;
  }
  if (rope.type != RopeType::dynamic) return rope_frequencies(rope, head_dim).inv_freq;
  RopeConfig grown = rope;
  grown.type = RopeType::standard;
  if (seq_len > original) {
    // base * ((factor * seq_len / max_position_embeddings) - (factor - 1)) ** (dim / (dim - 2)),
    // each operation on a float32 tensor.
    const auto factor = static_cast<float>(rope.factor);
    const float ratio = factor * static_cast<float>(seq_len) / static_cast<float>(original) -
                        static_cast<float>(rope.factor - 1);
    const int64_t dim = rope.rotary_dim > 0 ? rope.rotary_dim : head_dim;
    const auto exponent =
        static_cast<float>(static_cast<double>(dim) / static_cast<double>(dim - 2));
    grown.theta = static_cast<float>(rope.theta) * std::pow(ratio, exponent);
  }
  return rope_frequencies(grown, head_dim).inv_freq;
}

double yarn_attention_factor(const RopeConfig& rope) {
  if (rope.attention_factor != 0) return rope.attention_factor;
  if (rope.mscale != 0 && rope.mscale_all_dim != 0) {
    return yarn_mscale(rope.factor, rope.mscale) / yarn_mscale(rope.factor, rope.mscale_all_dim);
  }
  return yarn_mscale(rope.factor, 1.0);
}

RopeFrequencies rope_frequencies(const RopeConfig& rope, int64_t head_dim) {
  if (rope.rotary_dim > 0 && rope.rotary_dim < head_dim) {
    // Partial rotary: the frequencies of the rotated dimensions, then 0 for the rest (cos 1 and
    // sin 0, exactly the identity) up to head_dim / 2, which the decoder's kernels read; the
    // weights' row order (weights.cc) pairs the dimensions accordingly.
    RopeConfig whole = rope;
    whole.rotary_dim = 0;
    RopeFrequencies f = rope_frequencies(whole, rope.rotary_dim);
    f.inv_freq.resize(static_cast<size_t>(head_dim / 2), 0.0f);
    return f;
  }
  RopeFrequencies f;
  const int64_t half = head_dim / 2;
  f.inv_freq.resize(half);
  const float base = static_cast<float>(rope.theta);
  for (int64_t i = 0; i < half; ++i) f.inv_freq[i] = 1.0f / position_frequency(base, i, head_dim);
  if (rope.type == RopeType::linear) {
    // transformers' _compute_linear_scaling_rope_parameters: positions / factor.
    for (float& inv : f.inv_freq) inv /= static_cast<float>(rope.factor);
  }
  if (!rope.freq_factors.empty()) {
    for (size_t i = 0; i < f.inv_freq.size(); ++i) f.inv_freq[i] /= rope.freq_factors[i];
  }
  if (rope.type == RopeType::yarn) apply_yarn(rope, head_dim, f);
  if (rope.type == RopeType::longrope) {
    // _compute_longrope_parameters: 1 / (factor_i * base^(2i/d)), the short set at load.
    for (int64_t i = 0; i < half; ++i) {
      f.inv_freq[i] = 1.0f / (rope.short_factor[static_cast<size_t>(i)] *
                              position_frequency(base, i, head_dim));
    }
    double attention = rope.attention_factor;
    if (attention == 0) {
      const auto original = static_cast<double>(rope.original_max_position_embeddings);
      attention =
          rope.factor <= 1.0 ? 1.0 : std::sqrt(1.0 + std::log(rope.factor) / std::log(original));
    }
    f.attention_scaling = static_cast<float>(attention);
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
