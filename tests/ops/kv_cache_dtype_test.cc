// A half-precision KV cache beside float32 activations (the CPU's default for quantized
// weights): attention over it must equal attention over a float32 cache holding the same
// rounded values (the kernels widen each element and then do the float32 work), the cache
// writes must round to nearest even, and the ops must refuse what no kernel handles.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "anvil/error.h"
#include "ops/ops.h"
#include "ops/reference.h"
#include "tensor_compare.h"

namespace anvil {
namespace {

using test::max_abs_diff;
using test::random_tensor;

// The float32 tensor of `t`'s values rounded to half.
Tensor rounded_to_half(const Tensor& t) {
  return t.to(DType::f16).to(DType::f32);
}

TEST(HalfKvCache, AttentionEqualsAttentionOverTheRoundedValues) {
  std::mt19937 rng(7);
  struct Case {
    int64_t batch, seq, past, heads, kv_heads, dim;
  };
  // Decode (the key-split path), a few rows and 16-lane prefill rows, odd head sizes (not a
  // multiple of the vector width), and a long context with whole key ranges masked.
  for (const Case c : {Case{2, 1, 40, 4, 2, 64}, Case{1, 3, 9, 2, 1, 24}, Case{2, 37, 5, 14, 2, 72},
                       Case{1, 1, 900, 9, 3, 64}, Case{1, 20, 0, 3, 1, 6}}) {
    const int64_t cap = c.past + c.seq + 2, total = c.past + c.seq;
    const Tensor q = random_tensor({c.batch, c.seq, c.heads, c.dim}, rng);
    const Tensor k = random_tensor({c.batch, c.kv_heads, cap, c.dim}, rng, 0.5f);
    const Tensor v = random_tensor({c.batch, c.kv_heads, cap, c.dim}, rng);
    Tensor mask = Tensor::empty({c.batch, total}, DType::i32);
    for (int64_t b = 0; b < c.batch; ++b) {
      for (int64_t t = 0; t < total; ++t) {
        mask.data<int32_t>()[b * total + t] = (t >= b && !(t > 100 && t < 400)) ? 1 : 0;
      }
    }
    for (auto impl : {ops::AttentionImpl::sdpa, ops::AttentionImpl::eager}) {
      Tensor want = Tensor::empty(q.shape(), DType::f32);
      ops::attention({q, rounded_to_half(k), rounded_to_half(v), mask, want, c.past, 0.125f, impl});
      Tensor got = Tensor::empty(q.shape(), DType::f32);
      ops::attention({q, k.to(DType::f16), v.to(DType::f16), mask, got, c.past, 0.125f, impl});
      EXPECT_LE(max_abs_diff(got, want), 1e-6f) << "impl " << static_cast<int>(impl) << " seq "
                                                << c.seq << " past " << c.past << " dim " << c.dim;
      // And within half's rounding of the exact float32 cache.
      Tensor exact = Tensor::empty(q.shape(), DType::f32);
      ops::reference::attention({q, k, v, mask, exact, c.past, 0.125f, impl});
      EXPECT_LE(max_abs_diff(got, exact), 5e-3f);
    }
  }
}

TEST(HalfKvCache, StoreRoundsToNearestEven) {
  std::mt19937 rng(3);
  const Tensor src = random_tensor({2, 3, 2, 8}, rng, 10.0f);
  Tensor cache = Tensor::zeros({2, 2, 10, 8}, DType::f16);
  ops::store_kv(src, cache, 4);
  Tensor want = Tensor::zeros({2, 2, 10, 8}, DType::f32);
  ops::reference::store_kv({rounded_to_half(src), want, 4});
  EXPECT_EQ(max_abs_diff(cache, want), 0.0f);
  EXPECT_THROW(ops::store_kv(src, cache, 8), Error);  // past the capacity
}

// rope_store into a half cache (the CPU's fused kernel writes it; a device without one takes
// the composed ops): q rotated in place as before, the cache holding the rotated keys rounded to
// half, with and without Qwen3's q/k norms.
TEST(HalfKvCache, RopeStoreWritesRoundedKeysAndValues) {
  std::mt19937 rng(5);
  const int64_t b = 1, s = 3, heads = 4, kv = 2, dim = 16, cap = 8, start = 2;
  const Tensor q = random_tensor({b * s, heads, dim}, rng), k = random_tensor({b, s, kv, dim}, rng);
  const Tensor v = random_tensor({b, s, kv, dim}, rng);
  std::vector<float> freq(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i) {
    freq[static_cast<size_t>(i)] =
        std::pow(10000.0f, -2.0f * static_cast<float>(i) / static_cast<float>(dim));
  }
  const Tensor inv = Tensor::from_f32(freq, {dim / 2});
  Tensor pos = Tensor::empty({b * s}, DType::i32);
  for (int i = 0; i < b * s; ++i) pos.data<int32_t>()[i] = 2 + i;
  const Tensor q_norm = random_tensor({dim}, rng), k_norm = random_tensor({dim}, rng);
  for (const bool norms : {false, true}) {
    const auto run = [&](DType cache_dtype, Tensor& qo, Tensor& kc, Tensor& vc) {
      qo = Tensor::from_f32(q.to_f32_vector(), q.shape());
      const Tensor ko = Tensor::from_f32(k.to_f32_vector(), k.shape());
      kc = Tensor::zeros({b, kv, cap, dim}, cache_dtype);
      vc = Tensor::zeros({b, kv, cap, dim}, cache_dtype);
      ops::rope_store({qo, ko, v, norms ? q_norm : Tensor(), norms ? k_norm : Tensor(), 1e-6f, pos,
                       inv, 1.0f, kc, vc, start});
    };
    Tensor q32, k32, v32, q16, k16, v16;
    run(DType::f32, q32, k32, v32);
    run(DType::f16, q16, k16, v16);
    EXPECT_EQ(max_abs_diff(q16, q32), 0.0f) << norms;
    EXPECT_EQ(max_abs_diff(k16, rounded_to_half(k32)), 0.0f) << norms;
    EXPECT_EQ(max_abs_diff(v16, rounded_to_half(v32)), 0.0f) << norms;
  }
}

TEST(HalfKvCache, OtherCacheDtypesAreRefusedWithTheReason) {
  std::mt19937 rng(1);
  const Tensor q = random_tensor({1, 1, 2, 8}, rng);
  Tensor mask = Tensor::empty({1, 3}, DType::i32);
  for (int t = 0; t < 3; ++t) mask.data<int32_t>()[t] = 1;
  Tensor out = Tensor::empty(q.shape(), DType::f32);
  const Tensor ints = Tensor::zeros({1, 1, 4, 8}, DType::i32);
  try {
    ops::attention({q, ints, ints, mask, out, 2, 1.0f, ops::AttentionImpl::sdpa});
    FAIL() << "an i32 cache was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cache has dtype i32"), std::string::npos) << e.what();
  }
  // k and v caches of different dtypes.
  const Tensor k16 = Tensor::zeros({1, 1, 4, 8}, DType::f16);
  const Tensor v32 = Tensor::zeros({1, 1, 4, 8}, DType::f32);
  EXPECT_THROW(ops::attention({q, k16, v32, mask, out, 2, 1.0f, ops::AttentionImpl::sdpa}), Error);
  // A pair no backend kernel has: bf16 cache beside float32 activations on the CPU.
  const Tensor kb = Tensor::zeros({1, 1, 4, 8}, DType::bf16);
  EXPECT_THROW(ops::attention({q, kb, kb, mask, out, 2, 1.0f, ops::AttentionImpl::sdpa}), Error);
}

}  // namespace
}  // namespace anvil
