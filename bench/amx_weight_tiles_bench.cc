// Micro-benchmark of turning weights into AMX B tiles (kernels_amx.h's weight_tiles_amx: bf16
// rows transposed by pairs, repacked block types dequantized to bf16), one thread, every panel
// of a random O x K matrix in turn: values per second. This is the part of an AMX prefill product
// that does not shrink with the prompt (each panel is turned into tiles once per product), and it
// runs on any AVX-512 BF16 CPU, AMX or not.
// Usage: anvil_amx_weight_tiles_bench DTYPE O K [REPEATS]   (DTYPE: bf16 q8_0 q4_0 q4_1 q4_k ...)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "anvil/dtype.h"
#include "anvil/error.h"
#include "anvil/tensor.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels_amx.h"
#include "backends/cpu/repack.h"
#include "random_weights.h"

using namespace anvil;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s DTYPE O K [REPEATS]\n", argv[0]);
    return 2;
  }
  if (cpu::isa() < cpu::Isa::avx512bf16) {
    std::printf("skipped: the B tiles need AVX-512 BF16, this CPU runs at %s\n",
                cpu::isa_name(cpu::isa()));
    return 0;
  }
  const std::string name = argv[1];
  const int64_t o = std::atoll(argv[2]), k = std::atoll(argv[3]);
  const int reps = argc > 4 ? std::max(1, std::atoi(argv[4])) : 20;
  const std::optional<DType> found = dtype_from_name(name);
  if (!found || (*found != DType::bf16 && !is_quantized(*found))) {
    std::fprintf(stderr, "unknown dtype %s (bf16 or a block type)\n", name.c_str());
    return 2;
  }
  const DType dt = *found;
  std::mt19937 rng(1);
  Tensor w;
  try {
    w = bench::random_weights(dt, o, k, rng);
  } catch (const Error& e) {  // e.g. a 256-value block type with k not a multiple of 256
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  cpu::AmxWeights aw;
  aw.rows = o;
  aw.k = k;
  std::shared_ptr<const cpu::PackedWeights> packed;
  if (dt == DType::bf16) {
    aw.bf16 = static_cast<const uint16_t*>(w.raw());
  } else {
    if (!cpu::repacked_kind(dt, k, &aw.kind) || !cpu::amx_takes(aw.kind)) {
      std::fprintf(stderr, "%s with k=%lld does not take the AMX tiles\n", name.c_str(),
                   static_cast<long long>(k));
      return 2;
    }
    packed = cpu::packed_weights(w);
    aw.packed = packed->data;
    aw.block_bytes = packed->block_bytes;
  }
  const int64_t panels = (o + 15) / 16;
  std::vector<uint16_t> tiles(cpu::amx_panel_words(k));
  std::vector<double> times;
  for (int r = 0; r <= reps; ++r) {  // the first pass warms the caches and is not counted
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t p = 0; p < panels; ++p) cpu::weight_tiles_amx(aw, p, tiles.data());
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) times.push_back(t);
  }
  std::sort(times.begin(), times.end());
  const double values = static_cast<double>(o * k);
  std::printf(
      "%s O=%lld K=%lld: best %.3f ms (%.2f G values/s), median %.3f ms (%.2f G values/s)\n",
      name.c_str(), static_cast<long long>(o), static_cast<long long>(k), times.front() * 1e3,
      values / times.front() / 1e9, times[times.size() / 2] * 1e3,
      values / times[times.size() / 2] / 1e9);
  return 0;
}
