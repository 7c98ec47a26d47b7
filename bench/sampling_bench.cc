// Micro-benchmark of the host's sampling over one row of logits (what generate() runs per row
// and step when the scores are edited on the host): apply_warpers, then the draw.
// Usage: anvil_sampling_bench VOCAB SPREAD TEMPERATURE TOP_K TOP_P [MIN_P] [REPEATS]
// The logits are normal with standard deviation SPREAD: a trained model's rows are peaked (a few
// hundred tokens hold most of the mass: SPREAD 3-4), a random-weights model's nearly flat (0.1).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <random>
#include <vector>

#include "generate/logits_processor.h"

using namespace anvil;

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s VOCAB SPREAD TEMPERATURE TOP_K TOP_P [MIN_P] [REPEATS]\n",
                 argv[0]);
    return 2;
  }
  const auto vocab = static_cast<size_t>(std::atoll(argv[1]));
  const float spread = std::strtof(argv[2], nullptr);
  SamplingParams p;
  p.do_sample = true;
  p.temperature = std::strtof(argv[3], nullptr);
  p.top_k = std::atoll(argv[4]);
  p.top_p = std::strtof(argv[5], nullptr);
  p.min_p = argc > 6 ? std::strtof(argv[6], nullptr) : 0.0f;
  const int reps = argc > 7 ? std::atoi(argv[7]) : 50;
  if (vocab == 0 || reps < 1 || p.temperature <= 0 || !(p.top_p > 0 && p.top_p <= 1)) {
    std::fprintf(stderr, "bad arguments\n");
    return 2;
  }
  std::mt19937_64 gen(1);
  std::normal_distribution<float> normal(0.0f, spread);
  std::vector<float> row(vocab);
  for (float& v : row) v = normal(gen);
  std::mt19937_64 rng(7);
  std::vector<float> scores;
  int64_t checksum = 0;
  double best = 1e30, total = 0;
  for (int r = 0; r < reps; ++r) {
    scores = row;
    const auto t0 = std::chrono::steady_clock::now();
    apply_warpers(scores, p);
    checksum += sample(scores, rng);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
  }
  size_t live = 0;
  for (float v : scores) live += v != -std::numeric_limits<float>::infinity();
  std::printf(
      "vocab %zu spread %.2f T %.2f top_k %lld top_p %.3f min_p %.3f: %.3f ms best, %.3f ms mean; "
      "%zu tokens kept (checksum %lld)\n",
      vocab, static_cast<double>(spread), static_cast<double>(p.temperature),
      static_cast<long long>(p.top_k), static_cast<double>(p.top_p), static_cast<double>(p.min_p),
      best * 1e3, total / reps * 1e3, live, static_cast<long long>(checksum));
  return 0;
}
