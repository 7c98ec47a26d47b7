// Safetensors reader: a bounds-checked parse of the header, then zero-copy tensor views of the
// mapped file. The checks follow the reference implementation (huggingface/safetensors): header
// length within the file, tensors covering the data section exactly, without overlap or holes.
#include <algorithm>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "anvil/error.h"
#include "anvil/safetensors.h"
#include "formats/mapped_file.h"

namespace anvil {
namespace {

constexpr uint64_t kMaxHeader = 100ull * 1024 * 1024;  // the reference reader's limit

struct DtypeName {
  const char* name;
  DType dtype;
};
constexpr DtypeName kDtypes[] = {
    {"F64", DType::f64},      {"F32", DType::f32},         {"F16", DType::f16},
    {"BF16", DType::bf16},    {"I64", DType::i64},         {"I32", DType::i32},
    {"I16", DType::i16},      {"I8", DType::i8},           {"U8", DType::u8},
    {"BOOL", DType::boolean}, {"F8_E4M3", DType::f8_e4m3}, {"F8_E5M2", DType::f8_e5m2},
};
// Valid safetensors dtypes that anvil recognises but cannot hold.
constexpr const char* kUnsupported[] = {"U16", "U32",     "U64",     "F8_E8M0",
                                        "F4",  "F6_E2M3", "F6_E3M2", "C64"};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(path + ": " + what);
}

DType parse_dtype(const std::string& path, const std::string& tensor, const std::string& s) {
  for (const auto& d : kDtypes) {
    if (s == d.name) return d.dtype;
  }
  for (const char* u : kUnsupported) {
    if (s == u) bad(path, "tensor '" + tensor + "' has dtype " + s + ", which anvil cannot load");
  }
  bad(path, "tensor '" + tensor + "' has unknown dtype '" + s + "'");
}

uint64_t read_u64_le(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string safetensors_dtype_name(DType t) {
  for (const auto& d : kDtypes) {
    if (d.dtype == t) return d.name;
  }
  return "?";
}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.file_ = MappedFile::open(path);
  const size_t size = f.file_->size();
  if (size < 8) {
    bad(path, "file is " + std::to_string(size) + " bytes, too small for a safetensors header");
  }
  const uint64_t header_len = read_u64_le(f.file_->data());
  if (header_len > kMaxHeader) {
    bad(path, "header length " + std::to_string(header_len) + " exceeds the 100 MB limit");
  }
  if (header_len > size - 8) {
    bad(path, "header length " + std::to_string(header_len) + " exceeds the file size " +
                  std::to_string(size) + " (truncated file?)");
  }
  const char* hdr = reinterpret_cast<const char*>(f.file_->data() + 8);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(hdr, hdr + header_len);
  } catch (const nlohmann::json::exception& e) {
    bad(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) bad(path, "header is not a JSON object");

  const size_t data_start = 8 + header_len;
  const size_t data_size = size - data_start;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) bad(path, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          bad(path, "__metadata__ value '" + m.key() + "' is not a string");
        f.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) bad(path, "entry '" + name + "' is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) {
      bad(path, "tensor '" + name + "' has no dtype string");
    }
    if (!v.contains("shape") || !v["shape"].is_array()) {
      bad(path, "tensor '" + name + "' has no shape array");
    }
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() ||
        v["data_offsets"].size() != 2) {
      bad(path, "tensor '" + name + "' has no data_offsets pair");
    }
    SafetensorsEntry e;
    e.name = name;
    e.dtype = parse_dtype(path, name, v["dtype"].get<std::string>());
    uint64_t numel = 1;
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) {
        bad(path, "tensor '" + name + "' has a shape entry that is not a non-negative integer");
      }
      const uint64_t dim = d.get<uint64_t>();
      if (dim > (1ull << 62) || __builtin_mul_overflow(numel, dim, &numel)) {
        bad(path, "tensor '" + name + "' has a shape whose size overflows");
      }
      e.shape.push_back(static_cast<int64_t>(dim));
    }
    const auto& off = v["data_offsets"];
    if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned()) {
      bad(path, "tensor '" + name + "' has data_offsets that are not non-negative integers");
    }
    const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
    if (begin > end) {
      bad(path, "tensor '" + name + "' has data_offsets [" + std::to_string(begin) + ", " +
                    std::to_string(end) + "] that end before they begin");
    }
    if (end > data_size) {
      bad(path, "tensor '" + name + "' has data_offsets [" + std::to_string(begin) + ", " +
                    std::to_string(end) + "] beyond the " + std::to_string(data_size) +
                    "-byte data section (truncated file?)");
    }
    uint64_t expected;
    if (__builtin_mul_overflow(numel, dtype_size(e.dtype), &expected) || expected != end - begin) {
      bad(path, "tensor '" + name + "' is " + std::to_string(end - begin) + " bytes but " +
                    v["dtype"].get<std::string>() + " " + shape_str(e.shape) + " needs " +
                    std::to_string(numel * dtype_size(e.dtype)));
    }
    e.offset = data_start + begin;
    e.nbytes = end - begin;
    f.entries_.push_back(std::move(e));
  }

  // The tensors must tile the data section: no overlap, no hole, nothing after the last one.
  std::vector<const SafetensorsEntry*> order;
  for (const auto& e : f.entries_) order.push_back(&e);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->nbytes < b->nbytes;
  });
  size_t cursor = data_start;
  for (const auto* e : order) {
    if (e->offset < cursor) bad(path, "tensor '" + e->name + "' overlaps another tensor");
    if (e->offset > cursor) {
      bad(path, "tensor '" + e->name + "' starts at data offset " +
                    std::to_string(e->offset - data_start) + ", leaving a hole after offset " +
                    std::to_string(cursor - data_start));
    }
    cursor = e->offset + e->nbytes;
  }
  if (cursor != size) {
    bad(path, "the tensors cover " + std::to_string(cursor - data_start) + " of the " +
                  std::to_string(data_size) + " data bytes");
  }
  for (size_t i = 0; i < f.entries_.size(); ++i) f.index_[f.entries_[i].name] = i;
  return f;
}

const std::string& SafetensorsFile::path() const {
  return file_->path();
}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Tensor SafetensorsFile::load(const std::string& name) const {
  const SafetensorsEntry* e = find(name);
  if (!e) throw Error(path() + ": no tensor named '" + name + "'");
  const uint8_t* p = file_->data() + e->offset;
  const size_t align = dtype_size(e->dtype);
  if (reinterpret_cast<uintptr_t>(p) % align == 0) {
    return Tensor::from_blob(const_cast<uint8_t*>(p), e->shape, e->dtype, Device::cpu(), file_);
  }
  Tensor t = Tensor::empty(e->shape, e->dtype);
  std::memcpy(t.raw(), p, e->nbytes);
  return t;
}

Checkpoint Checkpoint::open(const std::string& dir) {
  namespace fs = std::filesystem;
  Checkpoint c;
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  if (fs::exists(index)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_text_file(index.string()));
    } catch (const nlohmann::json::exception& e) {
      throw Error(index.string() + ": not valid JSON: " + e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) {
      throw Error(index.string() + ": has no 'weight_map' object");
    }
    std::map<std::string, size_t> shard_index;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) {
        throw Error(index.string() + ": weight_map entry '" + it.key() + "' is not a file name");
      }
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard == "..") {
        throw Error(index.string() + ": shard name '" + shard + "' is not a plain file name");
      }
      auto s = shard_index.find(shard);
      if (s == shard_index.end()) {
        c.files_.push_back(SafetensorsFile::open((fs::path(dir) / shard).string()));
        s = shard_index.emplace(shard, c.files_.size() - 1).first;
      }
      if (!c.files_[s->second].find(it.key())) {
        throw Error(index.string() + ": lists '" + it.key() + "' in " + shard +
                    ", which does not contain it");
      }
      c.where_[it.key()] = s->second;
    }
  } else if (fs::exists(single)) {
    c.files_.push_back(SafetensorsFile::open(single.string()));
    for (const auto& e : c.files_[0].entries()) c.where_[e.name] = 0;
  } else {
    throw Error(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  return c;
}

bool Checkpoint::contains(const std::string& name) const {
  return where_.count(name) != 0;
}

const SafetensorsEntry& Checkpoint::entry(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw Error("checkpoint has no tensor '" + name + "'");
  return *files_[it->second].find(name);
}

Tensor Checkpoint::load(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw Error("checkpoint has no tensor '" + name + "'");
  return files_[it->second].load(name);
}

const std::string& Checkpoint::file_of(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) throw Error("checkpoint has no tensor '" + name + "'");
  return files_[it->second].path();
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : where_) out.push_back(name);
  return out;
}

}  // namespace anvil
