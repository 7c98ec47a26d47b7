// Sentence-embedding pooling (generate/pooling.h).
#include "generate/pooling.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "anvil/error.h"
#include "formats/mapped_file.h"

namespace anvil {

Pooling pooling_named(const std::string& name) {
  if (name == "last") return Pooling::last;
  if (name == "mean") return Pooling::mean;
  if (name == "cls") return Pooling::cls;
  if (name == "max") return Pooling::max;
  if (name == "mean_sqrt_len") return Pooling::mean_sqrt_len;
  if (name == "weighted_mean") return Pooling::weighted_mean;
  throw Error("pooling '" + name +
              "': anvil pools by last, mean, cls, max, mean_sqrt_len or weighted_mean");
}

std::vector<float> pool(std::span<const float> states, int64_t tokens, int64_t hidden,
                        Pooling pooling, bool normalize) {
  if (tokens < 1 || hidden < 1 || static_cast<int64_t>(states.size()) != tokens * hidden) {
    throw Error("pool: " + std::to_string(states.size()) + " values are not " +
                std::to_string(tokens) + " tokens x " + std::to_string(hidden));
  }
  const auto row = [&](int64_t t) { return states.subspan(static_cast<size_t>(t * hidden)); };
  std::vector<double> v(static_cast<size_t>(hidden), 0.0);
  switch (pooling) {
    case Pooling::last:
    case Pooling::cls: {
      const auto r = row(pooling == Pooling::last ? tokens - 1 : 0);
      for (int64_t i = 0; i < hidden; ++i) v[i] = r[i];
      break;
    }
    case Pooling::max:
      std::fill(v.begin(), v.end(), -INFINITY);
      for (int64_t t = 0; t < tokens; ++t) {
        for (int64_t i = 0; i < hidden; ++i) v[i] = std::max(v[i], static_cast<double>(row(t)[i]));
      }
      break;
    case Pooling::mean:
    case Pooling::mean_sqrt_len:
    case Pooling::weighted_mean: {
      double weights = 0.0;
      for (int64_t t = 0; t < tokens; ++t) {
        const double w = pooling == Pooling::weighted_mean ? static_cast<double>(t + 1) : 1.0;
        weights += w;
        for (int64_t i = 0; i < hidden; ++i) v[i] += w * row(t)[i];
      }
      const double divisor =
          pooling == Pooling::mean_sqrt_len ? std::sqrt(static_cast<double>(tokens)) : weights;
      for (double& x : v) x /= divisor;
      break;
    }
  }
  if (normalize) {
    double norm = 0.0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);
    if (norm > 0) {
      for (double& x : v) x /= norm;
    }
  }
  return {v.begin(), v.end()};
}

namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  try {
    return nlohmann::json::parse(read_text_file(path.string()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path.string() + ": not valid JSON (" + e.what() + ")");
  }
}

// The Pooling module's config.json flags, in sentence-transformers' names.
Pooling pooling_of(const nlohmann::json& cfg, const std::string& source) {
  if (!cfg.is_object()) throw Error(source + ": must be a JSON object");
  const auto on = [&](const char* key) {
    const auto it = cfg.find(key);
    return it != cfg.end() && it->is_boolean() && it->get<bool>();
  };
  if (on("pooling_mode_lasttoken")) return Pooling::last;
  if (on("pooling_mode_cls_token")) return Pooling::cls;
  if (on("pooling_mode_max_tokens")) return Pooling::max;
  if (on("pooling_mode_mean_sqrt_len_tokens")) return Pooling::mean_sqrt_len;
  if (on("pooling_mode_weightedmean_tokens")) return Pooling::weighted_mean;
  if (on("pooling_mode_mean_tokens")) return Pooling::mean;
  throw Error(source +
              ": no pooling mode anvil has is on (lasttoken, cls_token, max_tokens, "
              "mean_sqrt_len_tokens, weightedmean_tokens, mean_tokens)");
}

}  // namespace

SentenceTransformersConfig read_sentence_transformers(const std::string& folder) {
  namespace fs = std::filesystem;
  SentenceTransformersConfig out;
  const fs::path modules_path = fs::path(folder) / "modules.json";
  if (!fs::is_directory(folder) || !fs::exists(modules_path)) return out;
  const nlohmann::json modules = read_json(modules_path);
  if (!modules.is_array()) throw Error(modules_path.string() + ": must be a JSON array of modules");
  out.normalize = false;
  for (const auto& m : modules) {
    if (!m.is_object() || !m.contains("type") || !m["type"].is_string()) {
      throw Error(modules_path.string() + ": each module needs a string 'type'");
    }
    const std::string type = m["type"];
    if (type.ends_with("models.Normalize")) out.normalize = true;
    if (type.ends_with("models.Pooling")) {
      const std::string dir = m.contains("path") && m["path"].is_string() ? m["path"] : "";
      const fs::path cfg = fs::path(folder) / dir / "config.json";
      if (!fs::exists(cfg))
        throw Error(modules_path.string() + ": its Pooling module has no " + cfg.string());
      out.pooling = pooling_of(read_json(cfg), cfg.string());
    }
  }
  return out;
}

}  // namespace anvil
