// token_losses_avx2.h on 256-bit vectors.
#include "backends/cpu/token_losses_avx2.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/exp_avx2.h"

namespace anvil::cpu {

namespace {

// The lanes' (4) doubles summed.
double horizontal_sum(__m256d v) {
  const __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
}

}  // namespace

double logsumexp_avx2(const float* x, int64_t n) {
  const int64_t whole = n / 8 * 8;
  __m256 top = _mm256_set1_ps(-INFINITY), unordered = _mm256_setzero_ps();
  for (int64_t i = 0; i < whole; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    top = _mm256_max_ps(top, v);
    unordered = _mm256_or_ps(unordered, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  bool nan = _mm256_movemask_ps(unordered) != 0;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, top);
  float max = *std::max_element(lanes, lanes + 8);
  for (int64_t i = whole; i < n; ++i) {
    max = std::max(max, x[i]);
    nan = nan || std::isnan(x[i]);
  }
  if (nan) return NAN;              // as torch's: a NaN anywhere makes the row's NaN
  if (std::isinf(max)) return max;  // all -inf, or an inf that decides the sum alone
  // Each vector's eight terms (each at most 1) summed in float, the vectors' sums in double:
  // a float running sum of a 150k-token vocabulary would drift by ~1e-4 relative.
  const __m256 base = _mm256_set1_ps(max);
  __m256d sum_lo = _mm256_setzero_pd(), sum_hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < whole; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), base));
    sum_lo = _mm256_add_pd(sum_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    sum_hi = _mm256_add_pd(sum_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  double sum = horizontal_sum(_mm256_add_pd(sum_lo, sum_hi));
  for (int64_t i = whole; i < n; ++i) sum += std::exp(static_cast<double>(x[i]) - max);
  return static_cast<double>(max) + std::log(sum);
}

double kl_sum_avx2(const float* p, const float* q, double lse_p, double lse_q, int64_t n) {
  const int64_t whole = n / 8 * 8;
  // log P - log Q = p - q - (lse_p - lse_q): one offset for the row.
  const auto fp = static_cast<float>(lse_p);
  const __m256 base = _mm256_set1_ps(fp);
  const __m256 shift = _mm256_set1_ps(static_cast<float>(lse_p - lse_q));
  __m256d sum_lo = _mm256_setzero_pd(), sum_hi = _mm256_setzero_pd();
  for (int64_t i = 0; i < whole; i += 8) {
    const __m256 pv = _mm256_loadu_ps(p + i), qv = _mm256_loadu_ps(q + i);
    const __m256 prob = exp256(_mm256_sub_ps(pv, base));
    const __m256 log_ratio = _mm256_sub_ps(_mm256_sub_ps(pv, qv), shift);
    // Where P is 0 (a -inf logit) the term is 0, whatever Q (0 * inf would be NaN).
    const __m256 live = _mm256_cmp_ps(prob, _mm256_setzero_ps(), _CMP_GT_OQ);
    const __m256 t = _mm256_and_ps(live, _mm256_mul_ps(prob, log_ratio));
    sum_lo = _mm256_add_pd(sum_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(t)));
    sum_hi = _mm256_add_pd(sum_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(t, 1)));
  }
  double sum = horizontal_sum(_mm256_add_pd(sum_lo, sum_hi));
  for (int64_t i = whole; i < n; ++i) {
    const double lp = static_cast<double>(p[i]) - lse_p;
    const double prob = std::exp(lp);
    if (prob > 0.0) sum += prob * (lp - (static_cast<double>(q[i]) - lse_q));
  }
  return sum;
}

}  // namespace anvil::cpu
