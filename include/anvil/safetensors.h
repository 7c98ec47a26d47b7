/// @file safetensors.h
/// Reading and writing the safetensors format (https://huggingface.co/docs/safetensors).
/// Every length, offset and shape in a file is treated as hostile: the reader checks the
/// header length, the JSON, that each tensor's bytes lie inside the data section, that
/// dtype x shape equals its byte size, and that tensors neither overlap nor leave holes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "anvil/tensor.h"

namespace anvil {

class MappedFile;

/// One tensor entry of a safetensors header.
struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;
  size_t offset;  ///< absolute byte offset in the file
  size_t nbytes;
};

class SafetensorsFile {
 public:
  /// Opens and validates `path`; throws anvil::Error "PATH: PROBLEM" on any defect.
  static SafetensorsFile open(const std::string& path);

  const std::string& path() const;
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const SafetensorsEntry* find(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The tensor as stored, on the CPU: a zero-copy view of the mapped file when its offset is
  /// aligned for its dtype, else a copy.
  Tensor load(const std::string& name) const;

 private:
  std::shared_ptr<MappedFile> file_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

/// A model's weights: one `model.safetensors`, or shards listed by
/// `model.safetensors.index.json` (its `weight_map`).
class Checkpoint {
 public:
  /// Opens the safetensors weights of the model folder `dir`.
  static Checkpoint open(const std::string& dir);
  bool contains(const std::string& name) const;
  Tensor load(const std::string& name) const;
  const SafetensorsEntry& entry(const std::string& name) const;
  /// The file holding `name`, for messages.
  const std::string& file_of(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t> where_;
};

/// Writes tensors one at a time so a multi-gigabyte file never needs to sit in memory: add()
/// records a tensor with a function that fills its bytes; finish() writes the file.
class SafetensorsWriter {
 public:
  using Fill = std::function<void(std::span<std::byte>)>;
  explicit SafetensorsWriter(std::string path) : path_(std::move(path)) {}
  void set_metadata(std::string key, std::string value);
  void add(std::string name, DType dtype, Shape shape, Fill fill);
  /// Adds a copy of `t` (any device, any strides).
  void add(std::string name, const Tensor& t);
  void finish();

 private:
  struct Pending {
    std::string name;
    DType dtype;
    Shape shape;
    Fill fill;
  };
  std::string path_;
  std::vector<Pending> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// The safetensors dtype string ("F32", "BF16", ...) of a dtype.
std::string safetensors_dtype_name(DType t);

}  // namespace anvil
