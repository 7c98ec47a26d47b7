// `anvil logits`: the model's float32 logits for given ids, written as safetensors.
#include "anvil/safetensors.h"
#include "cli_common.h"
#include "commands.h"

namespace anvil::cli {

void add_logits(CLI::App& app) {
  struct Flags {
    std::string model, ids, mask, out;
    ModelFlags model_flags;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("logits", "write the logits of token ids to a safetensors file");
  cmd->add_option("MODEL", f->model, "model folder or Hub id in the Hugging Face cache")
      ->required();
  cmd->add_option("--input-ids", f->ids, "rows of ids: \"1,2,3;4,5,6\"")->required();
  cmd->add_option("--attention-mask", f->mask, "rows of 0/1 (0 = padding): \"0,1,1;1,1,1\"");
  cmd->add_option("--out", f->out, "output .safetensors file (one float32 tensor 'logits')")
      ->required();
  f->model_flags.add_to(*cmd);
  cmd->callback([f] {
    const Batch batch = batch_from_flags(f->ids, f->mask);
    const CausalLM model = CausalLM::from_pretrained(f->model, f->model_flags.options());
    const Tensor logits = model.logits(batch);
    SafetensorsWriter w(f->out);
    w.add("logits", logits);
    w.finish();
  });
}

}  // namespace anvil::cli
