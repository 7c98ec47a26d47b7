// Prefill-sized products on the CPU (16 and more activation rows), where CPUs with AMX run tile
// kernels (kernels_amx.cc) and the others the vector tiles: every shape against the
// double-precision reference, with row counts and widths that leave partial tiles on each side.
// On a CPU without AMX these still check the vector prefill tiles; the AMX run says whether it
// ran (an AMX machine's plain run uses it; ANVIL_CPU_ISA=amx asks for it).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "anvil/tensor.h"
#include "backends/cpu/aligned_vector.h"
#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/kernels_amx.h"
#include "backends/cpu/kernels_bf16dot.h"
#include "backends/cpu/repack.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "quant_blocks.h"
#include "tensor_compare.h"

namespace anvil {
namespace {

using Shape3 = std::tuple<int64_t, int64_t, int64_t>;  // activation rows, k, weight rows

// Rows in tiles of 16 and 32 with tails of 1-15 (23: the 512-bit int8 tiles' 8, 8 and 7, or 6,
// 6, 6 and 5), the few rows of a speculative check step (5, 7, 11, 13: tiles of 3 to 7 rows, as
// even as tile_rows_at makes them), widths of one to many 32-value chunks (515 x 1,056: a long
// prompt, 65 tiles: 60 of 8 rows, 5 of 7), weight rows leaving a partial 16-row panel
// or an odd 8-row group, and enough of them (552, 260) that a thread's share holds four-group
// spans (two weight vectors a tile), the last one partial (260: 28 of its 32 rows).
const std::vector<Shape3> kShapes = {{16, 32, 16},   {17, 64, 24},   {33, 96, 37},  {48, 256, 40},
                                     {64, 1024, 72}, {20, 512, 8},   {23, 160, 48}, {515, 1056, 24},
                                     {23, 160, 552}, {48, 256, 260}, {5, 64, 24},   {7, 96, 40},
                                     {11, 160, 552}, {13, 256, 37}};

TEST(CpuPrefillTiles, QuantizedWeightsMatchTheReference) {
  std::mt19937 rng(77);
  // The K types need whole 256-value super-blocks (513 x 1,280: a long prompt, 5 of them).
  const std::vector<Shape3> k_shapes = {{16, 256, 16},   {33, 512, 37}, {20, 768, 24},
                                        {513, 1280, 16}, {7, 256, 40},  {11, 512, 552}};
  for (DType w : {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1, DType::q4_k,
                  DType::q5_k, DType::q6_k}) {
    for (auto [n, k, o] : dtype_block_elems(w) == 256 ? k_shapes : kShapes) {
      const Tensor x = test::random_tensor({n, k}, rng);
      const Tensor weight = test::random_blocks(w, o, k, rng);
      const Tensor bias = test::random_tensor({o}, rng);
      Tensor out = Tensor::empty({n, o}, DType::f32);
      ops::linear(x, weight, bias, out);
      // The CPU's int8 kernels multiply the activations rounded per 32-value block, AMX's
      // tiles both inputs rounded to bf16.
      const test::ProductInputs used = test::cpu_product_inputs(x, weight);
      Tensor want = Tensor::empty({n, o}, DType::f32);
      ops::reference::linear({used.x, used.weight, bias, want});
      EXPECT_LE(test::max_abs_diff(out, want), 1e-5f * test::product_magnitude(weight, x) + 1e-5f)
          << dtype_name(w) << " " << n << "x" << k << "x" << o << " at "
          << cpu::isa_name(cpu::isa());
    }
  }
}

TEST(CpuPrefillTiles, Bf16WeightsMatchTheReference) {
  std::mt19937 rng(78);
  // Beside the shapes above, widths that are not whole 32-value chunks (odd ones: the last pair
  // half empty) and weight rows that fill the 64-row panels of the pair-product tiles exactly,
  // leave one partial, or fill none.
  std::vector<Shape3> shapes = kShapes;
  shapes.insert(shapes.end(),
                {{19, 50, 33}, {70, 37, 130}, {16, 96, 64}, {30, 33, 128}, {9, 40, 20}});
  for (auto [n, k, o] : shapes) {
    const Tensor x = test::random_tensor({n, k}, rng);
    const Tensor weight = test::random_tensor({o, k}, rng).to(DType::bf16);
    const Tensor bias = test::random_tensor({o}, rng);
    Tensor out = Tensor::empty({n, o}, DType::f32);
    ops::linear(x, weight, bias, out);
    // AMX's tiles and the pair products round the activations to bf16 first, the widened
    // weights do not (cpu_isa.h: bf16_rows_rounded).
    const Tensor x_used = cpu::bf16_rows_rounded(n) ? x.to(DType::bf16).to(DType::f32) : x;
    Tensor want = Tensor::empty({n, o}, DType::f32);
    ops::reference::linear({x_used, weight, bias, want});
    EXPECT_LE(test::max_abs_diff(out, want), 1e-5f * test::product_magnitude(weight, x) + 1e-5f)
        << n << "x" << k << "x" << o << " at " << cpu::isa_name(cpu::isa());
  }
}

// The choice between the pair products and the widened weights for bf16 rows: the one
// ANVIL_CPU_BF16_PRODUCTS names, else the one the timing favours (a measure near the threshold,
// where two timings may disagree, is not held to it).
TEST(CpuPrefillTiles, Bf16ProductsFollowTheSettingOrTheTiming) {
  if (cpu::isa() < cpu::Isa::avx512bf16) {
    GTEST_SKIP() << "no AVX512_BF16 at " << cpu::isa_name(cpu::isa()) << ": bf16 prefill widens";
  }
  const char* env = std::getenv("ANVIL_CPU_BF16_PRODUCTS");
  if (env && std::strcmp(env, "pairs") == 0) {
    EXPECT_TRUE(cpu::bf16_pair_products());
    return;
  }
  if (env && std::strcmp(env, "widened") == 0) {
    EXPECT_FALSE(cpu::bf16_pair_products());
    return;
  }
  const double speedup = cpu::bf16_pair_speedup();
  ASSERT_TRUE(speedup > 0.05 && speedup < 20) << "pair products " << speedup << "x float32 FMA";
  if (std::fabs(speedup - 0.8) > 0.15) {
    EXPECT_EQ(cpu::bf16_pair_products(), speedup >= 0.8) << speedup;
  }
}

// Float32 and IEEE half weights (float32 activations at every ISA level): from 16 rows the
// AVX-512 kernels pack them in 64-row panels, from 8 the AVX2 ones in 16-row panels, so the same
// shapes as bf16's, odd widths included.
TEST(CpuPrefillTiles, F32AndF16WeightsMatchTheReference) {
  std::mt19937 rng(79);
  std::vector<Shape3> shapes = kShapes;
  shapes.insert(shapes.end(),
                {{19, 50, 33}, {70, 37, 130}, {16, 96, 64}, {30, 33, 128}, {9, 40, 20}});
  for (DType w : {DType::f32, DType::f16}) {
    for (auto [n, k, o] : shapes) {
      const Tensor x = test::random_tensor({n, k}, rng);
      const Tensor weight = test::random_tensor({o, k}, rng).to(w);
      const Tensor bias = test::random_tensor({o}, rng);
      Tensor out = Tensor::empty({n, o}, DType::f32);
      ops::linear(x, weight, bias, out);
      Tensor want = Tensor::empty({n, o}, DType::f32);
      ops::reference::linear({x, weight, bias, want});
      EXPECT_LE(test::max_abs_diff(out, want), 1e-5f * test::product_magnitude(weight, x) + 1e-5f)
          << dtype_name(w) << " " << n << "x" << k << "x" << o << " at "
          << cpu::isa_name(cpu::isa());
    }
  }
}

// The AMX kernel's operands, checked on any CPU with AVX-512 BF16 (only the tile multiply needs
// AMX): the activation and weight tiles, multiplied as the tile unit does (A row j's value pair
// i times element c of B row i), must give the reference product of the bf16-rounded inputs, and
// hold zeros (of either sign) past the rows and widths that exist.
TEST(CpuPrefillTiles, AmxTilesHoldTheRoundedOperands) {
  if (cpu::isa() < cpu::Isa::avx512bf16) {
    GTEST_SKIP() << "packing the AMX tiles needs AVX-512 BF16; this CPU runs at "
                 << cpu::isa_name(cpu::isa());
  }
  std::mt19937 rng(80);
  const std::vector<Shape3> shapes = {{16, 32, 16},  {17, 64, 24},  {33, 96, 37}, {20, 50, 8},
                                      {40, 256, 33}, {16, 512, 16}, {23, 768, 40}};
  const auto bf16 = [](uint16_t h) {
    const uint32_t bits = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return static_cast<double>(f);
  };
  for (DType wt : {DType::bf16, DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0, DType::q5_1,
                   DType::q4_k, DType::q5_k, DType::q6_k}) {
    for (auto [n, k, o] : shapes) {
      cpu::AmxWeights w;
      w.rows = o;
      w.k = k;
      const bool quantized = wt != DType::bf16;
      if (quantized && (k % 32 != 0 || !cpu::repacked_kind(wt, k, &w.kind))) continue;
      if (!quantized && k % 2 != 0) continue;
      const Tensor x = test::random_tensor({n, k}, rng);
      const Tensor weight = quantized ? test::random_blocks(wt, o, k, rng)
                                      : test::random_tensor({o, k}, rng).to(DType::bf16);
      std::shared_ptr<const cpu::PackedWeights> packed;
      if (quantized) {
        packed = cpu::packed_weights(weight);
        w.packed = packed->data;
        w.block_bytes = packed->block_bytes;
      } else {
        w.bf16 = static_cast<const uint16_t*>(weight.raw());
      }
      const int64_t chunks = (k + 31) / 32, blocks = cpu::amx_row_blocks(n);
      ASSERT_EQ(blocks % 2, 0);
      std::vector<uint16_t> a(cpu::amx_row_tiles_words(n, k), 0xffff);
      cpu::pack_rows_amx(x.data<float>(), n, k, 0, blocks, a.data());
      std::vector<uint16_t> b(cpu::amx_panel_words(k));
      std::vector<float> got(static_cast<size_t>(n * o));
      int bad_padding = 0;
      for (int64_t p = 0; p < (o + 15) / 16; ++p) {
        std::fill(b.begin(), b.end(), 0xffff);
        cpu::weight_tiles_amx(w, p, b.data());
        for (int64_t s = 0; s < chunks; ++s) {
          for (int i = 0; i < 16; ++i) {
            for (int c = 0; c < 16; ++c) {
              for (int h = 0; h < 2; ++h) {
                const bool outside = 16 * p + c >= o || 32 * s + 2 * i + h >= k;
                // -0 counts as zero: a missing row's scale 0 times Q8_0's -128.
                bad_padding += outside && (b[s * 512 + i * 32 + 2 * c + h] & 0x7fff) != 0;
              }
            }
          }
        }
        for (int64_t j = 0; j < n; ++j) {
          const uint16_t* arow = a.data() + (j / 16 * chunks) * 512 + (j % 16) * 32;
          for (int c = 0; c < 16 && 16 * p + c < o; ++c) {
            double sum = 0;
            for (int64_t s = 0; s < chunks; ++s) {
              for (int e = 0; e < 32; ++e) {
                sum += bf16(arow[s * 512 + e]) * bf16(b[s * 512 + (e / 2) * 32 + 2 * c + e % 2]);
              }
            }
            got[static_cast<size_t>(j * o + 16 * p + c)] = static_cast<float>(sum);
          }
        }
      }
      for (int64_t jb = 0; jb < blocks; ++jb) {
        for (int64_t s = 0; s < chunks; ++s) {
          for (int j = 0; j < 16; ++j) {
            for (int e = 0; e < 32; ++e) {
              const bool outside = 16 * jb + j >= n || 32 * s + e >= k;
              bad_padding += outside && a[(jb * chunks + s) * 512 + j * 32 + e] != 0;
            }
          }
        }
      }
      const std::string what = std::string(dtype_name(wt)) + " " + std::to_string(n) + "x" +
                               std::to_string(k) + "x" + std::to_string(o);
      EXPECT_EQ(bad_padding, 0) << what;
      const Tensor x_used = x.to(DType::bf16).to(DType::f32);
      const Tensor w_used = weight.to(DType::f32).to(DType::bf16);
      Tensor want = Tensor::empty({n, o}, DType::f32);
      ops::reference::linear({x_used, w_used, Tensor(), want});
      EXPECT_LE(test::max_abs_diff(Tensor::from_f32(got, {n, o}), want),
                1e-6f * test::product_magnitude(weight, x) + 1e-6f)
          << what;
    }
  }
}

// Where AMX is asked for (ANVIL_CPU_ISA=amx) the tests above must have run on it; a CPU or a
// kernel without it says so instead of passing silently on the vector kernels.
TEST(CpuPrefillTiles, AmxRunsWhereAskedFor) {
  const char* asked = std::getenv("ANVIL_CPU_ISA");
  if (!asked || std::string(asked) != "amx") {
    GTEST_SKIP() << "ANVIL_CPU_ISA=amx not set; this CPU runs at " << cpu::isa_name(cpu::isa());
  }
  if (cpu::isa() < cpu::Isa::amx) {
    const std::string why = cpu::amx_refusal();
    GTEST_SKIP() << "no AMX here: " << (why.empty() ? "the CPU lacks amx-tile/int8/bf16" : why);
  }
  EXPECT_EQ(cpu::isa(), cpu::Isa::amx);
}

// The prefill scratch's storage starts on a cache line whatever its size and however it grew:
// tile rows straddling two lines ran the AMX tile loads at half their rate (docs/perf.md).
// Sizes past malloc's mmap threshold included, where a plain vector lands 16 bytes past a page.
TEST(CpuPrefillTiles, ScratchStartsOnACacheLine) {
  for (size_t n : {size_t{1}, size_t{17}, size_t{4096}, size_t{300000}, size_t{1} << 22}) {
    cpu::AlignedVector<uint16_t> v(n);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u) << n << " values";
    v.resize(3 * n + 5);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % 64, 0u) << 3 * n + 5 << " values, grown";
  }
}

}  // namespace
}  // namespace anvil
