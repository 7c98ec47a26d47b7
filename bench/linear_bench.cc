// Micro-benchmark of the CPU matrix product (ops::linear) on random weights: weight bytes read
// per second (the decode floor is the streaming-read bandwidth) and multiply-adds per second.
// Usage: anvil_linear_bench DTYPE O K N [REPEATS] [COPIES]   (DTYPE: f32 bf16 q8_0 q4_0 q4_1 ...)
// COPIES > 1 cycles through that many copies of the matrix, so each product reads its weights
// from DRAM as a decode step does (a model's matrices do not fit in cache) instead of from cache.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "anvil/dtype.h"
#include "anvil/tensor.h"
#include "ops/ops.h"
#include "random_weights.h"

using namespace anvil;

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s DTYPE O K N [REPEATS]\n", argv[0]);
    return 2;
  }
  const std::string name = argv[1];
  const int64_t o = std::atoll(argv[2]), k = std::atoll(argv[3]), n = std::atoll(argv[4]);
  const int reps = argc > 5 ? std::atoi(argv[5]) : 20;
  const int copies = argc > 6 ? std::max(1, std::atoi(argv[6])) : 1;
  const std::optional<DType> dt = dtype_from_name(name);
  if (!dt || (!is_floating(*dt) && !is_quantized(*dt))) {
    std::fprintf(stderr, "unknown weight dtype %s\n", name.c_str());
    return 2;
  }
  std::mt19937 rng(1);
  const Tensor w = bench::random_weights(*dt, o, k, rng);
  std::vector<Tensor> ws{w};
  for (int c = 1; c < copies; ++c) {
    Tensor copy = Tensor::empty({o, k}, *dt);
    std::memcpy(copy.raw(), w.raw(), w.nbytes());
    ws.push_back(copy);
  }
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> xv(static_cast<size_t>(n * k));
  for (float& f : xv) f = dist(rng);
  const Tensor x = Tensor::from_f32(xv, {n, k});
  Tensor out = Tensor::empty({n, o}, DType::f32);
  for (const Tensor& wc : ws) ops::linear(x, wc, Tensor(), out);  // warm (and repack)
  // Wall time, and the calling thread's CPU time: with ANVIL_NUM_THREADS=1 the latter does not
  // count time the thread was descheduled (the machine may be shared).
  const auto cpu_now = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  };
  std::vector<double> times, cpu_times;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_now();
    ops::linear(x, ws[static_cast<size_t>(r % copies)], Tensor(), out);
    cpu_times.push_back(cpu_now() - c0);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  std::sort(cpu_times.begin(), cpu_times.end());
  const double t = times[times.size() / 2], tc = cpu_times[cpu_times.size() / 2];
  std::printf(
      "%s O=%lld K=%lld N=%lld: %.3f ms, weights %.2f GB/s, %.1f GMAC/s; caller CPU time %.3f "
      "ms, cpu %.2f GB/s\n",
      name.c_str(), static_cast<long long>(o), static_cast<long long>(k), static_cast<long long>(n),
      t * 1e3, static_cast<double>(w.nbytes()) / t / 1e9, static_cast<double>(o * k * n) / t / 1e9,
      tc * 1e3, static_cast<double>(w.nbytes()) / tc / 1e9);
  return 0;
}
