// Micro-benchmark of the decode attention kernel the CPU's level takes
// (attention_rows_partial_avx512 at avx512 and above, else _avx2; ANVIL_CPU_ISA=avx2 picks the AVX2
// one): the query rows of one KV head over a range of its cached keys, as a decode step's attention
// task runs them. Prints the time per call and the cache bytes read per second. Usage:
// anvil_attention_bench ROWS DIM KEYS [REPEATS] [COPIES] [f16|f32] ROWS: query heads per KV head
// (Qwen2.5-0.5B 7, SmolLM2-135M 3, Qwen3-0.6B 2); COPIES > 1 cycles through that many caches, so
// each call reads its keys from DRAM as a decode step does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "anvil/dtype.h"
#include "backends/cpu/attention_avx2.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels_avx512.h"

using namespace anvil;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ROWS DIM KEYS [REPEATS] [COPIES] [f16|f32]\n", argv[0]);
    return 2;
  }
  const int rows = std::atoi(argv[1]);
  const int64_t dim = std::atoll(argv[2]), keys = std::atoll(argv[3]);
  const int reps = argc > 4 ? std::atoi(argv[4]) : 2000;
  const int copies = argc > 5 ? std::max(1, std::atoi(argv[5])) : 1;
  const bool half = argc <= 6 || std::string(argv[6]) == "f16";
  if (rows < 1 || rows > 64 || !cpu::attention_avx2_takes(dim) || keys < 1) {
    std::fprintf(stderr, "ROWS 1-64, DIM a multiple of 8, KEYS >= 1\n");
    return 2;
  }
  if (cpu::isa() < cpu::Isa::avx2) {
    std::fprintf(stderr, "this CPU has no AVX2\n");
    return 2;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const size_t elems = static_cast<size_t>(keys * dim);
  std::vector<std::vector<float>> kf(static_cast<size_t>(copies)), vf(kf.size());
  std::vector<std::vector<uint16_t>> kh(kf.size()), vh(kf.size());
  for (size_t c = 0; c < kf.size(); ++c) {
    kf[c].resize(elems);
    vf[c].resize(elems);
    for (size_t i = 0; i < elems; ++i) kf[c][i] = dist(rng), vf[c][i] = dist(rng);
    if (half) {
      kh[c].resize(elems);
      vh[c].resize(elems);
      for (size_t i = 0; i < elems; ++i)
        kh[c][i] = f32_to_f16(kf[c][i]), vh[c][i] = f32_to_f16(vf[c][i]);
    }
  }
  std::vector<float> q(static_cast<size_t>(rows * dim));
  for (float& x : q) x = dist(rng);
  std::vector<const float*> qs(static_cast<size_t>(rows));
  std::vector<int64_t> last(static_cast<size_t>(rows), keys - 1);
  for (int r = 0; r < rows; ++r) qs[static_cast<size_t>(r)] = q.data() + r * dim;
  const std::vector<int32_t> mask(static_cast<size_t>(keys), 1);
  std::vector<float> acc(static_cast<size_t>(rows * dim)), m(static_cast<size_t>(rows)),
      l(static_cast<size_t>(rows)), scratch(static_cast<size_t>(cpu::kAttentionRunKeys * rows));
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  // The kernel the decode step takes at this CPU's level (ANVIL_CPU_ISA lowers it).
  const bool wide = cpu::isa() >= cpu::Isa::avx512;
  using HalfKernel = void (*)(int, const float* const*, const int64_t*, int64_t, const uint16_t*,
                              const uint16_t*, const int32_t*, int64_t, int64_t, int64_t, float,
                              float, float*, float*, float*, float*);
  using FloatKernel = void (*)(int, const float* const*, const int64_t*, int64_t, const float*,
                               const float*, const int32_t*, int64_t, int64_t, int64_t, float,
                               float, float*, float*, float*, float*);
  const HalfKernel half_kernel = wide ? HalfKernel{&cpu::attention_rows_partial_avx512}
                                      : HalfKernel{&cpu::attention_rows_partial_avx2};
  const FloatKernel float_kernel = wide ? FloatKernel{&cpu::attention_rows_partial_avx512}
                                        : FloatKernel{&cpu::attention_rows_partial_avx2};
  const auto call = [&](size_t c) {
    if (half) {
      half_kernel(rows, qs.data(), last.data(), 0, kh[c].data(), vh[c].data(), mask.data(), 0, keys,
                  dim, scale, 0.0f, acc.data(), m.data(), l.data(), scratch.data());
    } else {
      float_kernel(rows, qs.data(), last.data(), 0, kf[c].data(), vf[c].data(), mask.data(), 0,
                   keys, dim, scale, 0.0f, acc.data(), m.data(), l.data(), scratch.data());
    }
  };
  for (size_t c = 0; c < kf.size(); ++c) call(c);  // warm
  std::vector<double> times;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    call(static_cast<size_t>(r % copies));
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  const double t = times[times.size() / 2];
  const double bytes = 2.0 * static_cast<double>(elems) * (half ? 2 : 4);
  std::printf(
      "%s kernel, rows %d dim %lld keys %lld %s: %.2f us, cache %.2f GB/s, %.2f GMAC/s (checksum "
      "%.4f)\n",
      wide ? "avx512" : "avx2", rows, static_cast<long long>(dim), static_cast<long long>(keys),
      half ? "f16" : "f32", t * 1e6, bytes / t / 1e9,
      2.0 * rows * static_cast<double>(elems) / t / 1e9, static_cast<double>(acc[0] + l[0]));
  return 0;
}
