// `anvil bench`: throughput of a model on a device, with the decode floor beside it.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "core/thread_pool.h"
#include "generate/bench.h"

namespace anvil::cli {

void add_bench(CLI::App& app) {
  struct Flags {
    std::string model;
    BenchOptions bench;
    bool json = false, membw_only = false;
    ModelFlags model_flags;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("bench", "measure prefill/decode throughput against the floor");
  cmd->add_option("MODEL", f->model, "model folder, .gguf or Hub id (default: the default model)");
  cmd->add_option("--batch", f->bench.batch, "rows decoded together")->capture_default_str();
  cmd->add_option("--prompt-len", f->bench.prompt_len, "prompt tokens")->capture_default_str();
  cmd->add_option("--gen-len", f->bench.gen_len, "decoded tokens")->capture_default_str();
  cmd->add_option("--repeats", f->bench.repeats, "runs; the median is reported")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "print one JSON object");
  cmd->add_flag("--membw", f->membw_only, "only measure the streaming-read bandwidth");
  f->model_flags.add_to(*cmd);
  cmd->callback([f] {
    if (f->membw_only) {
      if (f->model_flags.threads > 0) set_num_threads(f->model_flags.threads);
      const Device device = f->model_flags.options().device_map.empty()
                                ? Device::cpu()
                                : Device::parse(f->model_flags.options().device_map);
      const bool cpu = device.type == DeviceType::cpu;
      const double bw = cpu ? measure_read_bandwidth() : measure_device_bandwidth(device);
      if (f->json) {
        std::printf("%s\n", nlohmann::json{{"membw_gb_per_s", bw / 1e9},
                                           {"device", device.str()},
                                           {"threads", num_threads()}}
                                .dump()
                                .c_str());
      } else if (cpu) {
        std::printf("read bandwidth: %.1f GB/s (%d threads)\n", bw / 1e9, num_threads());
      } else {
        std::printf("copy bandwidth of %s: %.1f GB/s (bytes read + written)\n",
                    device.str().c_str(), bw / 1e9);
      }
      return;
    }
    const CausalLM model =
        CausalLM::from_pretrained(model_or_default(f->model), f->model_flags.options());
    const BenchResult r = run_bench(model, f->bench);
    if (f->json) {
      nlohmann::ordered_json j;
      j["model"] = model_or_default(f->model);
      j["device"] = model.device().str();
      j["dtype"] = std::string(dtype_name(model.dtype()));
      j["threads"] = num_threads();
      j["batch"] = f->bench.batch;
      j["prompt_len"] = f->bench.prompt_len;
      j["gen_len"] = f->bench.gen_len;
      j["prefill_tok_s"] = r.prefill_tokens_per_s;
      j["decode_tok_s"] = r.decode_tokens_per_s;
      j["ttft_s"] = r.time_to_first_token_s;
      j["peak_rss_mb"] = static_cast<double>(r.peak_rss_bytes) / 1e6;
      j["weight_bytes_per_step"] = r.weight_bytes;
      j["membw_gb_s"] = r.membw_bytes_per_s / 1e9;
      j["membw_min_gb_s"] = r.membw_min_bytes_per_s / 1e9;
      j["membw_max_gb_s"] = r.membw_max_bytes_per_s / 1e9;
      j["decode_floor_tok_s"] = r.decode_floor_tokens_per_s;
      j["decode_fraction_of_floor"] = r.decode_fraction_of_floor;
      j["kv_bytes_per_step"] = r.kv_bytes_per_step;
      j["decode_floor_with_kv_tok_s"] = r.decode_floor_with_kv_tokens_per_s;
      j["decode_fraction_of_floor_with_kv"] = r.decode_fraction_of_floor_with_kv;
      j["decode_steps_queued"] = r.decode_steps_queued;
      std::printf("%s\n", j.dump().c_str());
      return;
    }
    std::printf("model      %s (%s on %s, %d threads)\n", model_or_default(f->model).c_str(),
                std::string(dtype_name(model.dtype())).c_str(), model.device().str().c_str(),
                num_threads());
    std::printf("prefill    %.1f tok/s (batch %lld x %lld tokens)\n", r.prefill_tokens_per_s,
                static_cast<long long>(f->bench.batch),
                static_cast<long long>(f->bench.prompt_len));
    std::printf("decode     %.1f tok/s (batch %lld, %lld tokens)\n", r.decode_tokens_per_s,
                static_cast<long long>(f->bench.batch), static_cast<long long>(f->bench.gen_len));
    std::printf("steps      %s\n", r.decode_steps_queued
                                       ? "queued ahead, each a recorded device graph replayed"
                                       : "one at a time, the host waiting for each");
    std::printf("first tok  %.3f s\n", r.time_to_first_token_s);
    std::printf("peak RSS   %.1f MB\n", static_cast<double>(r.peak_rss_bytes) / 1e6);
    std::printf("floor      %.1f tok/s (%.1f MB per step at %.1f GB/s); decode is %.0f%% of it\n",
                r.decode_floor_tokens_per_s, static_cast<double>(r.weight_bytes) / 1e6,
                r.membw_bytes_per_s / 1e9, 100.0 * r.decode_fraction_of_floor);
    std::printf(
        "with KV    %.1f tok/s (%.1f MB per step, the KV cache's %.1f MB included); "
        "decode is %.0f%% of it\n",
        r.decode_floor_with_kv_tokens_per_s,
        static_cast<double>(r.weight_bytes + r.kv_bytes_per_step) / 1e6,
        static_cast<double>(r.kv_bytes_per_step) / 1e6, 100.0 * r.decode_fraction_of_floor_with_kv);
    if (r.membw_max_bytes_per_s > 1.15 * r.membw_min_bytes_per_s) {
      std::printf("           bandwidth moved between %.1f and %.1f GB/s during the runs\n",
                  r.membw_min_bytes_per_s / 1e9, r.membw_max_bytes_per_s / 1e9);
    }
  });
}

}  // namespace anvil::cli
