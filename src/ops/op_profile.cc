#include "ops/op_profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace anvil::ops {
namespace {

struct Totals {
  std::mutex mu;
  std::map<std::string, std::pair<int64_t, double>> by_name;  // calls, milliseconds
  ~Totals() {
    std::vector<std::pair<double, std::string>> rows;
    for (const auto& [name, t] : by_name) {
      rows.emplace_back(t.second, name + " (" + std::to_string(t.first) + " calls)");
    }
    std::sort(rows.rbegin(), rows.rend());
    if (!rows.empty()) std::fprintf(stderr, "op profile (ms, each op's calls summed):\n");
    for (const auto& [ms, name] : rows) std::fprintf(stderr, "%12.2f  %s\n", ms, name.c_str());
  }
};

Totals& totals() {
  static Totals t;
  return t;
}

}  // namespace

bool op_profiling() {
  static const bool on = std::getenv("ANVIL_OP_PROFILE") != nullptr;
  return on;
}

void record_op_time(const std::string& name, double ms) {
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  auto& entry = t.by_name[name];
  ++entry.first;
  entry.second += ms;
}

}  // namespace anvil::ops
