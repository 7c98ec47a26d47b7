// `anvil init-model`: a random-weight model folder with a public model's shapes.
#include <cstdio>
#include <optional>

#include "anvil/error.h"
#include "commands.h"
#include "models/init_model.h"

namespace anvil::cli {

void add_init_model(CLI::App& app) {
  struct Flags {
    std::string like, out, dtype = "bf16";
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
                  "f32, bf16, f16 (model.safetensors), or q8_0, q4_0, q4_1 (model.gguf, quantized "
                  "as llama.cpp's reference quantizer does)")
      ->capture_default_str();
  cmd->callback([f] {
    std::optional<DType> d = parse_compute_dtype(f->dtype);
    if (f->dtype == "q8_0") d = DType::q8_0;
    if (f->dtype == "q4_0") d = DType::q4_0;
    if (f->dtype == "q4_1") d = DType::q4_1;
    if (!d) {
      throw Error("--dtype: '" + f->dtype + "' is not one of f32, bf16, f16, q8_0, q4_0, q4_1");
    }
    init_model(f->like, f->out, f->seed, *d);
    std::printf("wrote %s (%s, %s)\n", f->out.c_str(), f->like.c_str(), f->dtype.c_str());
  });
}

}  // namespace anvil::cli
