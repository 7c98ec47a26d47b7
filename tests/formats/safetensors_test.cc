// The safetensors reader on valid files, sharded checkpoints, and every kind of malformed file:
// truncated at each byte, lying header lengths, offsets outside the file, overlaps, holes,
// wrong dtypes and shapes. Each must be a clear error naming the file, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "anvil/error.h"
#include "anvil/safetensors.h"
#include "temp_dir.h"

namespace anvil {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

std::string raw_file(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + data;
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string error_of(const std::string& path) {
  try {
    SafetensorsFile::open(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Two float32 tensors: a [2,2] = 1..4 and b [3] = 5..7.
std::string good_file() {
  std::string data(28, '\0');
  const float v[7] = {1, 2, 3, 4, 5, 6, 7};
  std::memcpy(data.data(), v, sizeof v);
  return raw_file(
      R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},)"
      R"("b":{"dtype":"F32","shape":[3],"data_offsets":[16,28]},"__metadata__":{"format":"pt"}})",
      data);
}

TEST(Safetensors, ReadsValidFile) {
  TempDir dir;
  write_bytes(dir.file("m.safetensors"), good_file());
  const auto f = SafetensorsFile::open(dir.file("m.safetensors"));
  EXPECT_EQ(f.entries().size(), 2u);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.load("a").shape(), (Shape{2, 2}));
  EXPECT_EQ(f.load("a").to_f32_vector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(f.load("b").to_f32_vector(), (std::vector<float>{5, 6, 7}));
  EXPECT_THROW(f.load("c"), Error);
}

TEST(Safetensors, WriterRoundTripsEveryDtypeItWrites) {
  TempDir dir;
  SafetensorsWriter w(dir.file("w.safetensors"));
  const Tensor f = Tensor::from_f32({1.5f, -2.0f, 3.25f}, {3});
  w.add("f32", f);
  w.add("bf16", f.to(DType::bf16));
  w.add("f16", f.to(DType::f16));
  w.add("i64", Tensor::from_i64({1, -2, 1LL << 40}, {3}));
  w.add("empty", Tensor::empty({0, 4}, DType::f32));
  w.set_metadata("format", "pt");
  w.finish();
  const auto r = SafetensorsFile::open(dir.file("w.safetensors"));
  EXPECT_EQ(r.load("f32").to_f32_vector(), f.to_f32_vector());
  EXPECT_EQ(r.load("bf16").dtype(), DType::bf16);
  EXPECT_EQ(r.load("bf16").to_f32_vector(), f.to_f32_vector());
  EXPECT_EQ(r.load("f16").to_f32_vector(), f.to_f32_vector());
  EXPECT_EQ(r.load("i64").to_i64_vector(), (std::vector<int64_t>{1, -2, 1LL << 40}));
  EXPECT_EQ(r.load("empty").shape(), (Shape{0, 4}));
}

TEST(Safetensors, ReadsEveryDtypeTransformersWrites) {
  TempDir dir;
  // One element of each: F64 1.0, F16 1.0, BF16 1.0, I32 7, I16 -3, I8 -1, U8 200, BOOL 1,
  // F8_E4M3 1.0, F8_E5M2 1.0.
  std::string data;
  const double d = 1.0;
  data.append(reinterpret_cast<const char*>(&d), 8);
  data += std::string("\x00\x3c", 2) + std::string("\x80\x3f", 2);
  const int32_t i32 = 7;
  data.append(reinterpret_cast<const char*>(&i32), 4);
  const int16_t i16 = -3;
  data.append(reinterpret_cast<const char*>(&i16), 2);
  data += std::string("\xff\xc8\x01\x38\x3c", 5);
  const std::string header = R"({"f64":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
                             R"("f16":{"dtype":"F16","shape":[1],"data_offsets":[8,10]},)"
                             R"("bf16":{"dtype":"BF16","shape":[1],"data_offsets":[10,12]},)"
                             R"("i32":{"dtype":"I32","shape":[1],"data_offsets":[12,16]},)"
                             R"("i16":{"dtype":"I16","shape":[1],"data_offsets":[16,18]},)"
                             R"("i8":{"dtype":"I8","shape":[1],"data_offsets":[18,19]},)"
                             R"("u8":{"dtype":"U8","shape":[1],"data_offsets":[19,20]},)"
                             R"("bool":{"dtype":"BOOL","shape":[1],"data_offsets":[20,21]},)"
                             R"("e4m3":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[21,22]},)"
                             R"("e5m2":{"dtype":"F8_E5M2","shape":[1],"data_offsets":[22,23]}})";
  write_bytes(dir.file("t.safetensors"), raw_file(header, data));
  const auto f = SafetensorsFile::open(dir.file("t.safetensors"));
  const std::pair<const char*, float> expected[] = {
      {"f64", 1.0f}, {"f16", 1.0f},  {"bf16", 1.0f}, {"i32", 7.0f},  {"i16", -3.0f},
      {"i8", -1.0f}, {"u8", 200.0f}, {"bool", 1.0f}, {"e4m3", 1.0f}, {"e5m2", 1.0f}};
  for (const auto& [name, value] : expected) {
    EXPECT_EQ(f.load(name).to(DType::f32).to_f32_vector()[0], value) << name;
  }
}

TEST(Safetensors, TruncatedAtEveryByteIsAnErrorNamingTheFile) {
  TempDir dir;
  const std::string good = good_file();
  for (size_t len = 0; len < good.size(); ++len) {
    const std::string path = dir.file("cut.safetensors");
    write_bytes(path, good.substr(0, len));
    const std::string err = error_of(path);
    EXPECT_FALSE(err.empty()) << "truncated at " << len << " was accepted";
    EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << err;
  }
}

struct Corruption {
  const char* label;
  std::string header;
  size_t data_bytes;
  const char* expected;  // a fragment of the message
};

TEST(Safetensors, CorruptHeadersAreRejectedWithTheProblem) {
  const Corruption cases[] = {
      {"not json", "{\"a\":", 0, "not valid JSON"},
      {"not an object", "[1,2]", 0, "not a JSON object"},
      {"no dtype", R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4, "no dtype"},
      {"unknown dtype", R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4,
       "unknown dtype 'F33'"},
      {"unsupported dtype", R"({"a":{"dtype":"U32","shape":[1],"data_offsets":[0,4]}})", 4,
       "dtype U32"},
      {"dtype size lies", R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,8]}})", 8,
       "is 8 bytes but F16 [2] needs 4"},
      {"shape lies", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "needs 12"},
      {"negative dim", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4,
       "non-negative integer"},
      {"shape overflow",
       R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4,
       "overflows"},
      {"offset past end", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8,
       "beyond the 8-byte data section"},
      {"reversed offsets", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4,
       "end before they begin"},
      {"offsets not ints", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":["0",4]}})", 4,
       "not non-negative integers"},
      {"one offset", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4,
       "no data_offsets pair"},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
       12, "overlaps"},
      {"hole",
       R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
       12, "leaving a hole"},
      {"trailing bytes", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8,
       "cover 4 of the 8 data bytes"},
      {"metadata not strings", R"({"__metadata__":{"x":1}})", 0, "not a string"},
  };
  TempDir dir;
  for (const auto& c : cases) {
    const std::string path = dir.file("bad.safetensors");
    write_bytes(path, raw_file(c.header, std::string(c.data_bytes, '\0')));
    const std::string err = error_of(path);
    EXPECT_NE(err.find(c.expected), std::string::npos) << c.label << ": got '" << err << "'";
    EXPECT_EQ(err.rfind(path + ": ", 0), 0u) << c.label << ": " << err;
  }
}

TEST(Safetensors, LyingHeaderLengths) {
  TempDir dir;
  const std::string path = dir.file("len.safetensors");
  std::string bytes = good_file();
  for (uint64_t len : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 40, ~uint64_t{0},
                       uint64_t{bytes.size()}, uint64_t{bytes.size() - 7}}) {
    std::string b = bytes;
    for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((len >> (8 * i)) & 0xff);
    write_bytes(path, b);
    EXPECT_FALSE(error_of(path).empty()) << "header length " << len << " was accepted";
  }
  write_bytes(path, "");
  EXPECT_NE(error_of(path).find("too small"), std::string::npos);
  EXPECT_NE(error_of(dir.file("missing.safetensors")).find("cannot open"), std::string::npos);
}

TEST(Safetensors, RandomByteFlipsNeverCrash) {
  TempDir dir;
  const std::string good = good_file();
  uint32_t state = 12345;
  for (int trial = 0; trial < 2000; ++trial) {
    std::string b = good;
    for (int k = 0; k < 3; ++k) {
      state = state * 1664525u + 1013904223u;
      b[(state >> 8) % b.size()] = static_cast<char>(state >> 24);
    }
    const std::string path = dir.file("flip.safetensors");
    write_bytes(path, b);
    try {
      const auto f = SafetensorsFile::open(path);
      for (const auto& e : f.entries()) f.load(e.name).to(DType::f32);
    } catch (const Error&) {
    }
  }
}

TEST(Checkpoint, ReadsShardsThroughTheIndex) {
  TempDir dir;
  {
    SafetensorsWriter a(dir.file("model-00001-of-00002.safetensors"));
    a.add("x", Tensor::from_f32({1, 2}, {2}));
    a.finish();
    SafetensorsWriter b(dir.file("model-00002-of-00002.safetensors"));
    b.add("y", Tensor::from_f32({3}, {1}));
    b.finish();
  }
  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"metadata":{"total_size":12},"weight_map":{"x":"model-00001-of-00002.safetensors","y":"model-00002-of-00002.safetensors"}})";
  const std::string root = fs::path(dir.file("x")).parent_path().string();
  const Checkpoint c = Checkpoint::open(root);
  EXPECT_EQ(c.load("x").to_f32_vector(), (std::vector<float>{1, 2}));
  EXPECT_EQ(c.load("y").to_f32_vector(), (std::vector<float>{3}));
  EXPECT_EQ(c.names().size(), 2u);

  // An index that lies about where a tensor is.
  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"weight_map":{"x":"model-00002-of-00002.safetensors"}})";
  try {
    Checkpoint::open(root);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not contain it"), std::string::npos) << e.what();
  }
  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"weight_map":{"x":"../../etc/passwd"}})";
  EXPECT_THROW(Checkpoint::open(root), Error);
  std::ofstream(dir.file("model.safetensors.index.json"))
      << R"({"weight_map":{"x":"gone.safetensors"}})";
  EXPECT_THROW(Checkpoint::open(root), Error);
}

TEST(Checkpoint, MissingWeightsFolder) {
  TempDir dir;
  const std::string root = fs::path(dir.file("x")).parent_path().string();
  try {
    Checkpoint::open(root);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no model.safetensors"), std::string::npos);
  }
}

}  // namespace
}  // namespace anvil
