// Parsing of the CLI's shared flags; every error names the flag.
#include "cli_common.h"

#include <charconv>

#include "anvil/error.h"
#include "core/thread_pool.h"

namespace anvil::cli {

std::vector<std::vector<int64_t>> parse_id_rows(const std::string& text, const std::string& flag) {
  std::vector<std::vector<int64_t>> rows(1);
  std::string token;
  auto flush = [&] {
    size_t b = token.find_first_not_of(" \t"), e = token.find_last_not_of(" \t");
    if (b == std::string::npos) throw Error(flag + ": empty value in '" + text + "'");
    const std::string t = token.substr(b, e - b + 1);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size()) {
      throw Error(flag + ": '" + t + "' is not an integer");
    }
    rows.back().push_back(v);
    token.clear();
  };
  for (char ch : text) {
    if (ch == ',') {
      flush();
    } else if (ch == ';') {
      flush();
      rows.emplace_back();
    } else {
      token += ch;
    }
  }
  flush();
  return rows;
}

void ModelFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--device", device, "device to run on: cpu, cuda, cuda:1, ...")
      ->capture_default_str();
  cmd.add_option("--dtype", dtype, "weight dtype: f32, bf16 or f16 (default: the checkpoint's)");
  cmd.add_option("--attn-implementation", attn, "sdpa (fused) or eager (materialised scores)")
      ->capture_default_str();
  cmd.add_option("--threads", threads, "CPU threads (default: ANVIL_NUM_THREADS, else all cores)");
}

ModelOptions ModelFlags::options() const {
  if (threads < 0) throw Error("--threads: must not be negative");
  if (threads > 0) set_num_threads(threads);
  ModelOptions o;
  o.device_map = device;
  o.attn_implementation = attn;
  if (!dtype.empty()) {
    auto d = parse_compute_dtype(dtype);
    if (!d) throw Error("--dtype: '" + dtype + "' is not one of f32, bf16, f16");
    o.dtype = d;
  }
  return o;
}

Batch batch_from_flags(const std::string& ids, const std::string& mask) {
  Batch b;
  b.input_ids = parse_id_rows(ids, "--input-ids");
  if (!mask.empty()) b.attention_mask = parse_id_rows(mask, "--attention-mask");
  return b;
}

}  // namespace anvil::cli
