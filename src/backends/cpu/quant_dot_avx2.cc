// Q8_0 / Q4_0 / Q4_1 rows times float32 activations with AVX2: each block's 32 quantized values
// are widened to floats in registers and multiplied into per-block accumulators, then scaled by
// the block's f16 scale (and, for Q4_1, its minimum times the activations' block sum). The weights
// are read once, in their compact form. This file is compiled with -mavx2 -mfma -mf16c and only
// called after cpu_isa() has confirmed those instructions.
#include <immintrin.h>

#include <cstring>

#include "backends/cpu/quant_dot_kernels.h"

namespace anvil::cpu {
namespace {

inline float half(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  __m128 s = _mm_add_ps(lo, hi);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Sum over 32 values of q[i] * x[i], q given as 32 bytes widened by `widen`.
inline __m256 block_dot_u8(__m128i lo16, __m128i hi16, const float* x, bool is_signed) {
  const auto cvt = [&](__m128i v) {
    return _mm256_cvtepi32_ps(is_signed ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v));
  };
  __m256 acc = _mm256_mul_ps(cvt(lo16), _mm256_loadu_ps(x));
  acc = _mm256_fmadd_ps(cvt(_mm_srli_si128(lo16, 8)), _mm256_loadu_ps(x + 8), acc);
  acc = _mm256_fmadd_ps(cvt(hi16), _mm256_loadu_ps(x + 16), acc);
  acc = _mm256_fmadd_ps(cvt(_mm_srli_si128(hi16, 8)), _mm256_loadu_ps(x + 24), acc);
  return acc;
}

}  // namespace

void dot_rows_q8_0_avx2(const uint8_t* rows, size_t row_bytes, int64_t n_rows, const float* x,
                        const float*, int64_t k, float* out) {
  const int64_t blocks = k / 32;
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* b = rows + static_cast<size_t>(r) * row_bytes;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < blocks; ++i, b += 34) {
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 2));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 18));
      acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b)), block_dot_u8(lo, hi, x + i * 32, true), acc);
    }
    out[r] = hsum(acc);
  }
}

namespace {

template <bool kWithMin>
void dot_rows_q4(const uint8_t* rows, size_t row_bytes, int64_t n_rows, const float* x,
                 const float* xsum, int64_t k, float* out) {
  const int64_t blocks = k / 32;
  constexpr int64_t kBlockBytes = kWithMin ? 20 : 18;
  constexpr int64_t kQs = kWithMin ? 4 : 2;
  const __m128i low_mask = _mm_set1_epi8(0x0f);
  const __m128i eight = _mm_set1_epi8(8);
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint8_t* b = rows + static_cast<size_t>(r) * row_bytes;
    __m256 acc = _mm256_setzero_ps();
    float min_part = 0;
    for (int64_t i = 0; i < blocks; ++i, b += kBlockBytes) {
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + kQs));
      __m128i lo = _mm_and_si128(packed, low_mask);                     // elements 0..15
      __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low_mask);  // elements 16..31
      if constexpr (!kWithMin) {
        lo = _mm_sub_epi8(lo, eight);
        hi = _mm_sub_epi8(hi, eight);
      }
      acc = _mm256_fmadd_ps(_mm256_set1_ps(half(b)), block_dot_u8(lo, hi, x + i * 32, !kWithMin),
                            acc);
      if constexpr (kWithMin) min_part += half(b + 2) * xsum[i];
    }
    out[r] = hsum(acc) + min_part;
  }
}

}  // namespace

void dot_rows_q4_0_avx2(const uint8_t* rows, size_t row_bytes, int64_t n_rows, const float* x,
                        const float* xsum, int64_t k, float* out) {
  dot_rows_q4<false>(rows, row_bytes, n_rows, x, xsum, k, out);
}

void dot_rows_q4_1_avx2(const uint8_t* rows, size_t row_bytes, int64_t n_rows, const float* x,
                        const float* xsum, int64_t k, float* out) {
  dot_rows_q4<true>(rows, row_bytes, n_rows, x, xsum, k, out);
}

}  // namespace anvil::cpu

namespace anvil::cpu {

void dot_rows_f32_avx2(const float* rows, int64_t n_rows, const float* x, int64_t k, float* out) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const float* w = rows + r * k;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= k; j += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w + j), _mm256_loadu_ps(x + j), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w + j + 8), _mm256_loadu_ps(x + j + 8), a1);
    }
    float s = hsum(_mm256_add_ps(a0, a1));
    for (; j < k; ++j) s += w[j] * x[j];
    out[r] = s;
  }
}

namespace {

// Rows of 16-bit floats: widen8(p) gives 8 of them as floats, widen1(bits) one.
template <class Widen8, class Widen1>
void dot_rows_16bit(const uint16_t* rows, int64_t n_rows, const float* x, int64_t k, float* out,
                    Widen8 widen8, Widen1 widen1) {
  for (int64_t r = 0; r < n_rows; ++r) {
    const uint16_t* w = rows + r * k;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= k; j += 16) {
      a0 = _mm256_fmadd_ps(widen8(w + j), _mm256_loadu_ps(x + j), a0);
      a1 = _mm256_fmadd_ps(widen8(w + j + 8), _mm256_loadu_ps(x + j + 8), a1);
    }
    float s = hsum(_mm256_add_ps(a0, a1));
    for (; j < k; ++j) s += widen1(w[j]) * x[j];
    out[r] = s;
  }
}

inline __m128i load8(const uint16_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

}  // namespace

void dot_rows_bf16_avx2(const uint16_t* rows, int64_t n_rows, const float* x, int64_t k,
                        float* out) {
  // bf16 -> f32 is a 16-bit left shift of the bits.
  dot_rows_16bit(
      rows, n_rows, x, k, out,
      [](const uint16_t* p) {
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load8(p)), 16));
      },
      [](uint16_t bits) {
        const uint32_t wide = static_cast<uint32_t>(bits) << 16;
        float v;
        std::memcpy(&v, &wide, sizeof v);
        return v;
      });
}

void dot_rows_f16_avx2(const uint16_t* rows, int64_t n_rows, const float* x, int64_t k,
                       float* out) {
  // IEEE half -> float with F16C (exact).
  dot_rows_16bit(
      rows, n_rows, x, k, out, [](const uint16_t* p) { return _mm256_cvtph_ps(load8(p)); },
      [](uint16_t bits) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits))); });
}

}  // namespace anvil::cpu
