// ggml block types: the type table, hand-built blocks checked against the formats' formulas
// (each test packs its block from the layout description, independently of the decoder), and
// goldens from gguf-py (scripts/goldens/make_gguf_goldens.py), which must match bit for bit.
#include <gtest/gtest.h>

#include "test_data.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "anvil/dtype.h"
#include "anvil/error.h"
#include "formats/ggml_quants.h"

namespace anvil {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

float f16_round(float v) {
  return f16_to_f32(f32_to_f16(v));
}

// Dequantizes one block of `t` from raw bytes.
std::vector<float> decode(GgmlType t, const std::vector<uint8_t>& block) {
  EXPECT_EQ(block.size(), ggml_block_bytes(t));
  std::vector<float> y(static_cast<size_t>(ggml_block_size(t)));
  dequantize_row(t, block.data(), y.data(), ggml_block_size(t));
  return y;
}

// Compares bit patterns so that -0.0 vs 0.0 (and NaN payloads) count as differences.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(bits(got[i]), bits(want[i]))
        << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

TEST(GgmlTypes, TableMatchesGgml) {
  EXPECT_EQ(ggml_type_name(GgmlType::q4_k), "Q4_K");
  EXPECT_EQ(ggml_type_name(GgmlType::iq2_xxs), "IQ2_XXS");
  EXPECT_EQ(ggml_type_name(GgmlType::bf16), "BF16");
  EXPECT_EQ(ggml_type_name(static_cast<GgmlType>(4)), "unknown");
  EXPECT_EQ(ggml_type_from_id(12), GgmlType::q4_k);
  for (uint32_t retired : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 1000u}) {
    EXPECT_FALSE(ggml_type_from_id(retired).has_value()) << retired;
  }
  struct Row {
    GgmlType t;
    int64_t block;
    size_t bytes;
  };
  for (const Row& r : std::vector<Row>{
           {GgmlType::f32, 1, 4},        {GgmlType::f16, 1, 2},      {GgmlType::bf16, 1, 2},
           {GgmlType::q4_0, 32, 18},     {GgmlType::q4_1, 32, 20},   {GgmlType::q5_0, 32, 22},
           {GgmlType::q5_1, 32, 24},     {GgmlType::q8_0, 32, 34},   {GgmlType::q8_1, 32, 36},
           {GgmlType::q2_k, 256, 84},    {GgmlType::q3_k, 256, 110}, {GgmlType::q4_k, 256, 144},
           {GgmlType::q5_k, 256, 176},   {GgmlType::q6_k, 256, 210}, {GgmlType::q8_k, 256, 292},
           {GgmlType::iq2_xxs, 256, 66}, {GgmlType::iq4_nl, 32, 18}, {GgmlType::iq4_xs, 256, 136},
           {GgmlType::tq2_0, 256, 66},   {GgmlType::mxfp4, 32, 17}}) {
    EXPECT_EQ(ggml_block_size(r.t), r.block) << ggml_type_name(r.t);
    EXPECT_EQ(ggml_block_bytes(r.t), r.bytes) << ggml_type_name(r.t);
  }
  for (GgmlType t :
       {GgmlType::f32, GgmlType::f16, GgmlType::bf16, GgmlType::q4_0, GgmlType::q4_1,
        GgmlType::q5_0, GgmlType::q5_1, GgmlType::q8_0, GgmlType::q2_k, GgmlType::q3_k,
        GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k, GgmlType::q8_k, GgmlType::iq4_nl}) {
    EXPECT_TRUE(ggml_type_supported(t)) << ggml_type_name(t);
  }
  for (GgmlType t : {GgmlType::q8_1, GgmlType::iq2_xxs, GgmlType::iq3_s, GgmlType::tq1_0,
                     GgmlType::mxfp4, GgmlType::i32, GgmlType::f64}) {
    EXPECT_FALSE(ggml_type_supported(t)) << ggml_type_name(t);
  }
  EXPECT_EQ(ggml_row_bytes(GgmlType::q4_k, 512), 288u);
  EXPECT_THROW(ggml_row_bytes(GgmlType::q4_k, 100), Error);
}

TEST(GgmlTypes, UnsupportedTypesAndBadLengthsAreErrors) {
  std::vector<uint8_t> block(256);
  std::vector<float> y(256);
  try {
    dequantize_row(GgmlType::iq2_xxs, block.data(), y.data(), 256);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("IQ2_XXS is not supported"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(dequantize_row(GgmlType::q8_1, block.data(), y.data(), 32), Error);
  EXPECT_THROW(dequantize_row(static_cast<GgmlType>(99), block.data(), y.data(), 32), Error);
  EXPECT_THROW(dequantize_row(GgmlType::q4_0, block.data(), y.data(), 33), Error);
  EXPECT_THROW(dequantize_row(GgmlType::q4_0, block.data(), y.data(), -32), Error);
  EXPECT_THROW(dequantize_block(GgmlType::iq1_s, block.data(), y.data()), Error);
  dequantize_row(GgmlType::q4_k, block.data(), y.data(), 0);  // nothing to do
}

TEST(GgmlQuants, PlainTypes) {
  const float f[3] = {1.5f, -0.0f, 3e38f};
  std::vector<float> y(3);
  dequantize_row(GgmlType::f32, f, y.data(), 3);
  expect_same_bits(y, {1.5f, -0.0f, 3e38f});
  // f16: 1.0, -2.0, the smallest subnormal, 65504, -inf.
  const uint16_t h[5] = {0x3c00, 0xc000, 0x0001, 0x7bff, 0xfc00};
  y.resize(5);
  dequantize_row(GgmlType::f16, h, y.data(), 5);
  expect_same_bits(y, {1.0f, -2.0f, std::ldexp(1.0f, -24), 65504.0f, -INFINITY});
  const uint16_t b[3] = {0x3f80, 0xc2f7, 0x0001};
  y.resize(3);
  dequantize_row(GgmlType::bf16, b, y.data(), 3);
  expect_same_bits(y, {1.0f, -123.5f, bf16_to_f32(1)});
}

// One random nibble/byte source per test, so failures reproduce.
std::mt19937 rng(uint32_t seed) {
  return std::mt19937(seed);
}
int rand_int(std::mt19937& g, int lo, int hi) {
  return std::uniform_int_distribution<int>(lo, hi)(g);
}

TEST(GgmlQuants, Q4_0) {
  auto g = rng(1);
  std::vector<uint8_t> blk(18);
  put_f16(&blk[0], 0.0123f);
  int q[32];
  for (int& v : q) v = rand_int(g, 0, 15);
  for (int j = 0; j < 16; ++j) blk[2 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
  const float d = f16_round(0.0123f);
  std::vector<float> want(32);
  for (int i = 0; i < 32; ++i) want[i] = static_cast<float>(q[i] - 8) * d;
  expect_same_bits(decode(GgmlType::q4_0, blk), want);
}

TEST(GgmlQuants, Q4_1) {
  auto g = rng(2);
  std::vector<uint8_t> blk(20);
  put_f16(&blk[0], 0.0371f);
  put_f16(&blk[2], -0.29f);
  int q[32];
  for (int& v : q) v = rand_int(g, 0, 15);
  for (int j = 0; j < 16; ++j) blk[4 + j] = static_cast<uint8_t>(q[j] | (q[j + 16] << 4));
  const float d = f16_round(0.0371f), m = f16_round(-0.29f);
  std::vector<float> want(32);
  for (int i = 0; i < 32; ++i) want[i] = static_cast<float>(q[i]) * d + m;
  expect_same_bits(decode(GgmlType::q4_1, blk), want);
}

// Q5_0/Q5_1: the fifth bit of element i is bit i of the little-endian u32 qh.
void pack_q5(const int* q, uint8_t* qh, uint8_t* qs) {
  uint32_t h = 0;
  for (int i = 0; i < 32; ++i) h |= static_cast<uint32_t>((q[i] >> 4) & 1) << i;
  std::memcpy(qh, &h, 4);
  for (int j = 0; j < 16; ++j) qs[j] = static_cast<uint8_t>((q[j] & 15) | ((q[j + 16] & 15) << 4));
}

TEST(GgmlQuants, Q5_0) {
  auto g = rng(3);
  std::vector<uint8_t> blk(22);
  put_f16(&blk[0], -0.0077f);
  int q[32];
  for (int& v : q) v = rand_int(g, 0, 31);
  q[0] = 31;
  q[31] = 16;
  pack_q5(q, &blk[2], &blk[6]);
  const float d = f16_round(-0.0077f);
  std::vector<float> want(32);
  for (int i = 0; i < 32; ++i) want[i] = static_cast<float>(q[i] - 16) * d;
  expect_same_bits(decode(GgmlType::q5_0, blk), want);
}

TEST(GgmlQuants, Q5_1) {
  auto g = rng(4);
  std::vector<uint8_t> blk(24);
  put_f16(&blk[0], 0.0042f);
  put_f16(&blk[2], 0.11f);
  int q[32];
  for (int& v : q) v = rand_int(g, 0, 31);
  pack_q5(q, &blk[4], &blk[8]);
  const float d = f16_round(0.0042f), m = f16_round(0.11f);
  std::vector<float> want(32);
  for (int i = 0; i < 32; ++i) want[i] = static_cast<float>(q[i]) * d + m;
  expect_same_bits(decode(GgmlType::q5_1, blk), want);
}

TEST(GgmlQuants, Q8_0) {
  auto g = rng(5);
  std::vector<uint8_t> blk(34);
  put_f16(&blk[0], 0.00093f);
  int q[32];
  for (int& v : q) v = rand_int(g, -128, 127);
  q[0] = -128;
  for (int i = 0; i < 32; ++i) blk[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(q[i]));
  const float d = f16_round(0.00093f);
  std::vector<float> want(32);
  for (int i = 0; i < 32; ++i) want[i] = static_cast<float>(q[i]) * d;
  expect_same_bits(decode(GgmlType::q8_0, blk), want);
}

TEST(GgmlQuants, Q2_K) {
  // Element e: scale/min byte e/16 (low/high nibble); 2-bit quant at bits 2*((e%128)/32) of
  // qs[32*(e/128) + e%32].
  auto g = rng(6);
  std::vector<uint8_t> blk(84);
  int sc[16], mn[16], q[256];
  for (int j = 0; j < 16; ++j) {
    sc[j] = rand_int(g, 0, 15);
    mn[j] = rand_int(g, 0, 15);
    blk[j] = static_cast<uint8_t>(sc[j] | (mn[j] << 4));
  }
  for (int e = 0; e < 256; ++e) {
    q[e] = rand_int(g, 0, 3);
    blk[16 + 32 * (e / 128) + e % 32] |= static_cast<uint8_t>(q[e] << (2 * ((e % 128) / 32)));
  }
  put_f16(&blk[80], 0.0517f);
  put_f16(&blk[82], 0.0131f);
  const float d = f16_round(0.0517f), dmin = f16_round(0.0131f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const float dl = d * static_cast<float>(sc[e / 16]);
    const float ml = dmin * static_cast<float>(mn[e / 16]);
    want[e] = dl * static_cast<float>(q[e]) - ml;
  }
  expect_same_bits(decode(GgmlType::q2_k, blk), want);
}

// Q3_K's 16 six-bit scales: low nibbles in bytes 0-7 (scales 8-15 in the high nibbles), top
// two bits in bytes 8-11 (scale j at bits 2*(j/4) of byte 8 + j%4).
void pack_q3_k_scales(const int* s, uint8_t* out) {
  std::memset(out, 0, 12);
  for (int j = 0; j < 16; ++j) {
    out[j % 8] |= static_cast<uint8_t>((s[j] & 15) << (j < 8 ? 0 : 4));
    out[8 + j % 4] |= static_cast<uint8_t>(((s[j] >> 4) & 3) << (2 * (j / 4)));
  }
}

TEST(GgmlQuants, Q3_K) {
  // Element e: 2 low bits like Q2_K; the high bit is bit (e/32) of hmask[e%32], and a clear
  // high bit subtracts 4. Scale e/16 is stored biased by 32.
  auto g = rng(7);
  std::vector<uint8_t> blk(110);
  int s[16], q[256];
  for (int& v : s) v = rand_int(g, 0, 63);
  s[0] = 0;
  s[1] = 63;
  for (int e = 0; e < 256; ++e) {
    q[e] = rand_int(g, -4, 3);
    const int low = q[e] & 3, high = q[e] >= 0 ? 1 : 0;
    blk[32 + 32 * (e / 128) + e % 32] |= static_cast<uint8_t>(low << (2 * ((e % 128) / 32)));
    blk[e % 32] |= static_cast<uint8_t>(high << (e / 32));
  }
  pack_q3_k_scales(s, &blk[96]);
  put_f16(&blk[108], -0.0213f);
  const float d = f16_round(-0.0213f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    want[e] = d * static_cast<float>(s[e / 16] - 32) * static_cast<float>(q[e]);
  }
  expect_same_bits(decode(GgmlType::q3_k, blk), want);

  int8_t unpacked[16];
  unpack_q3_k_scales(&blk[96], unpacked);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(unpacked[j], s[j] - 32) << j;
}

// Q4_K/Q5_K's 8 six-bit scales and mins: sub-blocks 0-3 in bytes 0-3 / 4-7; sub-blocks 4-7
// keep their low nibbles in bytes 8-11 (scale low, min high) and their top two bits in the
// top bits of bytes 0-3 (scale) and 4-7 (min).
void pack_k_scales(const int* sc, const int* mn, uint8_t* out) {
  for (int j = 0; j < 4; ++j) {
    out[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    out[j + 4] = static_cast<uint8_t>(mn[j] | ((mn[j + 4] >> 4) << 6));
    out[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

TEST(GgmlQuants, Q4_K) {
  // Element e: sub-block e/32; nibble from qs[32*(e/64) + e%32], low for even sub-blocks.
  auto g = rng(8);
  std::vector<uint8_t> blk(144);
  int sc[8], mn[8], q[256];
  for (int j = 0; j < 8; ++j) {
    sc[j] = rand_int(g, 0, 63);
    mn[j] = rand_int(g, 0, 63);
  }
  sc[5] = 63;
  mn[6] = 63;
  pack_k_scales(sc, mn, &blk[4]);
  for (int e = 0; e < 256; ++e) {
    q[e] = rand_int(g, 0, 15);
    blk[16 + 32 * (e / 64) + e % 32] |= static_cast<uint8_t>(q[e] << ((e / 32) % 2 ? 4 : 0));
  }
  put_f16(&blk[0], 0.00357f);
  put_f16(&blk[2], 0.0019f);
  const float d = f16_round(0.00357f), dmin = f16_round(0.0019f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const float ds = d * static_cast<float>(sc[e / 32]);
    const float dm = dmin * static_cast<float>(mn[e / 32]);
    want[e] = ds * static_cast<float>(q[e]) - dm;
  }
  expect_same_bits(decode(GgmlType::q4_k, blk), want);

  uint8_t usc[8], umn[8];
  unpack_k_scale_min(&blk[4], usc, umn);
  for (int j = 0; j < 8; ++j) {
    EXPECT_EQ(usc[j], sc[j]) << j;
    EXPECT_EQ(umn[j], mn[j]) << j;
  }
}

TEST(GgmlQuants, Q5_K) {
  // Like Q4_K, plus a fifth bit: bit e/32 of qh[e%32].
  auto g = rng(9);
  std::vector<uint8_t> blk(176);
  int sc[8], mn[8], q[256];
  for (int j = 0; j < 8; ++j) {
    sc[j] = rand_int(g, 0, 63);
    mn[j] = rand_int(g, 0, 63);
  }
  pack_k_scales(sc, mn, &blk[4]);
  for (int e = 0; e < 256; ++e) {
    q[e] = rand_int(g, 0, 31);
    blk[48 + 32 * (e / 64) + e % 32] |= static_cast<uint8_t>((q[e] & 15) << ((e / 32) % 2 ? 4 : 0));
    blk[16 + e % 32] |= static_cast<uint8_t>((q[e] >> 4) << (e / 32));
  }
  put_f16(&blk[0], 0.0061f);
  put_f16(&blk[2], -0.0044f);
  const float d = f16_round(0.0061f), dmin = f16_round(-0.0044f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    const float ds = d * static_cast<float>(sc[e / 32]);
    const float dm = dmin * static_cast<float>(mn[e / 32]);
    want[e] = ds * static_cast<float>(q[e]) - dm;
  }
  expect_same_bits(decode(GgmlType::q5_k, blk), want);
}

TEST(GgmlQuants, Q6_K) {
  // Element e in half h = e/128, quarter k = (e%128)/32, lane l = e%32: low nibble of
  // ql[64h + 32*(k%2) + l] (high nibble when k >= 2), two high bits at 2k of qh[32h + l];
  // value q - 32 times the int8 scale e/16.
  auto g = rng(10);
  std::vector<uint8_t> blk(210);
  int sc[16], q[256];
  for (int& v : sc) v = rand_int(g, -128, 127);
  for (int e = 0; e < 256; ++e) {
    q[e] = rand_int(g, 0, 63);
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    blk[64 * h + 32 * (k % 2) + l] |= static_cast<uint8_t>((q[e] & 15) << (k >= 2 ? 4 : 0));
    blk[128 + 32 * h + l] |= static_cast<uint8_t>((q[e] >> 4) << (2 * k));
  }
  for (int j = 0; j < 16; ++j) blk[192 + j] = static_cast<uint8_t>(static_cast<int8_t>(sc[j]));
  put_f16(&blk[208], 0.00171f);
  const float d = f16_round(0.00171f);
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) {
    want[e] = d * static_cast<float>(sc[e / 16]) * static_cast<float>(q[e] - 32);
  }
  expect_same_bits(decode(GgmlType::q6_k, blk), want);
}

TEST(GgmlQuants, Q8_K) {
  auto g = rng(11);
  std::vector<uint8_t> blk(292);
  const float d = 0.0123456f;  // an f32 scale, not f16
  std::memcpy(&blk[0], &d, 4);
  int q[256];
  for (int e = 0; e < 256; ++e) {
    q[e] = rand_int(g, -128, 127);
    blk[4 + e] = static_cast<uint8_t>(static_cast<int8_t>(q[e]));
  }
  std::vector<float> want(256);
  for (int e = 0; e < 256; ++e) want[e] = d * static_cast<float>(q[e]);
  expect_same_bits(decode(GgmlType::q8_k, blk), want);
}

TEST(GgmlQuants, SpecialScales) {
  // A zero scale gives +0 for q >= 0 and -0 for q < 0 (the product's sign), exactly as ggml.
  std::vector<uint8_t> blk(18, 0);
  blk[2] = 0x70;  // element 0: q = 0 -> -8 * 0 = -0; element 16: q = 7 -> -1 * 0 = -0
  std::vector<float> y = decode(GgmlType::q4_0, blk);
  EXPECT_EQ(bits(y[0]), bits(-0.0f));
  EXPECT_EQ(bits(y[16]), bits(-0.0f));
  // A subnormal f16 scale is widened exactly.
  const uint16_t sub = 0x0003;
  std::memcpy(&blk[0], &sub, 2);
  blk[2] = 0x0f;  // element 0: q = 15 -> 7 * 3 * 2^-24
  y = decode(GgmlType::q4_0, blk);
  EXPECT_EQ(y[0], 21.0f * std::ldexp(1.0f, -24));
  // An infinite scale times a zero quant is NaN, as in ggml.
  std::vector<uint8_t> q8(34, 0);
  const uint16_t inf = 0x7c00;
  std::memcpy(&q8[0], &inf, 2);
  q8[3] = 1;
  y = decode(GgmlType::q8_0, q8);
  EXPECT_TRUE(std::isnan(y[0]));
  EXPECT_EQ(y[1], INFINITY);
}

TEST(GgmlQuants, BlockAndRowAgreeAtUnalignedAddresses) {
  // Blocks are read in place from any offset of a mapped file (ggml's blocks are 2-byte
  // aligned at best, and a file may use general.alignment 1). Random scales may be NaN; the
  // bit patterns of the two paths must still agree.
  auto g = rng(12);
  for (GgmlType t : {GgmlType::q4_0, GgmlType::q4_1, GgmlType::q5_0, GgmlType::q5_1, GgmlType::q8_0,
                     GgmlType::q2_k, GgmlType::q3_k, GgmlType::q4_k, GgmlType::q5_k, GgmlType::q6_k,
                     GgmlType::q8_k}) {
    const size_t bytes = ggml_block_bytes(t);
    const auto n = static_cast<size_t>(ggml_block_size(t));
    std::vector<uint8_t> buf(1 + 3 * bytes);
    for (auto& b : buf) b = static_cast<uint8_t>(rand_int(g, 0, 255));
    std::vector<float> row(3 * n), one(n);
    dequantize_row(t, buf.data() + 1, row.data(), static_cast<int64_t>(3 * n));
    for (size_t i = 0; i < 3; ++i) {
      dequantize_block(t, buf.data() + 1 + i * bytes, one.data());
      for (size_t k = 0; k < n; ++k) {
        ASSERT_EQ(bits(one[k]), bits(row[i * n + k])) << ggml_type_name(t) << " block " << i;
      }
    }
  }
}

// gguf-py goldens: raw blocks and the floats gguf-py's dequantize gives. gguf-py evaluates
// ggml's formulas in float32 in ggml's order, so every value must match bit for bit.
TEST(GgmlQuants, GoldensFromGgufPy) {
  const std::string dir = test::data_dir() + "/gguf/quants";
  const auto manifest = nlohmann::json::parse(read_file(dir + "/manifest.json"));
  int checked = 0;
  for (const auto& gld : manifest.at("goldens")) {
    const auto type = ggml_type_from_id(gld.at("id").get<uint32_t>());
    ASSERT_TRUE(type.has_value());
    const std::string label =
        gld.at("type").get<std::string>() + " (" + gld.at("source").get<std::string>() + ")";
    ASSERT_EQ(ggml_type_name(*type), gld.at("type").get<std::string>());
    const auto n = gld.at("elements").get<int64_t>();
    const std::string blocks = read_file(dir + "/" + gld.at("blocks").get<std::string>());
    const std::string expected = read_file(dir + "/" + gld.at("expected").get<std::string>());
    ASSERT_EQ(blocks.size(), ggml_row_bytes(*type, n)) << label;
    ASSERT_EQ(expected.size(), static_cast<size_t>(n) * 4) << label;
    std::vector<float> got(static_cast<size_t>(n));
    dequantize_row(*type, blocks.data(), got.data(), n);
    std::vector<float> want(static_cast<size_t>(n));
    std::memcpy(want.data(), expected.data(), expected.size());
    SCOPED_TRACE(label);
    expect_same_bits(got, want);
    ++checked;
  }
  EXPECT_EQ(checked, 21);
}

}  // namespace
}  // namespace anvil
