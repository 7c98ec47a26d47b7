// GGUF v3 layout: header (magic, version, tensor count, kv count), key/values, tensor infos
// (name, dims, type, offset into the data section), padding to the alignment, tensor data.
#include "formats/gguf_writer.h"

#include <cstring>
#include <fstream>

#include "anvil/error.h"
#include "formats/ggml_quants.h"

namespace anvil {
namespace {

constexpr uint64_t kAlignment = 32;

template <class T>
void put(std::vector<std::byte>& out, T v) {
  const auto* p = reinterpret_cast<const std::byte*>(&v);
  out.insert(out.end(), p, p + sizeof v);
}

void put_string(std::vector<std::byte>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  const auto* p = reinterpret_cast<const std::byte*>(s.data());
  out.insert(out.end(), p, p + s.size());
}

uint64_t align_up(uint64_t v) {
  return (v + kAlignment - 1) / kAlignment * kAlignment;
}

}  // namespace

void GgufWriter::add_u32(const std::string& key, uint32_t v) {
  put_string(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::u32));
  put<uint32_t>(kv_, v);
  ++n_kv_;
}

void GgufWriter::add_f32(const std::string& key, float v) {
  put_string(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::f32));
  put<float>(kv_, v);
  ++n_kv_;
}

void GgufWriter::add_string(const std::string& key, const std::string& v) {
  put_string(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::string));
  put_string(kv_, v);
  ++n_kv_;
}

void GgufWriter::add_string_array(const std::string& key, const std::vector<std::string>& v) {
  put_string(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::array));
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::string));
  put<uint64_t>(kv_, v.size());
  for (const auto& s : v) put_string(kv_, s);
  ++n_kv_;
}

void GgufWriter::add_bool_array(const std::string& key, const std::vector<bool>& v) {
  put_string(kv_, key);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::array));
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::boolean));
  put<uint64_t>(kv_, v.size());
  for (bool b : v) put<uint8_t>(kv_, b ? 1 : 0);
  ++n_kv_;
}

void GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims,
                            Fill fill) {
  if (dims.empty()) throw Error("gguf writer: tensor '" + name + "' has no dimensions");
  uint64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
  const uint64_t nbytes = ggml_row_bytes(type, static_cast<int64_t>(dims[0])) * rows;
  tensors_.push_back({name, type, std::move(dims), nbytes, data_size_, std::move(fill)});
  data_size_ = align_up(data_size_ + nbytes);
}

void GgufWriter::finish() {
  std::vector<std::byte> head;
  put<uint32_t>(head, 0x46554747u);  // "GGUF"
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, n_kv_);
  head.insert(head.end(), kv_.begin(), kv_.end());
  for (const auto& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims) put<uint64_t>(head, d);
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    put<uint64_t>(head, t.offset);
  }
  head.resize(align_up(head.size()));
  std::ofstream f(path_, std::ios::binary);
  if (!f) throw Error(path_ + ": cannot open for writing");
  f.write(reinterpret_cast<const char*>(head.data()), static_cast<std::streamsize>(head.size()));
  std::vector<std::byte> buf;
  for (const auto& t : tensors_) {
    buf.assign(align_up(t.nbytes), std::byte{0});
    t.fill(std::span<std::byte>(buf.data(), t.nbytes));
    f.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(buf.size()));
  }
  if (!f) throw Error(path_ + ": write failed");
}

}  // namespace anvil
