// Safetensors writer: header first (padded with spaces to 8 bytes, as the reference writer
// does, so every tensor stays aligned), then each tensor's bytes filled on demand.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "anvil/error.h"
#include "anvil/safetensors.h"

namespace anvil {

void SafetensorsWriter::set_metadata(std::string key, std::string value) {
  metadata_[std::move(key)] = std::move(value);
}

void SafetensorsWriter::add(std::string name, DType dtype, Shape shape, Fill fill) {
  tensors_.push_back({std::move(name), dtype, std::move(shape), std::move(fill)});
}

void SafetensorsWriter::add(std::string name, const Tensor& t) {
  Tensor host = t.to(Device::cpu()).contiguous();
  add(std::move(name), host.dtype(), host.shape(),
      [host](std::span<std::byte> out) { std::memcpy(out.data(), host.raw(), out.size()); });
}

void SafetensorsWriter::finish() {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  size_t offset = 0;
  for (const auto& t : tensors_) {
    const size_t bytes = static_cast<size_t>(shape_numel(t.shape)) * dtype_size(t.dtype);
    header[t.name] = {{"dtype", safetensors_dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path_.c_str(), "wb"), &std::fclose);
  if (!f) throw Error(path_ + ": cannot write: " + std::strerror(errno));
  auto write = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f.get()) != n) {
      throw Error(path_ + ": write failed: " + std::strerror(errno));
    }
  };
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(text.size() >> (8 * i));
  write(len, 8);
  write(text.data(), text.size());
  std::vector<std::byte> buffer;
  for (const auto& t : tensors_) {
    buffer.resize(static_cast<size_t>(shape_numel(t.shape)) * dtype_size(t.dtype));
    t.fill(buffer);
    write(buffer.data(), buffer.size());
  }
  if (std::fflush(f.get()) != 0) throw Error(path_ + ": write failed: " + std::strerror(errno));
}

}  // namespace anvil
