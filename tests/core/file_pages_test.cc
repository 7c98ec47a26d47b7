// Dropping a read-only file mapping's pages gives them back and keeps the bytes (read from the
// file again); anything that is not such a mapping is left alone.
#include "core/file_pages.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "formats/mapped_file.h"

namespace anvil {
namespace {

class FilePages : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("anvil_file_pages_" + std::to_string(::getpid()) + ".bin"))
                .string();
    bytes_.resize(64 * 4096 + 123);
    for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = static_cast<char>(i * 131 + 7);
    std::ofstream(path_, std::ios::binary).write(bytes_.data(), std::streamsize(bytes_.size()));
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::string path_;
  std::vector<char> bytes_;
};

TEST_F(FilePages, DropsAMappingsWholePagesAndKeepsItsBytes) {
  const auto f = MappedFile::open(path_);
  const auto* data = reinterpret_cast<const char*>(f->data());
  ASSERT_EQ(std::string(data, bytes_.size()), std::string(bytes_.begin(), bytes_.end()));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // From 100 bytes in to 100 bytes before the end: the whole pages strictly inside.
  const size_t dropped = drop_mapped_pages(data + 100, bytes_.size() - 200);
  EXPECT_EQ(dropped, (bytes_.size() - 100) / page * page - page);
  EXPECT_EQ(std::string(data, bytes_.size()), std::string(bytes_.begin(), bytes_.end()));
  // Less than a page: nothing whole to drop.
  EXPECT_EQ(drop_mapped_pages(data + 1, page - 2), 0u);
  // Past the mapping's end: refused.
  EXPECT_EQ(drop_mapped_pages(data, f->size() + 1), 0u);
}

TEST_F(FilePages, LeavesOtherMemoryAlone) {
  std::vector<char> anonymous(bytes_);
  EXPECT_EQ(drop_mapped_pages(anonymous.data(), anonymous.size()), 0u);
  EXPECT_EQ(anonymous, bytes_);
  const char* gone = nullptr;
  {
    const auto f = MappedFile::open(path_);
    gone = reinterpret_cast<const char*>(f->data());
  }
  // An unmapped file's range is no longer registered (its address is not touched).
  EXPECT_EQ(drop_mapped_pages(gone, bytes_.size()), 0u);
}

}  // namespace
}  // namespace anvil
