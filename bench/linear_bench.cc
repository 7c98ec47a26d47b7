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
#include <random>
#include <string>
#include <vector>

#include "anvil/dtype.h"
#include "anvil/tensor.h"
#include "ops/ops.h"

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
  DType dt = DType::f32;
  bool found = false;
  for (DType t : {DType::f32, DType::bf16, DType::f16, DType::q8_0, DType::q4_0, DType::q4_1,
                  DType::q5_0, DType::q5_1, DType::q2_k, DType::q3_k, DType::q4_k, DType::q5_k,
                  DType::q6_k, DType::iq4_nl, DType::iq4_xs}) {
    if (name == dtype_name(t)) dt = t, found = true;
  }
  if (!found) {
    std::fprintf(stderr, "unknown dtype %s\n", name.c_str());
    return 2;
  }
  std::mt19937 rng(1);
  Tensor w = Tensor::empty({o, k}, dt);
  auto* bytes = static_cast<uint8_t*>(w.raw());
  if (is_quantized(dt)) {
    // Random bytes with small f16 scales at the start of each block (Q8_0/Q4_0/Q4_1 layout;
    // other types only get random bytes, fine for timing).
    std::uniform_int_distribution<int> byte(0, 255);
    for (size_t i = 0; i < w.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(byte(rng));
    const size_t block = dtype_nbytes(dt, dtype_block_elems(dt));
    for (size_t b = 0; b < w.nbytes(); b += block) {
      const uint16_t h = f32_to_f16(0.01f);
      std::memcpy(bytes + b, &h, 2);
      if (dt == DType::q4_1) std::memcpy(bytes + b + 2, &h, 2);
    }
  } else {
    std::normal_distribution<float> dist(0.0f, 0.02f);
    std::vector<float> v(static_cast<size_t>(o * k));
    for (float& f : v) f = dist(rng);
    w = Tensor::from_f32(v, {o, k}).to(dt);
  }
  std::vector<Tensor> ws{w};
  for (int c = 1; c < copies; ++c) {
    Tensor copy = Tensor::empty({o, k}, dt);
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
