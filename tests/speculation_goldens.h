// Helpers for the speculative-decoding tests: a fixture whose generation_config.json holds a
// golden's assistant settings, speculative sampling's statistics, and what a recorded call of
// transformers' assisted generation (a golden's "drafts" and "kept": each check step's draft length
// and kept tokens) adds up to, as SpeculationStats counts it.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "anvil/model.h"
#include "generate/speculative.h"
#include "temp_dir.h"
#include "test_data.h"

namespace anvil::test {

/// Fixture `name`'s config and weights (linked into `dir`) with `generation_config` as its
/// generation_config.json.
inline CausalLM fixture_with_generation_config(const TempDir& dir, const std::string& name,
                                               const nlohmann::json& generation_config) {
  for (const char* file : {"config.json", "model.safetensors"}) {
    std::filesystem::create_symlink(model_dir(name) + "/" + file, dir.file(file));
  }
  std::ofstream(dir.file("generation_config.json")) << generation_config.dump();
  return CausalLM::from_pretrained(dir.path());
}

inline SpeculationStats speculation_totals(const nlohmann::json& call) {
  SpeculationStats want;
  for (int64_t d : call.at("drafts").get<std::vector<int64_t>>()) {
    want.steps += d > 0;  // a step without a draft is not counted
    want.drafted += d;
  }
  for (int64_t k : call.at("kept").get<std::vector<int64_t>>()) want.accepted += k;
  return want;
}

/// Speculative sampling, drafts drawn from q and checked against the model's p (or the ensemble
/// w p + (1 - w) q): over 200,000 draws the tokens follow that target v and a draft is kept with
/// probability sum(min(v, q)).
inline void expect_drafts_follow_target(const std::vector<float>& p, const std::vector<float>& q,
                                        std::optional<double> weight, std::mt19937_64& rng) {
  std::vector<float> scores;
  for (float x : p) scores.push_back(x > 0 ? std::log(x) : -INFINITY);
  constexpr int kDraws = 200000;
  std::vector<int> seen(p.size());
  int kept = 0;
  std::discrete_distribution<int64_t> from_q(q.begin(), q.end());
  for (int i = 0; i < kDraws; ++i) {
    const int64_t drafted = from_q(rng);
    const int64_t out = speculative_pick(scores, drafted, q, rng, weight);
    ++seen[static_cast<size_t>(out)];
    kept += out == drafted;
  }
  double overlap = 0;
  for (size_t v = 0; v < p.size(); ++v) {
    const double target = weight ? *weight * p[v] + (1 - *weight) * q[v] : p[v];
    EXPECT_NEAR(static_cast<double>(seen[v]) / kDraws, target, 0.005) << "token " << v;
    overlap += std::min(target, static_cast<double>(q[v]));
  }
  EXPECT_NEAR(static_cast<double>(kept) / kDraws, overlap, 0.005);
}

}  // namespace anvil::test
