// Paths of the test data copied from transformers' fixtures, and small helpers over it.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "anvil/backend.h"
#include "anvil/model.h"
#include "anvil/safetensors.h"

namespace anvil::test {

// Compiled-in paths, overridable by the environment so a test binary built on one machine can
// run on another (scripts/gpu-check carries it to the GPU machine).
inline std::string data_dir() {
  const char* env = std::getenv("ANVIL_TEST_DATA");
  return env && *env ? env : ANVIL_TEST_DATA;
}
inline std::string cli_path() {
  const char* env = std::getenv("ANVIL_CLI");
  return env && *env ? env : ANVIL_CLI;
}
/// The device a test parameter ("cpu", "cuda", "opencl") runs on: ordinal 0, except that
/// ANVIL_TEST_OPENCL_DEVICE names the OpenCL device where several are present (the GPU machine
/// lists a CPU's PoCL before the GPU's driver).
inline std::string device_name(const std::string& type) {
  const char* env = std::getenv("ANVIL_TEST_OPENCL_DEVICE");
  return type == "opencl" && env && *env ? env : type;
}
/// Why `type`'s backend cannot run tests here ("" when it can): a parameterised test skips
/// with "<type> tests skipped: <reason>".
inline std::string unavailable_reason(DeviceType type) {
  for (const BackendReport& r : report_backends()) {
    if (r.type == type && !r.available) return r.reason;
  }
  return "";
}
inline std::string model_dir(const std::string& name) {
  return data_dir() + "/" + name + "/model";
}
inline std::string golden_path(const std::string& name) {
  return data_dir() + "/" + name + "/golden.safetensors";
}

/// A golden int64 tensor [rows, cols] as rows of ids.
inline std::vector<std::vector<int64_t>> id_rows(const SafetensorsFile& f,
                                                 const std::string& name) {
  const Tensor t = f.load(name);
  const auto v = t.to_i64_vector();
  const int64_t cols = t.size(-1);
  std::vector<std::vector<int64_t>> rows;
  for (size_t i = 0; i < v.size(); i += cols)
    rows.emplace_back(v.begin() + i, v.begin() + i + cols);
  return rows;
}

/// A test-parameter string as a GoogleTest name ('-' is not allowed there).
/// Greedy decoding of exactly `tokens` new tokens (eos ignored), as the goldens' gen_long_a.
inline GenerateOptions greedy_exactly(int tokens) {
  GenerateOptions g;
  g.max_new_tokens = tokens;
  g.min_new_tokens = tokens;
  g.do_sample = false;
  return g;
}

struct ParamName {
  template <class Info>
  std::string operator()(const Info& info) const {
    std::string n = info.param;
    for (char& c : n) {
      if (c == '-' || c == '/') c = '_';
    }
    return n;
  }
};

}  // namespace anvil::test
