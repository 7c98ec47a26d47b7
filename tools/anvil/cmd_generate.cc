// `anvil generate`: continue token ids (text prompts arrive with the tokenizer).
#include <cstdio>

#include "anvil/error.h"
#include "cli_common.h"
#include "commands.h"

namespace anvil::cli {

void add_generate(CLI::App& app) {
  struct Flags {
    std::string model, prompt, ids, mask;
    int64_t max_new_tokens = -1, min_new_tokens = 0, top_k = -1;
    double temperature = -1, top_p = -1, min_p = -1, repetition_penalty = -1;
    uint64_t seed = 0;
    bool greedy = false, output_ids = false;
    ModelFlags model_flags;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("generate", "continue a prompt");
  cmd->add_option("MODEL", f->model, "model folder or Hub id in the Hugging Face cache")
      ->required();
  cmd->add_option("PROMPT", f->prompt, "text prompt (needs a tokenizer)");
  cmd->add_option("--input-ids", f->ids, "prompt as rows of ids: \"1,2,3;4,5,6\"");
  cmd->add_option("--attention-mask", f->mask, "rows of 0/1 for --input-ids (0 = left padding)");
  cmd->add_option("--max-new-tokens", f->max_new_tokens,
                  "tokens to generate (default: generation_config.json, else max_length 20)");
  cmd->add_option("--min-new-tokens", f->min_new_tokens, "suppress eos until this many are new");
  cmd->add_flag("--greedy", f->greedy, "greedy decoding, whatever generation_config.json says");
  cmd->add_option("--temperature", f->temperature, "sampling temperature (implies sampling)");
  cmd->add_option("--top-k", f->top_k, "keep the k most likely tokens (0 disables)");
  cmd->add_option("--top-p", f->top_p, "nucleus sampling mass");
  cmd->add_option("--min-p", f->min_p, "drop tokens below min_p x the top probability");
  cmd->add_option("--repetition-penalty", f->repetition_penalty, "CTRL-style repetition penalty");
  cmd->add_option("--seed", f->seed, "random seed for sampling")->capture_default_str();
  cmd->add_flag("--output-ids", f->output_ids,
                "print each row's ids (prompt and continuation), comma-separated");
  f->model_flags.add_to(*cmd);
  cmd->callback([f] {
    if (!f->prompt.empty()) {
      throw Error(
          "PROMPT: text prompts need the tokenizer, which this build does not have yet; "
          "give --input-ids");
    }
    if (f->ids.empty()) throw Error("--input-ids: required (text prompts are not supported yet)");
    if (!f->output_ids) {
      throw Error("--output-ids: required until anvil can decode text (there is no tokenizer yet)");
    }
    const bool sampling_flag =
        f->temperature >= 0 || f->top_k >= 0 || f->top_p >= 0 || f->min_p >= 0;
    if (f->greedy && sampling_flag) {
      throw Error("--greedy: cannot be combined with --temperature/--top-k/--top-p/--min-p");
    }
    GenerateOptions o;
    if (f->max_new_tokens >= 0) o.max_new_tokens = f->max_new_tokens;
    o.min_new_tokens = f->min_new_tokens;
    if (f->greedy) o.do_sample = false;
    if (sampling_flag) o.do_sample = true;
    if (f->temperature >= 0) o.temperature = static_cast<float>(f->temperature);
    if (f->top_k >= 0) o.top_k = f->top_k;
    if (f->top_p >= 0) o.top_p = static_cast<float>(f->top_p);
    if (f->min_p >= 0) o.min_p = static_cast<float>(f->min_p);
    if (f->repetition_penalty >= 0)
      o.repetition_penalty = static_cast<float>(f->repetition_penalty);
    o.seed = f->seed;
    const Batch batch = batch_from_flags(f->ids, f->mask);
    const CausalLM model = CausalLM::from_pretrained(f->model, f->model_flags.options());
    for (const auto& row : model.generate(batch, o)) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        if (i) line += ',';
        line += std::to_string(row[i]);
      }
      std::printf("%s\n", line.c_str());
    }
  });
}

}  // namespace anvil::cli
