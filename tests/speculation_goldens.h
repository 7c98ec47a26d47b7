// What a recorded call of transformers' assisted generation (a golden's "drafts" and "kept":
// each check step's draft length and kept tokens) adds up to, as SpeculationStats counts it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "anvil/model.h"

namespace anvil::test {

inline SpeculationStats speculation_totals(const nlohmann::json& call) {
  SpeculationStats want;
  for (int64_t d : call.at("drafts").get<std::vector<int64_t>>()) {
    want.steps += d > 0;  // a step without a draft is not counted
    want.drafted += d;
  }
  for (int64_t k : call.at("kept").get<std::vector<int64_t>>()) want.accepted += k;
  return want;
}

}  // namespace anvil::test
