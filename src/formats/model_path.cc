// Hub ids map to models--{org}--{name}/snapshots/{commit} in the cache, the commit read from
// refs/main as huggingface_hub writes it.
#include "formats/model_path.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "anvil/error.h"

namespace anvil {

namespace fs = std::filesystem;

std::string hf_hub_cache_dir() {
  if (const char* c = std::getenv("HF_HUB_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HF_HOME"); h && *h) return (fs::path(h) / "hub").string();
  const char* home = std::getenv("HOME");
  return (fs::path(home ? home : "/") / ".cache" / "huggingface" / "hub").string();
}

std::string resolve_model_path(const std::string& model) {
  if (model.empty()) throw Error("MODEL is empty: give a model folder or a Hub id");
  std::error_code ec;
  if (fs::exists(model, ec)) return model;
  // A Hub id is "name" or "org/name" with no further slashes and no leading dot or slash.
  const auto slash = model.find('/');
  const bool hub_like =
      model[0] != '.' && model[0] != '/' &&
      (slash == std::string::npos || model.find('/', slash + 1) == std::string::npos);
  if (!hub_like) throw Error(model + ": no such file or folder");
  std::string folder = "models--" + model;
  for (auto pos = folder.find('/'); pos != std::string::npos; pos = folder.find('/')) {
    folder.replace(pos, 1, "--");
  }
  const fs::path repo = fs::path(hf_hub_cache_dir()) / folder;
  const fs::path snapshots = repo / "snapshots";
  if (!fs::is_directory(snapshots, ec)) {
    throw Error(model + ": not a local folder, and not in the Hugging Face cache (looked for " +
                snapshots.string() + "); anvil does not download models");
  }
  std::ifstream ref(repo / "refs" / "main");
  std::string commit;
  if (ref && std::getline(ref, commit) && fs::is_directory(snapshots / commit, ec)) {
    return (snapshots / commit).string();
  }
  // No refs/main: take the most recently written snapshot.
  fs::path best;
  fs::file_time_type best_time{};
  for (const auto& e : fs::directory_iterator(snapshots, ec)) {
    if (e.is_directory() && (best.empty() || e.last_write_time() > best_time)) {
      best = e.path();
      best_time = e.last_write_time();
    }
  }
  if (best.empty()) throw Error(model + ": " + snapshots.string() + " holds no snapshot");
  return best.string();
}

}  // namespace anvil
