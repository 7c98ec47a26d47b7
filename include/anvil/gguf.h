/// @file gguf.h
/// Reading GGUF files (versions 2 and 3, little-endian), the format of llama.cpp and ggml
/// (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md). The file is memory-mapped;
/// metadata strings and arrays are views of the map, so a 150k-token vocabulary loads without
/// copying a string. Every count, length, dimension and offset is treated as hostile: see
/// GgufFile::open for what is checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace anvil {

class MappedFile;

/// ggml's tensor types, with ggml's numeric ids (the ids stored in GGUF files). The ids that
/// ggml has retired (4, 5, 31-33, 36-38) are not listed: the reader refuses them by name.
enum class GgmlType : uint32_t {
  f32 = 0,
  f16 = 1,
  q4_0 = 2,
  q4_1 = 3,
  q5_0 = 6,
  q5_1 = 7,
  q8_0 = 8,
  q8_1 = 9,
  q2_k = 10,
  q3_k = 11,
  q4_k = 12,
  q5_k = 13,
  q6_k = 14,
  q8_k = 15,
  iq2_xxs = 16,
  iq2_xs = 17,
  iq3_xxs = 18,
  iq1_s = 19,
  iq4_nl = 20,
  iq3_s = 21,
  iq2_s = 22,
  iq4_xs = 23,
  i8 = 24,
  i16 = 25,
  i32 = 26,
  i64 = 27,
  f64 = 28,
  iq1_m = 29,
  bf16 = 30,
  tq1_0 = 34,
  tq2_0 = 35,
  mxfp4 = 39,
  nvfp4 = 40,
  q1_0 = 41,
};

/// ggml's name of a type ("Q4_K", "F32", "IQ2_XXS"); "unknown" for an id not listed above.
std::string_view ggml_type_name(GgmlType t);
/// The type with ggml id `id`, or nullopt for ids that are unknown or retired.
std::optional<GgmlType> ggml_type_from_id(uint32_t id);

/// The value types of GGUF metadata, with the ids the format stores.
enum class GgufValueType : uint32_t {
  u8 = 0,
  i8 = 1,
  u16 = 2,
  i16 = 3,
  u32 = 4,
  i32 = 5,
  f32 = 6,
  boolean = 7,
  string = 8,
  array = 9,
  u64 = 10,
  i64 = 11,
  f64 = 12,
};

/// The spec's name of a value type ("uint32", "string", "array", ...).
std::string_view gguf_value_type_name(GgufValueType t);

namespace detail {
struct GgufSource;
}

/// One metadata value. Scalars are decoded on access from the file's bytes; strings are views
/// of the mapped file; an array of numbers is a view of its packed little-endian elements; an
/// array of strings carries an index of views built once when the file is opened. A value
/// keeps the mapping alive, so the views it returns stay valid as long as the value exists.
/// Accessors throw anvil::Error "PATH: metadata key 'K' has type T, expected U" on a mismatch.
class GgufValue {
 public:
  GgufValueType type() const { return type_; }
  bool is_array() const { return type_ == GgufValueType::array; }
  /// The key this value belongs to (for an array element, the key of its array).
  std::string_view key() const { return key_; }

  /// Any integer type whose value fits; throws on other types and on values out of range.
  uint64_t as_u64() const;
  int64_t as_i64() const;
  uint32_t as_u32() const;
  int32_t as_i32() const;
  /// f32, f64, or an integer (converted, as a C++ cast would).
  double as_f64() const;
  float as_f32() const { return static_cast<float>(as_f64()); }
  bool as_bool() const;
  /// The bytes of a string value (GGUF strings are UTF-8 without a terminating NUL).
  std::string_view as_string() const;

  /// Arrays: the element type, the number of elements, and one element. Elements of an array
  /// of arrays are decoded from the file on each call (at() walks the preceding elements;
  /// use elements() to visit them all).
  GgufValueType element_type() const;
  uint64_t size() const;
  GgufValue at(uint64_t i) const;
  std::vector<GgufValue> elements() const;

  /// An array of strings, without copying: views of the mapped file.
  const std::vector<std::string_view>& as_string_array() const;
  /// An array of integers (any integer element type whose values fit in int64).
  std::vector<int64_t> as_int_array() const;
  /// An array of f32, f64 or integers, converted to float.
  std::vector<float> as_float_array() const;
  /// The packed little-endian elements of an array of numbers or booleans.
  std::string_view raw_elements() const;

 private:
  friend class GgufFile;
  friend struct GgufParser;
  GgufValue() = default;
  [[noreturn]] void mismatch(const std::string& expected) const;
  std::string label() const;
  std::string type_description() const;

  std::shared_ptr<const detail::GgufSource> src_;
  std::string_view key_;
  int64_t index_ = -1;  // element index within the array named by key_, for messages
  GgufValueType type_ = GgufValueType::u8;
  GgufValueType elem_type_ = GgufValueType::u8;
  uint64_t count_ = 0;
  std::string_view bytes_;  // scalar bytes, string bytes, or the encoded array elements
  std::shared_ptr<const std::vector<std::string_view>> strings_;
};

/// One tensor of a GGUF file.
struct GgufTensorInfo {
  std::string name;
  GgmlType type;
  /// ggml order: dims[0] is the contiguous (row) length, a multiple of the type's block size.
  std::vector<uint64_t> dims;
  uint64_t offset;  ///< absolute offset in the file
  uint64_t nbytes;
  /// The product of dims (1 for a tensor with no dims).
  uint64_t n_elements() const;
};

class GgufFile {
 public:
  /// Maps and validates `path`; throws anvil::Error "PATH: PROBLEM" (one line naming the key or
  /// tensor) on any defect: magic, version (2 and 3 only), counts and lengths larger than the
  /// file, unknown value or tensor types, duplicate keys or tensor names, more than 4 dims, a
  /// zero dim or a product that overflows, a row length that is not a multiple of the block
  /// size, a general.alignment that is not a power of two, offsets that are misaligned or
  /// outside the data section, and tensors that overlap.
  static GgufFile open(const std::string& path);

  const std::string& path() const;
  uint32_t version() const { return version_; }
  /// general.alignment, or 32 when the file does not set it.
  size_t alignment() const { return alignment_; }
  /// Absolute offset of the tensor data section.
  uint64_t data_offset() const { return data_offset_; }

  /// Metadata in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  /// nullptr when `key` is absent.
  const GgufValue* find(std::string_view key) const;
  /// The value of `key`; throws "PATH: metadata key 'K' is missing" when absent.
  const GgufValue& get(std::string_view key) const;
  /// Typed lookups: throw when the key is missing or has another type.
  uint64_t get_u64(std::string_view key) const { return get(key).as_u64(); }
  int64_t get_i64(std::string_view key) const { return get(key).as_i64(); }
  uint32_t get_u32(std::string_view key) const { return get(key).as_u32(); }
  double get_f64(std::string_view key) const { return get(key).as_f64(); }
  float get_f32(std::string_view key) const { return get(key).as_f32(); }
  bool get_bool(std::string_view key) const { return get(key).as_bool(); }
  std::string_view get_string(std::string_view key) const { return get(key).as_string(); }
  const std::vector<std::string_view>& get_strings(std::string_view key) const {
    return get(key).as_string_array();
  }
  /// Optional lookups: nullopt when the key is absent; still throw on a type mismatch.
  std::optional<uint64_t> find_u64(std::string_view key) const;
  std::optional<int64_t> find_i64(std::string_view key) const;
  std::optional<double> find_f64(std::string_view key) const;
  std::optional<bool> find_bool(std::string_view key) const;
  std::optional<std::string_view> find_string(std::string_view key) const;

  /// Tensors in file order.
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  /// nullptr when there is no tensor `name`.
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  /// The tensor's bytes, in the map (not aligned beyond alignment(); read with memcpy).
  const uint8_t* tensor_data(const GgufTensorInfo& t) const;
  /// Owner of the mapping: tensors viewing the file hold it to keep the map alive.
  std::shared_ptr<const void> keepalive() const;

 private:
  friend struct GgufParser;
  GgufFile() = default;
  std::shared_ptr<const detail::GgufSource> src_;
  uint32_t version_ = 0;
  size_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::unordered_map<std::string_view, size_t> key_index_;  // views of the mapped keys
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;  // views of the mapped names
};

}  // namespace anvil
