// A read-only memory map of a whole file. Weights are used in place from the page cache
// (zero-copy), and the map stays alive as long as any tensor views it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace anvil {

class MappedFile {
 public:
  /// Maps `path`; throws anvil::Error "PATH: cannot open: REASON" on failure.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Reads a whole (small) text file; throws naming the path on failure.
std::string read_text_file(const std::string& path);

}  // namespace anvil
