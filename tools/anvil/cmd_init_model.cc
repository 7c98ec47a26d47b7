// `anvil init-model`: a random-weight model folder with a public model's shapes.
#include <cstdio>

#include "anvil/error.h"
#include "commands.h"
#include "models/init_model.h"

namespace anvil::cli {

void add_init_model(CLI::App& app) {
  struct Flags {
    std::string like, out, dtype = "bf16", format = "auto";
    uint64_t seed = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "init-model", "write a random-weight model folder with the shapes of a public model");
  std::string known;
  for (const auto& c : embedded_configs())
    known += (known.empty() ? "" : "|") + std::string(c.name);
  cmd->add_option("--like", f->like, known + ", or the path of a config.json")->required();
  cmd->add_option("--out", f->out, "output folder")->required();
  cmd->add_option("--seed", f->seed, "random seed")->capture_default_str();
  cmd->add_option("--dtype", f->dtype,
                  "f32, bf16, f16 (model.safetensors), or a GGUF block type (model.gguf): q8_0, "
                  "q4_0, q4_1, q5_0, q5_1 (ggml's reference quantizer), q4_k, q5_k, q6_k, or "
                  "llama.cpp's mixes q4_k_m, q5_k_m (K types by a min/max fit)")
      ->capture_default_str();
  cmd->add_option("--format", f->format,
                  "auto (safetensors for f32/bf16/f16, GGUF for block types) or gguf (also the "
                  "float types as GGUF tensors, for running the same weights in llama.cpp)")
      ->check(CLI::IsMember({"auto", "gguf"}))
      ->capture_default_str();
  cmd->callback([f] {
    init_model(f->like, f->out, f->seed, f->dtype,
               f->format == "gguf" ? InitFormat::gguf : InitFormat::automatic);
    std::printf("wrote %s (%s, %s)\n", f->out.c_str(), f->like.c_str(), f->dtype.c_str());
  });
}

}  // namespace anvil::cli
