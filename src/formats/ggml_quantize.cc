// Quantization into ggml's block types (quantize_row, ggml_quants.h). Q8_0, Q4_0, Q4_1, Q5_0 and
// Q5_1 follow ggml's reference quantize_row_*_ref step for step (compiled with
// -ffp-contract=off as the decoders are, so the roundings match). The K types use a plain
// min/max fit per sub-block, not llama.cpp's iterative search for the scale that minimises the
// squared error: same format, slightly larger error (bounded in the tests).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "anvil/dtype.h"
#include "anvil/error.h"
#include "formats/ggml_quants.h"

namespace anvil {
namespace {

void store_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

float stored_f16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_f32(h);
}

// The element of largest magnitude (its sign kept), as ggml's Q4_0 / Q5_0 quantizers take it.
float signed_max(const float* x, int n) {
  float amax = 0, max = 0;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void quantize_q8_0(const float* x, BlockQ8_0& y) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_f16(y.d, d);
  for (int j = 0; j < 32; ++j) y.qs[j] = static_cast<int8_t>(std::roundf(x[j] * id));
}

// Q4_0 / Q5_0: d = max / -(levels / 2), q = x / d + levels / 2 rounded, the far side clamped.
template <int kLevels>
void quantize_symmetric(const float* x, float* d_out, int q[32]) {
  const float d = signed_max(x, 32) / -static_cast<float>(kLevels / 2);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  *d_out = d;
  for (int j = 0; j < 32; ++j) {
    q[j] = std::min(kLevels - 1,
                    static_cast<int>(static_cast<int8_t>(x[j] * id + (kLevels / 2 + 0.5f))));
  }
}

// Q4_1 / Q5_1: d = (max - min) / (levels - 1), q = (x - min) / d rounded.
template <int kLevels>
void quantize_with_min(const float* x, float* d_out, float* m_out, int q[32]) {
  float min = x[0], max = x[0];
  for (int j = 1; j < 32; ++j) {
    min = std::min(min, x[j]);
    max = std::max(max, x[j]);
  }
  const float d = (max - min) / static_cast<float>(kLevels - 1);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  *d_out = d;
  *m_out = min;
  for (int j = 0; j < 32; ++j) {
    const float v = (x[j] - min) * id + 0.5f;
    // ggml clamps Q4_1's quants through int8_t and leaves Q5_1's to a uint8_t cast.
    q[j] = kLevels == 16 ? std::min(15, static_cast<int>(static_cast<int8_t>(v)))
                         : static_cast<int>(static_cast<uint8_t>(v));
  }
}

// Element j in the low nibble of byte j % 16 (j < 16) or the high one, its fifth bit in bit j
// of qh (Q5).
void pack_nibbles(const int q[32], uint8_t qs[16], uint8_t* qh) {
  uint32_t high = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | (q[j + 16] & 0x0f) << 4);
    high |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    high |= static_cast<uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
  }
  if (qh) std::memcpy(qh, &high, 4);
}

int nearest(float v) {
  return static_cast<int>(std::nearbyint(v));
}

// Q4_K / Q5_K: 8 sub-blocks of 32, each x ~ d sc q - dmin m with six-bit sc and m. Each
// sub-block's range [min(0, lo), hi] sets its scale and minimum; d and dmin are the largest of
// those over 63, and the quants are fitted to the stored (rounded) scales.
template <int kLevels>
void quantize_k_minmax(const float* x, uint8_t* d_at, uint8_t* dmin_at, uint8_t scales[12],
                       int q[256]) {
  float scale[8], min[8], max_scale = 0, max_min = 0;
  for (int s = 0; s < 8; ++s) {
    float lo = 0, hi = x[32 * s];
    for (int j = 0; j < 32; ++j) {
      lo = std::min(lo, x[32 * s + j]);
      hi = std::max(hi, x[32 * s + j]);
    }
    scale[s] = (hi - lo) / static_cast<float>(kLevels - 1);
    min[s] = -lo;
    max_scale = std::max(max_scale, scale[s]);
    max_min = std::max(max_min, min[s]);
  }
  store_f16(d_at, max_scale / 63.0f);
  store_f16(dmin_at, max_min / 63.0f);
  const float d = stored_f16(d_at), dmin = stored_f16(dmin_at);
  uint8_t ls[8], lm[8];
  for (int s = 0; s < 8; ++s) {
    ls[s] = static_cast<uint8_t>(std::clamp(d > 0 ? nearest(scale[s] / d) : 0, 0, 63));
    lm[s] = static_cast<uint8_t>(std::clamp(dmin > 0 ? nearest(min[s] / dmin) : 0, 0, 63));
  }
  // The inverse of unpack_k_scale_min.
  std::memset(scales, 0, 12);
  for (int s = 0; s < 8; ++s) {
    if (s < 4) {
      scales[s] = ls[s];
      scales[s + 4] = lm[s];
    } else {
      scales[s + 4] = static_cast<uint8_t>((ls[s] & 0x0f) | (lm[s] & 0x0f) << 4);
      scales[s - 4] |= static_cast<uint8_t>((ls[s] >> 4) << 6);
      scales[s] |= static_cast<uint8_t>((lm[s] >> 4) << 6);
    }
  }
  for (int s = 0; s < 8; ++s) {
    const float step = d * ls[s], offset = dmin * lm[s];
    for (int j = 0; j < 32; ++j) {
      const int v = step > 0 ? nearest((x[32 * s + j] + offset) / step) : 0;
      q[32 * s + j] = std::clamp(v, 0, kLevels - 1);
    }
  }
}

void quantize_q4_k(const float* x, BlockQ4_K& y) {
  int q[256];
  quantize_k_minmax<16>(x, y.d, y.dmin, y.scales, q);
  // Each 32 bytes hold 64 elements: the first 32 in the low nibbles, the next 32 in the high.
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      y.qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | q[64 * c + 32 + l] << 4);
    }
  }
}

void quantize_q5_k(const float* x, BlockQ5_K& y) {
  int q[256];
  quantize_k_minmax<32>(x, y.d, y.dmin, y.scales, q);
  std::memset(y.qh, 0, sizeof y.qh);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int a = q[64 * c + l], b = q[64 * c + 32 + l];
      y.qs[32 * c + l] = static_cast<uint8_t>((a & 0x0f) | (b & 0x0f) << 4);
      y.qh[l] |= static_cast<uint8_t>((a >> 4) << (2 * c) | (b >> 4) << (2 * c + 1));
    }
  }
}

// Q6_K: 16 sub-blocks of 16, x ~ d sc (q - 32) with signed eight-bit sc; each sub-block's
// largest magnitude maps to 31 steps.
void quantize_q6_k(const float* x, BlockQ6_K& y) {
  float scale[16], max_scale = 0;
  for (int s = 0; s < 16; ++s) {
    float amax = 0;
    for (int j = 0; j < 16; ++j) amax = std::max(amax, std::fabs(x[16 * s + j]));
    scale[s] = amax / 31.0f;
    max_scale = std::max(max_scale, scale[s]);
  }
  store_f16(y.d, max_scale / 127.0f);
  const float d = stored_f16(y.d);
  std::memset(y.ql, 0, sizeof y.ql);
  std::memset(y.qh, 0, sizeof y.qh);
  for (int s = 0; s < 16; ++s) {
    const int sc = std::clamp(d > 0 ? nearest(scale[s] / d) : 0, -128, 127);
    y.scales[s] = static_cast<int8_t>(sc);
    const float step = d * static_cast<float>(sc);
    for (int j = 0; j < 16; ++j) {
      const int v = 16 * s + j;
      const int q = std::clamp(step != 0 ? nearest(x[v] / step) : 0, -32, 31) + 32;
      // Value v of its half (v / 128): quarter u takes the low (u < 2) or high nibble of
      // ql[64 half + 32 (u % 2) + l] and bits 2u..2u+1 of qh[32 half + l], l = v % 32.
      const int half = v / 128, u = (v % 128) / 32, l = v % 32;
      y.ql[64 * half + 32 * (u % 2) + l] |= static_cast<uint8_t>((q & 0x0f) << (u < 2 ? 0 : 4));
      y.qh[32 * half + l] |= static_cast<uint8_t>((q >> 4) << (2 * u));
    }
  }
}

}  // namespace

void quantize_row(GgmlType t, const float* x, void* dst, int64_t n) {
  if (t == GgmlType::f32 || t == GgmlType::f16 || t == GgmlType::bf16) {
    // Float types: a conversion (round to nearest even), so float GGUF files can be written too.
    const DType dt = t == GgmlType::f32   ? DType::f32
                     : t == GgmlType::f16 ? DType::f16
                                          : DType::bf16;
    convert_from_f32(x, dst, dt, static_cast<size_t>(n));
    return;
  }
  const int64_t block = ggml_block_size(t);
  const bool known = t == GgmlType::q8_0 || t == GgmlType::q4_0 || t == GgmlType::q4_1 ||
                     t == GgmlType::q5_0 || t == GgmlType::q5_1 || t == GgmlType::q4_k ||
                     t == GgmlType::q5_k || t == GgmlType::q6_k;
  if (!known) {
    throw Error(
        "quantize: " + std::string(ggml_type_name(t)) +
        " is not supported (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K)");
  }
  if (n % block != 0) {
    throw Error("quantize: " + std::to_string(n) + " values is not whole " +
                std::string(ggml_type_name(t)) + " blocks of " + std::to_string(block));
  }
  auto* out = static_cast<uint8_t*>(dst);
  const size_t bytes = ggml_block_bytes(t);
  for (int64_t b = 0; b < n / block; ++b, x += block, out += bytes) {
    int q[32];
    float d, m;
    switch (t) {
      case GgmlType::q8_0:
        quantize_q8_0(x, *reinterpret_cast<BlockQ8_0*>(out));
        break;
      case GgmlType::q4_0: {
        auto& y = *reinterpret_cast<BlockQ4_0*>(out);
        quantize_symmetric<16>(x, &d, q);
        store_f16(y.d, d);
        pack_nibbles(q, y.qs, nullptr);
        break;
      }
      case GgmlType::q4_1: {
        auto& y = *reinterpret_cast<BlockQ4_1*>(out);
        quantize_with_min<16>(x, &d, &m, q);
        store_f16(y.d, d);
        store_f16(y.m, m);
        pack_nibbles(q, y.qs, nullptr);
        break;
      }
      case GgmlType::q5_0: {
        auto& y = *reinterpret_cast<BlockQ5_0*>(out);
        quantize_symmetric<32>(x, &d, q);
        store_f16(y.d, d);
        pack_nibbles(q, y.qs, y.qh);
        break;
      }
      case GgmlType::q5_1: {
        auto& y = *reinterpret_cast<BlockQ5_1*>(out);
        quantize_with_min<32>(x, &d, &m, q);
        store_f16(y.d, d);
        store_f16(y.m, m);
        pack_nibbles(q, y.qs, y.qh);
        break;
      }
      case GgmlType::q4_k:
        quantize_q4_k(x, *reinterpret_cast<BlockQ4_K*>(out));
        break;
      case GgmlType::q5_k:
        quantize_q5_k(x, *reinterpret_cast<BlockQ5_K*>(out));
        break;
      default:
        quantize_q6_k(x, *reinterpret_cast<BlockQ6_K*>(out));
        break;
    }
  }
}

}  // namespace anvil
