// The int8 kernels' decode over lanes (Int8Kernels::packed_lanes, side_by_side.h) against the
// same kernels' product over the whole matrix: lanes of uneven lengths with gaps between them
// (as a thread's clipped pieces are) give exactly the whole product's rows in their groups and
// write nothing elsewhere, at every ISA level the CPU has, for every repacked block type; and a
// batch of a few rows over lanes gives each row what one row's decode gives it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/int8_kernels.h"
#include "backends/cpu/repack.h"
#include "backends/cpu/side_by_side.h"
#include "quant_blocks.h"

namespace anvil::cpu {
namespace {

// The lanes' layouts both tests walk: four uneven lanes with gaps, four equal ones back to
// back, two with the last partial group, one, none (38 groups).
const std::vector<std::vector<std::pair<int64_t, int64_t>>>& lane_layouts() {
  static const std::vector<std::vector<std::pair<int64_t, int64_t>>> layouts = {
      {{0, 5}, {7, 13}, {20, 23}, {30, 38}},
      {{3, 9}, {9, 15}, {15, 21}, {21, 27}},
      {{1, 2}, {36, 38}},
      {{10, 30}},
      {}};
  return layouts;
}

// Every block type that is repacked (repack.h).
constexpr DType kRepackedTypes[] = {DType::q8_0, DType::q4_0, DType::q4_1, DType::q5_0,
                                    DType::q5_1, DType::q4_k, DType::q5_k, DType::q6_k};

// Whether output row r lies in one of the layout's lanes of 8-row groups.
bool in_lanes(const std::vector<std::pair<int64_t, int64_t>>& layout, int64_t r) {
  for (auto [b, e] : layout) {
    if (r / kPackRows >= b && r / kPackRows < e) return true;
  }
  return false;
}

TEST(CpuPackedLanes, LanesWithGapsGiveTheWholeProductsRows) {
  if (isa() < Isa::avx2) GTEST_SKIP() << "the int8 kernels need AVX2";
  const Int8Kernels& kern = int8_kernels();
  std::mt19937 rng(7);
  for (DType type : kRepackedTypes) {
    const int64_t k = 512, rows = 8 * 37 + 3;  // 38 groups, the last partial
    QuantKind kind;
    ASSERT_TRUE(repacked_kind(type, k, &kind)) << dtype_name(type);
    const Tensor weight = test::random_blocks(type, rows, k, rng);
    const auto packed = packed_weights(weight);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(k)), bias(static_cast<size_t>(rows));
    for (float& v : x) v = normal(rng);
    for (float& v : bias) v = normal(rng);
    std::vector<int8_t> q(static_cast<size_t>(k));
    std::vector<float> d(static_cast<size_t>(k / 32)), ds(static_cast<size_t>(k / 32));
    std::vector<int32_t> s(static_cast<size_t>(k / 32));
    const Q8Rows xq{q.data(), d.data(), s.data(), ds.data(), k};
    kern.quantize(x.data(), 1, xq);

    std::vector<float> whole(static_cast<size_t>(rows));
    kern.packed(kind, packed->data, packed->block_bytes, rows, 0, packed->groups, xq, 1,
                bias.data(), whole.data(), rows);
    for (const auto& layout : lane_layouts()) {
      Lanes lanes;
      for (auto [b, e] : layout) add_lane(lanes, b, e);
      std::vector<float> out(static_cast<size_t>(rows), std::numeric_limits<float>::quiet_NaN());
      kern.packed_lanes(kind, packed->data, packed->block_bytes, rows, lanes, xq, 1, bias.data(),
                        out.data(), rows);
      for (int64_t r = 0; r < rows; ++r) {
        const bool inside = in_lanes(layout, r);
        const std::string what = std::string(dtype_name(type)) + " row " + std::to_string(r) +
                                 " of lanes " + std::to_string(layout.size());
        if (inside) {
          ASSERT_EQ(out[static_cast<size_t>(r)], whole[static_cast<size_t>(r)]) << what;
        } else {
          ASSERT_TRUE(std::isnan(out[static_cast<size_t>(r)])) << what << " was written";
        }
      }
    }
  }
}

TEST(CpuPackedLanes, FewRowsGiveWhatOneRowsDecodeGives) {
  if (isa() < Isa::avx2) GTEST_SKIP() << "the int8 kernels need AVX2";
  const Int8Kernels& kern = int8_kernels();
  std::mt19937 rng(11);
  for (DType type : kRepackedTypes) {
    const int64_t k = 768, kb = k / 32, rows = 8 * 37 + 5;  // 38 groups, the last partial
    QuantKind kind;
    ASSERT_TRUE(repacked_kind(type, k, &kind)) << dtype_name(type);
    const Tensor weight = test::random_blocks(type, rows, k, rng);
    const auto packed = packed_weights(weight);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> bias(static_cast<size_t>(rows));
    for (float& v : bias) v = normal(rng);
    for (int64_t nx = 2; nx <= kMaxLaneRows; ++nx) {
      std::vector<float> x(static_cast<size_t>(nx * k));
      for (float& v : x) v = normal(rng);
      std::vector<int8_t> q(static_cast<size_t>(nx * k));
      std::vector<float> d(static_cast<size_t>(nx * kb)), ds(d.size());
      std::vector<int32_t> s(d.size());
      Q8Rows xq{q.data(), d.data(), s.data(), ds.data(), k};
      kern.quantize(x.data(), nx, xq);
      // Each row alone, as batch-1 decode computes it.
      std::vector<float> single(static_cast<size_t>(nx * rows));
      for (int64_t j = 0; j < nx; ++j) {
        const Q8Rows row{q.data() + j * k, d.data() + j * kb, s.data() + j * kb, ds.data() + j * kb,
                         k};
        kern.packed(kind, packed->data, packed->block_bytes, rows, 0, packed->groups, row, 1,
                    bias.data(), single.data() + j * rows, rows);
      }
      // Where the level's 512-bit rows take the batch (lane words attached), the integer sums
      // and their scaling are one row's: the same floats, except the types whose minimum's
      // term is added in another order; elsewhere the few-row tiles, within float rounding.
      const bool attached = kern.lanes_take(kind, nx, xq);
      const bool exact = attached && type != DType::q4_1 && type != DType::q5_1 &&
                         type != DType::q4_k && type != DType::q5_k;
      for (const auto& layout : lane_layouts()) {
        Lanes lanes;
        for (auto [b, e] : layout) add_lane(lanes, b, e);
        std::vector<float> out(static_cast<size_t>(nx * rows),
                               std::numeric_limits<float>::quiet_NaN());
        kern.packed_lanes(kind, packed->data, packed->block_bytes, rows, lanes, xq, nx, bias.data(),
                          out.data(), rows);
        for (int64_t j = 0; j < nx; ++j) {
          for (int64_t r = 0; r < rows; ++r) {
            const bool inside = in_lanes(layout, r);
            const size_t at = static_cast<size_t>(j * rows + r);
            const std::string what =
                std::string(dtype_name(type)) + " batch " + std::to_string(nx) + " row " +
                std::to_string(j) + " output " + std::to_string(r) + " of lanes " +
                std::to_string(layout.size()) + (attached ? " (lane words)" : " (tiles)");
            if (!inside) {
              ASSERT_TRUE(std::isnan(out[at])) << what << " was written";
            } else if (exact) {
              ASSERT_EQ(out[at], single[at]) << what;
            } else {
              ASSERT_NEAR(out[at], single[at], 1e-4f * (1.0f + std::fabs(single[at]))) << what;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace anvil::cpu
