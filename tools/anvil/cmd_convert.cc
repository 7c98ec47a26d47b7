// `anvil convert`: a GGUF file as a Hugging Face model folder.
#include <cstdio>

#include "anvil/error.h"
#include "cli_common.h"
#include "commands.h"
#include "models/convert.h"

namespace anvil::cli {

void add_convert(CLI::App& app) {
  struct Flags {
    std::string gguf, out, dtype = "f32";
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "convert", "write a GGUF model as a Hugging Face folder (safetensors, config, tokenizer)");
  cmd->add_option("MODEL", f->gguf, "the .gguf file")->required();
  cmd->add_option("--out", f->out, "output folder")->required();
  cmd->add_option("--dtype", f->dtype, "weight dtype of the safetensors: f32, bf16 or f16")
      ->capture_default_str();
  cmd->callback([f] {
    const auto d = compute_dtype_flag("--dtype", f->dtype);
    if (!d) throw Error("--dtype: give one of f32, bf16, f16");
    convert_gguf_to_hf(f->gguf, f->out, *d);
    std::printf("wrote %s\n", f->out.c_str());
  });
}

}  // namespace anvil::cli
