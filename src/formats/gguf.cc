// GGUF reader: one bounds-checked pass over the header of a memory-mapped file. Every length in
// the file is compared with the bytes that remain before it is used (a lying count must fail
// as an error, never as an allocation or a read past the map), and nested arrays are only
// walked, so the work and memory of opening a file are bounded by its size.
#include <algorithm>
#include <bit>
#include <concepts>
#include <cstring>
#include <limits>
#include <string>

#include "anvil/error.h"
#include "anvil/gguf.h"
#include "formats/ggml_quants.h"
#include "formats/mapped_file.h"

namespace anvil {

namespace detail {
struct GgufSource {
  std::string path;
  std::shared_ptr<MappedFile> map;
};
}  // namespace detail

namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr uint32_t kMaxDims = 4;          // GGML_MAX_DIMS
constexpr size_t kMaxArrayDepth = 64;     // arrays of arrays of ...; real files use 1 or 2
constexpr uint64_t kMinKvBytes = 13;      // key length (8) + type (4) + the smallest value (1)
constexpr uint64_t kMinTensorBytes = 24;  // name length + n_dims + type + offset
constexpr uint64_t kMinNestedBytes = 12;  // element type + count of an inner array
constexpr size_t kMaxReserve = 4096;      // entries reserved up front whatever a count claims

// Names from the file go into one-line messages: escape control bytes, cut very long names.
std::string quote(std::string_view s) {
  std::string out = "'";
  const size_t n = std::min<size_t>(s.size(), 120);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\\') {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  if (n < s.size()) out += "...";
  return out + "'";
}

size_t scalar_size(GgufValueType t) {
  switch (t) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::boolean:
      return 1;
    case GgufValueType::u16:
    case GgufValueType::i16:
      return 2;
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::f32:
      return 4;
    case GgufValueType::u64:
    case GgufValueType::i64:
    case GgufValueType::f64:
      return 8;
    default:
      return 0;  // string, array
  }
}

bool is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::u8:
    case GgufValueType::i8:
    case GgufValueType::u16:
    case GgufValueType::i16:
    case GgufValueType::u32:
    case GgufValueType::i32:
    case GgufValueType::u64:
    case GgufValueType::i64:
      return true;
    default:
      return false;
  }
}

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// An integer scalar of type t at p, as (is_negative, magnitude-or-value) pieces.
struct Int {
  bool negative;
  uint64_t u;  // the value when !negative
  int64_t i;   // the value when negative
};

Int load_int(GgufValueType t, const char* p) {
  int64_t s = 0;
  switch (t) {
    case GgufValueType::u8:
      return {false, load<uint8_t>(p), 0};
    case GgufValueType::u16:
      return {false, load<uint16_t>(p), 0};
    case GgufValueType::u32:
      return {false, load<uint32_t>(p), 0};
    case GgufValueType::u64:
      return {false, load<uint64_t>(p), 0};
    case GgufValueType::i8:
      s = load<int8_t>(p);
      break;
    case GgufValueType::i16:
      s = load<int16_t>(p);
      break;
    case GgufValueType::i32:
      s = load<int32_t>(p);
      break;
    case GgufValueType::i64:
      s = load<int64_t>(p);
      break;
    default:
      break;
  }
  if (s < 0) return {true, 0, s};
  return {false, static_cast<uint64_t>(s), s};
}

std::string int_text(const Int& v) {
  return v.negative ? std::to_string(v.i) : std::to_string(v.u);
}

double load_number(GgufValueType t, const char* p) {
  if (t == GgufValueType::f32) return load<float>(p);
  if (t == GgufValueType::f64) return load<double>(p);
  const Int v = load_int(t, p);
  return v.negative ? static_cast<double>(v.i) : static_cast<double>(v.u);
}

}  // namespace

std::string_view gguf_value_type_name(GgufValueType t) {
  switch (t) {
    case GgufValueType::u8:
      return "uint8";
    case GgufValueType::i8:
      return "int8";
    case GgufValueType::u16:
      return "uint16";
    case GgufValueType::i16:
      return "int16";
    case GgufValueType::u32:
      return "uint32";
    case GgufValueType::i32:
      return "int32";
    case GgufValueType::f32:
      return "float32";
    case GgufValueType::boolean:
      return "bool";
    case GgufValueType::string:
      return "string";
    case GgufValueType::array:
      return "array";
    case GgufValueType::u64:
      return "uint64";
    case GgufValueType::i64:
      return "int64";
    case GgufValueType::f64:
      return "float64";
  }
  return "unknown";
}

uint64_t GgufTensorInfo::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : dims) n *= d;  // the reader checked that the product fits
  return n;
}

// ---- parsing -------------------------------------------------------------------------------

namespace {

// Descriptions of what is being read are built only when a read fails: a vocabulary has 150k
// strings, and formatting a label for each would dominate the time to open a file.
std::string text(const std::string& s) {
  return s;
}
std::string text(const char* s) {
  return s;
}
template <typename F>
requires std::invocable<const F&> std::string text(const F& f) {
  return f();
}

// A read position in a byte range, with errors that name the file.
class GgufCursor {
 public:
  GgufCursor(const std::string& path, const char* data, uint64_t size)
      : path_(path), data_(data), size_(size) {}

  uint64_t pos() const { return pos_; }
  const char* here() const { return data_ + pos_; }
  uint64_t remaining() const { return size_ - pos_; }

  [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }

  template <typename W>
  std::string_view bytes(uint64_t n, const W& what) {
    if (n > remaining()) {
      fail("truncated file: " + text(what) + " needs " + std::to_string(n) + " bytes at offset " +
           std::to_string(pos_) + ", but the file ends at " + std::to_string(size_));
    }
    std::string_view v(data_ + pos_, static_cast<size_t>(n));
    pos_ += n;
    return v;
  }
  template <typename W>
  uint32_t u32(const W& what) {
    return load<uint32_t>(bytes(4, what).data());
  }
  template <typename W>
  uint64_t u64(const W& what) {
    return load<uint64_t>(bytes(8, what).data());
  }
  // A length-prefixed string whose length must fit in what remains.
  template <typename W>
  std::string_view string(const W& what) {
    const uint64_t n = u64([&] { return text(what) + " length"; });
    if (n > remaining()) {
      fail(text(what) + " has length " + std::to_string(n) + ", more than the " +
           std::to_string(remaining()) + " bytes left in the file");
    }
    return bytes(n, what);
  }

 private:
  const std::string& path_;
  const char* data_;
  uint64_t size_;
  uint64_t pos_ = 0;
};

// The shape of one encoded array: element type, count, and the bytes of its elements.
struct GgufArrayBody {
  GgufValueType elem = GgufValueType::u8;
  uint64_t count = 0;
  std::string_view bytes;
};

}  // namespace

struct GgufParser {
  template <typename W>
  static GgufValueType value_type(GgufCursor& c, const W& what) {
    const uint32_t id = c.u32([&] { return text(what) + " type"; });
    if (id > static_cast<uint32_t>(GgufValueType::f64)) {
      c.fail(text(what) + " has unknown value type " + std::to_string(id));
    }
    return static_cast<GgufValueType>(id);
  }

  // Validates the scalar elements of `count` values of `t` in `bytes`.
  template <typename W>
  static void check_scalars(GgufCursor& c, GgufValueType t, std::string_view bytes, const W& what) {
    if (t != GgufValueType::boolean) return;
    for (size_t i = 0; i < bytes.size(); ++i) {
      const auto b = static_cast<unsigned char>(bytes[i]);
      if (b > 1) {
        c.fail(text(what) + " holds the bool value " + std::to_string(b) + " (not 0 or 1)");
      }
    }
  }

  // Reads the body of an array (element type, count, elements). `path` holds the indices of
  // the enclosing arrays of arrays, for messages. Strings are indexed into `strings` when it
  // is not null; inner arrays are only walked.
  static GgufArrayBody array_body(GgufCursor& c, const std::string& what,
                                  std::vector<uint64_t>& path,
                                  std::vector<std::string_view>* strings) {
    auto where = [&] {
      std::string s = what;
      for (uint64_t i : path) s += "[" + std::to_string(i) + "]";
      return s;
    };
    if (path.size() >= kMaxArrayDepth) {
      c.fail(where() + " nests arrays more than " + std::to_string(kMaxArrayDepth) + " deep");
    }
    GgufArrayBody a;
    a.elem = value_type(c, [&] { return where() + " element"; });
    a.count = c.u64([&] { return where() + " length"; });
    const uint64_t start = c.pos();
    const char* start_ptr = c.here();
    auto check_count = [&](uint64_t min_bytes) {
      if (a.count > c.remaining() / min_bytes) {
        c.fail(where() + " has length " + std::to_string(a.count) + ", more than the " +
               std::to_string(c.remaining()) + " bytes left in the file could hold");
      }
    };
    if (const size_t size = scalar_size(a.elem)) {
      check_count(size);
      a.bytes = c.bytes(a.count * size, where);
      check_scalars(c, a.elem, a.bytes, where);
      return a;
    }
    if (a.elem == GgufValueType::string) {
      check_count(8);
      if (strings) strings->reserve(static_cast<size_t>(std::min<uint64_t>(a.count, 1u << 20)));
      for (uint64_t i = 0; i < a.count; ++i) {
        const std::string_view s =
            c.string([&] { return where() + " element " + std::to_string(i); });
        if (strings) strings->push_back(s);
      }
    } else {
      check_count(kMinNestedBytes);
      for (uint64_t i = 0; i < a.count; ++i) {
        path.push_back(i);
        array_body(c, what, path, nullptr);
        path.pop_back();
      }
    }
    a.bytes = std::string_view(start_ptr, static_cast<size_t>(c.pos() - start));
    return a;
  }

  static GgufValue make_array(const std::shared_ptr<const detail::GgufSource>& src,
                              std::string_view key, const GgufArrayBody& a,
                              std::vector<std::string_view>&& strings) {
    GgufValue v;
    v.src_ = src;
    v.key_ = key;
    v.type_ = GgufValueType::array;
    v.elem_type_ = a.elem;
    v.count_ = a.count;
    v.bytes_ = a.bytes;
    if (a.elem == GgufValueType::string) {
      v.strings_ = std::make_shared<const std::vector<std::string_view>>(std::move(strings));
    }
    return v;
  }

  // One value of type `t` (the type id already read).
  static GgufValue value(GgufCursor& c, const std::shared_ptr<const detail::GgufSource>& src,
                         std::string_view key, GgufValueType t, const std::string& what) {
    if (t == GgufValueType::array) {
      std::vector<std::string_view> strings;
      std::vector<uint64_t> path;
      const GgufArrayBody a = array_body(c, what, path, &strings);
      return make_array(src, key, a, std::move(strings));
    }
    GgufValue v;
    v.src_ = src;
    v.key_ = key;
    v.type_ = t;
    if (t == GgufValueType::string) {
      v.bytes_ = c.string(what);
    } else {
      v.bytes_ = c.bytes(scalar_size(t), what);
      check_scalars(c, t, v.bytes_, what);
    }
    return v;
  }

  // Decodes inner arrays [first, first + n) of an array of arrays (validated when the file
  // was opened); the ones before `first` are only walked.
  static std::vector<GgufValue> inner_arrays(const GgufValue& outer, uint64_t first, uint64_t n) {
    GgufCursor c(outer.src_->path, outer.bytes_.data(), outer.bytes_.size());
    const std::string label = outer.label();
    std::vector<uint64_t> indices;
    for (uint64_t i = 0; i < first; ++i) array_body(c, label, indices, nullptr);
    std::vector<GgufValue> out;
    out.reserve(static_cast<size_t>(std::min<uint64_t>(n, kMaxReserve)));
    for (uint64_t i = first; i < first + n; ++i) {
      std::vector<std::string_view> strings;
      const GgufArrayBody a = array_body(c, label, indices, &strings);
      GgufValue v = make_array(outer.src_, outer.key_, a, std::move(strings));
      v.index_ = static_cast<int64_t>(i);
      out.push_back(std::move(v));
    }
    return out;
  }

  static GgufFile open(const std::string& path);
};

namespace {

constexpr std::pair<uint32_t, const char*> kRetiredTypes[] = {
    {4, "Q4_2"},      {5, "Q4_3"},        {31, "Q4_0_4_4"},   {32, "Q4_0_4_8"},
    {33, "Q4_0_8_8"}, {36, "IQ4_NL_4_4"}, {37, "IQ4_NL_4_8"}, {38, "IQ4_NL_8_8"},
};

template <typename W>
GgmlType tensor_type(GgufCursor& c, const W& what) {
  const uint32_t id = c.u32([&] { return text(what) + " type"; });
  if (auto t = ggml_type_from_id(id)) return *t;
  for (const auto& [rid, name] : kRetiredTypes) {
    if (rid == id) {
      c.fail(text(what) + " has type " + name + " (" + std::to_string(id) +
             "), which ggml no longer supports; convert the model again");
    }
  }
  c.fail(text(what) + " has unknown ggml type " + std::to_string(id));
}

uint32_t byteswap32(uint32_t v) {
  return (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) | (v << 24);
}

}  // namespace

GgufFile GgufParser::open(const std::string& path) {
  GgufFile f;
  auto src = std::make_shared<detail::GgufSource>();
  src->path = path;
  src->map = MappedFile::open(path);
  f.src_ = src;
  const auto* data = reinterpret_cast<const char*>(src->map->data());
  const uint64_t size = src->map->size();
  GgufCursor c(path, data, size);

  if (size < 4 || std::memcmp(data, "GGUF", 4) != 0) {
    c.fail(size < 4 ? "file is " + std::to_string(size) + " bytes, too small to be GGUF"
                    : "not a GGUF file (it does not start with the magic 'GGUF')");
  }
  c.bytes(4, "magic");
  f.version_ = c.u32("version");
  if (f.version_ != 2 && f.version_ != 3) {
    const uint32_t swapped = byteswap32(f.version_);
    if (swapped >= 1 && swapped <= 3) c.fail("big-endian GGUF files are not supported");
    if (f.version_ == 1) {
      c.fail("GGUF version 1 is not supported (only versions 2 and 3); convert the model again");
    }
    c.fail("GGUF version " + std::to_string(f.version_) +
           " is not supported (only versions 2 and 3)");
  }
  const uint64_t tensor_count = c.u64("tensor count");
  const uint64_t kv_count = c.u64("metadata count");
  if (tensor_count > c.remaining() / kMinTensorBytes) {
    c.fail("tensor count " + std::to_string(tensor_count) + " is more than the " +
           std::to_string(c.remaining()) + " bytes left in the file could describe");
  }
  if (kv_count > c.remaining() / kMinKvBytes ||
      kv_count * kMinKvBytes + tensor_count * kMinTensorBytes > c.remaining()) {
    c.fail("metadata count " + std::to_string(kv_count) + " is more than the " +
           std::to_string(c.remaining()) + " bytes left in the file could hold");
  }

  // Metadata.
  f.metadata_.reserve(static_cast<size_t>(std::min<uint64_t>(kv_count, kMaxReserve)));
  for (uint64_t i = 0; i < kv_count; ++i) {
    const std::string_view key =
        c.string([&] { return "key of metadata entry " + std::to_string(i); });
    const std::string what = "metadata key " + quote(key);
    const GgufValueType t = value_type(c, what);
    GgufValue v = value(c, src, key, t, what);
    if (!f.key_index_.emplace(key, f.metadata_.size()).second) c.fail(what + " appears twice");
    f.metadata_.emplace_back(std::string(key), std::move(v));
  }
  uint64_t alignment = kDefaultAlignment;
  if (const GgufValue* a = f.find("general.alignment")) {
    alignment = a->as_u64();
    if (alignment == 0 || !std::has_single_bit(alignment)) {
      c.fail("general.alignment is " + std::to_string(alignment) + ", which is not a power of two");
    }
  }
  f.alignment_ = static_cast<size_t>(alignment);

  // Tensor infos; offsets are relative to the data section until its start is known.
  f.tensors_.reserve(static_cast<size_t>(std::min<uint64_t>(tensor_count, kMaxReserve)));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const std::string_view name = c.string([&] { return "name of tensor " + std::to_string(i); });
    auto what = [&] { return "tensor " + quote(name); };
    if (!f.tensor_index_.emplace(name, f.tensors_.size()).second) c.fail(what() + " appears twice");
    GgufTensorInfo t;
    t.name = std::string(name);
    const uint32_t n_dims = c.u32([&] { return what() + " dimension count"; });
    if (n_dims > kMaxDims) {
      c.fail(what() + " has " + std::to_string(n_dims) + " dimensions (GGUF allows at most " +
             std::to_string(kMaxDims) + ")");
    }
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const uint64_t n = c.u64([&] { return what() + " dimension " + std::to_string(d); });
      if (n == 0) c.fail(what() + " has dimension " + std::to_string(d) + " of size 0");
      // ggml counts elements in int64.
      if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / elements) {
        c.fail(what() + " has dimensions whose product overflows");
      }
      elements *= n;
      t.dims.push_back(n);
    }
    t.type = tensor_type(c, what);
    t.offset = c.u64([&] { return what() + " offset"; });
    const auto block = static_cast<uint64_t>(ggml_block_size(t.type));
    const uint64_t row = t.dims.empty() ? 1 : t.dims[0];
    if (row % block != 0) {
      c.fail(what() + " has type " + std::string(ggml_type_name(t.type)) + " and rows of " +
             std::to_string(row) + " elements, not a multiple of its block size " +
             std::to_string(block));
    }
    const uint64_t blocks = elements / block;
    const uint64_t block_bytes = ggml_block_bytes(t.type);
    if (blocks > std::numeric_limits<uint64_t>::max() / block_bytes) {
      c.fail(what() + " is larger than any file could hold");
    }
    t.nbytes = blocks * block_bytes;
    f.tensors_.push_back(std::move(t));
  }

  // The data section starts at the first multiple of the alignment after the header.
  const uint64_t header_end = c.pos();
  const uint64_t pad = (alignment - header_end % alignment) % alignment;
  f.data_offset_ = header_end + pad;
  if (!f.tensors_.empty() && (pad > size - header_end)) {
    c.fail("the data section (at offset " + std::to_string(f.data_offset_) +
           ") starts past the end of the file (" + std::to_string(size) + " bytes)");
  }
  const uint64_t data_size = f.tensors_.empty() ? 0 : size - f.data_offset_;
  for (GgufTensorInfo& t : f.tensors_) {
    const std::string what = "tensor " + quote(t.name);
    if (t.offset % alignment != 0) {
      c.fail(what + " has offset " + std::to_string(t.offset) +
             ", not a multiple of the alignment " + std::to_string(alignment));
    }
    if (t.offset > data_size || t.nbytes > data_size - t.offset) {
      c.fail(what + " (" + std::to_string(t.nbytes) + " bytes at data offset " +
             std::to_string(t.offset) + ") extends past the end of the file (" +
             std::to_string(data_size) + " bytes of tensor data)");
    }
    t.offset += f.data_offset_;
  }
  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(f.tensors_.size());
  for (const GgufTensorInfo& t : f.tensors_) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const GgufTensorInfo& a = *by_offset[i - 1];
    const GgufTensorInfo& b = *by_offset[i];
    if (a.offset + a.nbytes > b.offset) {
      c.fail("tensors " + quote(a.name) + " and " + quote(b.name) + " overlap");
    }
  }
  return f;
}

// ---- GgufFile ------------------------------------------------------------------------------

GgufFile GgufFile::open(const std::string& path) {
  return GgufParser::open(path);
}

const std::string& GgufFile::path() const {
  static const std::string kEmpty;
  return src_ ? src_->path : kEmpty;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  const auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

const GgufValue& GgufFile::get(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) throw Error(path() + ": metadata key " + quote(key) + " is missing");
  return *v;
}

std::optional<uint64_t> GgufFile::find_u64(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional<uint64_t>(v->as_u64()) : std::nullopt;
}
std::optional<int64_t> GgufFile::find_i64(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional<int64_t>(v->as_i64()) : std::nullopt;
}
std::optional<double> GgufFile::find_f64(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional<double>(v->as_f64()) : std::nullopt;
}
std::optional<bool> GgufFile::find_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional<bool>(v->as_bool()) : std::nullopt;
}
std::optional<std::string_view> GgufFile::find_string(std::string_view key) const {
  const GgufValue* v = find(key);
  return v ? std::optional<std::string_view>(v->as_string()) : std::nullopt;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const uint8_t* GgufFile::tensor_data(const GgufTensorInfo& t) const {
  const uint64_t size = src_ ? src_->map->size() : 0;
  if (t.offset > size || t.nbytes > size - t.offset) {
    throw Error(path() + ": tensor " + quote(t.name) + " does not lie inside this file");
  }
  return src_->map->data() + t.offset;
}

std::shared_ptr<const void> GgufFile::keepalive() const {
  return src_;
}

// ---- GgufValue -----------------------------------------------------------------------------

std::string GgufValue::label() const {
  std::string s = "metadata key " + quote(key_);
  if (index_ >= 0) s += " element " + std::to_string(index_);
  return s;
}

std::string GgufValue::type_description() const {
  if (type_ != GgufValueType::array) return std::string(gguf_value_type_name(type_));
  return "array of " + std::string(gguf_value_type_name(elem_type_));
}

void GgufValue::mismatch(const std::string& expected) const {
  const std::string path = src_ ? src_->path : std::string("gguf");
  throw Error(path + ": " + label() + " has type " + type_description() + ", expected " + expected);
}

uint64_t GgufValue::as_u64() const {
  if (!is_integer(type_)) mismatch("an integer");
  const Int v = load_int(type_, bytes_.data());
  if (v.negative) {
    throw Error(src_->path + ": " + label() + " is " + int_text(v) + ", expected a value >= 0");
  }
  return v.u;
}

int64_t GgufValue::as_i64() const {
  if (!is_integer(type_)) mismatch("an integer");
  const Int v = load_int(type_, bytes_.data());
  if (!v.negative && v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw Error(src_->path + ": " + label() + " is " + int_text(v) + ", too large for int64");
  }
  return v.negative ? v.i : static_cast<int64_t>(v.u);
}

uint32_t GgufValue::as_u32() const {
  const uint64_t v = as_u64();
  if (v > std::numeric_limits<uint32_t>::max()) {
    throw Error(src_->path + ": " + label() + " is " + std::to_string(v) +
                ", too large for uint32");
  }
  return static_cast<uint32_t>(v);
}

int32_t GgufValue::as_i32() const {
  const int64_t v = as_i64();
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    throw Error(src_->path + ": " + label() + " is " + std::to_string(v) +
                ", out of the range of int32");
  }
  return static_cast<int32_t>(v);
}

double GgufValue::as_f64() const {
  if (type_ != GgufValueType::f32 && type_ != GgufValueType::f64 && !is_integer(type_)) {
    mismatch("a number");
  }
  return load_number(type_, bytes_.data());
}

bool GgufValue::as_bool() const {
  if (type_ != GgufValueType::boolean) mismatch("bool");
  return bytes_[0] != 0;
}

std::string_view GgufValue::as_string() const {
  if (type_ != GgufValueType::string) mismatch("string");
  return bytes_;
}

GgufValueType GgufValue::element_type() const {
  if (type_ != GgufValueType::array) mismatch("an array");
  return elem_type_;
}

uint64_t GgufValue::size() const {
  if (type_ != GgufValueType::array) mismatch("an array");
  return count_;
}

GgufValue GgufValue::at(uint64_t i) const {
  if (type_ != GgufValueType::array) mismatch("an array");
  if (i >= count_) {
    throw Error(src_->path + ": " + label() + ": index " + std::to_string(i) +
                " is out of range for an array of " + std::to_string(count_));
  }
  if (elem_type_ == GgufValueType::array) {
    return std::move(GgufParser::inner_arrays(*this, i, 1).front());
  }
  GgufValue v;
  v.src_ = src_;
  v.key_ = key_;
  v.index_ = static_cast<int64_t>(i);
  v.type_ = elem_type_;
  if (elem_type_ == GgufValueType::string) {
    v.bytes_ = (*strings_)[static_cast<size_t>(i)];
  } else {
    const size_t size = scalar_size(elem_type_);
    v.bytes_ = bytes_.substr(static_cast<size_t>(i) * size, size);
  }
  return v;
}

std::vector<GgufValue> GgufValue::elements() const {
  if (type_ != GgufValueType::array) mismatch("an array");
  if (elem_type_ == GgufValueType::array) return GgufParser::inner_arrays(*this, 0, count_);
  std::vector<GgufValue> out;
  out.reserve(static_cast<size_t>(count_));
  for (uint64_t i = 0; i < count_; ++i) out.push_back(at(i));
  return out;
}

const std::vector<std::string_view>& GgufValue::as_string_array() const {
  if (type_ != GgufValueType::array || elem_type_ != GgufValueType::string) {
    mismatch("an array of string");
  }
  return *strings_;
}

std::vector<int64_t> GgufValue::as_int_array() const {
  if (type_ != GgufValueType::array || !is_integer(elem_type_)) mismatch("an array of integers");
  std::vector<int64_t> out(static_cast<size_t>(count_));
  const size_t size = scalar_size(elem_type_);
  for (size_t i = 0; i < out.size(); ++i) {
    const Int v = load_int(elem_type_, bytes_.data() + i * size);
    if (!v.negative && v.u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      throw Error(src_->path + ": " + label() + " element " + std::to_string(i) + " is " +
                  int_text(v) + ", too large for int64");
    }
    out[i] = v.negative ? v.i : static_cast<int64_t>(v.u);
  }
  return out;
}

std::vector<float> GgufValue::as_float_array() const {
  if (type_ != GgufValueType::array ||
      !(elem_type_ == GgufValueType::f32 || elem_type_ == GgufValueType::f64 ||
        is_integer(elem_type_))) {
    mismatch("an array of numbers");
  }
  std::vector<float> out(static_cast<size_t>(count_));
  if (elem_type_ == GgufValueType::f32) {
    if (!out.empty()) std::memcpy(out.data(), bytes_.data(), out.size() * sizeof(float));
    return out;
  }
  const size_t size = scalar_size(elem_type_);
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<float>(load_number(elem_type_, bytes_.data() + i * size));
  }
  return out;
}

std::string_view GgufValue::raw_elements() const {
  if (type_ != GgufValueType::array || scalar_size(elem_type_) == 0) {
    mismatch("an array of numbers or bools");
  }
  return bytes_;
}

}  // namespace anvil
