// A GGUF (v3) writer for the files anvil makes itself (`anvil init-model --dtype q8_0`): metadata
// key/values, then tensors added with a function that fills their bytes, so a large model is
// written one tensor at a time. Little-endian, 32-byte alignment (general.alignment's default).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "anvil/gguf.h"

namespace anvil {

class GgufWriter {
 public:
  using Fill = std::function<void(std::span<std::byte>)>;
  explicit GgufWriter(std::string path) : path_(std::move(path)) {}

  void add_u32(const std::string& key, uint32_t v);
  void add_f32(const std::string& key, float v);
  void add_string(const std::string& key, const std::string& v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_bool_array(const std::string& key, const std::vector<bool>& v);
  /// A tensor of ggml type `type` with dims in ggml order (dims[0] is the innermost, contiguous
  /// one: a Hugging Face [out, in] matrix is {in, out}); `fill` writes its ggml_row_bytes.
  void add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> dims, Fill fill);
  /// Writes the file; throws anvil::Error on I/O failure.
  void finish();

 private:
  struct TensorEntry {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    uint64_t nbytes, offset;
    Fill fill;
  };
  std::string path_;
  std::vector<std::byte> kv_;
  uint64_t n_kv_ = 0;
  std::vector<TensorEntry> tensors_;
  uint64_t data_size_ = 0;
};

}  // namespace anvil
