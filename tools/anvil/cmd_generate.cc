// `anvil generate`: continue a text prompt (streamed) or rows of token ids.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "anvil/auto_tokenizer.h"
#include "anvil/error.h"
#include "anvil/safetensors.h"
#include "cli_common.h"
#include "commands.h"

namespace anvil::cli {

void add_generate(CLI::App& app) {
  struct Flags {
    std::vector<std::string> positional;
    std::string model, prompt, ids, mask, scores_out, prompt_cache;
    bool prompt_cache_ro = false;
    bool output_ids = false;
    SamplingFlags sampling;
    ModelFlags model_flags;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand("generate", "continue a prompt");
  cmd->add_option("MODEL_PROMPT", f->positional,
                  "[MODEL] [PROMPT]: a model folder, .gguf file or Hub id (default: the default "
                  "model, SmolLM2-135M-Instruct Q4_1), and a text prompt whose continuation is "
                  "streamed")
      ->expected(0, 2);
  cmd->add_option("--input-ids", f->ids, "prompt as rows of ids: \"1,2,3;4,5,6\"");
  cmd->add_option("--attention-mask", f->mask, "rows of 0/1 for --input-ids (0 = left padding)");
  cmd->add_flag("--output-ids", f->output_ids,
                "print each row's ids (prompt and continuation), comma-separated");
  cmd->add_option("--scores-out", f->scores_out,
                  "write each step's scores (after the processors and warpers) and raw logits to "
                  "this .safetensors file: float32 'scores' and 'logits' [steps, rows, vocab], "
                  "transformers' output_scores / output_logits; with beam search the rows are "
                  "the beams, and float32 'sequences_scores' [rows] and int64 'beam_indices' "
                  "[rows, new tokens] (-1 past a row's end) are added");
  cmd->add_option("--prompt-cache", f->prompt_cache,
                  "keep the prompt's keys and values in this file (llama.cpp's --prompt-cache): "
                  "a later run whose prompt begins the same way runs only the rest; the file is "
                  "written after the run, and refused if another model made it");
  cmd->add_flag("--prompt-cache-ro", f->prompt_cache_ro,
                "with --prompt-cache: read the file, do not update it");
  f->sampling.add_to(*cmd);
  f->model_flags.add_to(*cmd);
  cmd->callback([f] {
    // One positional argument is the model when it names one, else the prompt.
    if (f->positional.size() == 2) {
      f->model = f->positional[0];
      f->prompt = f->positional[1];
    } else if (f->positional.size() == 1) {
      (is_model_reference(f->positional[0]) ? f->model : f->prompt) = f->positional[0];
    }
    if (f->prompt.empty() == f->ids.empty())
      throw Error("give a PROMPT or --input-ids (one of them)");
    f->model = model_or_default(f->model);
    GenerateOptions o = f->sampling.options();
    const CausalLM model = CausalLM::from_pretrained(f->model, f->model_flags.options());
    if (f->prompt_cache_ro && f->prompt_cache.empty()) {
      throw Error("--prompt-cache-ro: needs --prompt-cache FILE");
    }
    PromptCache cache;
    if (!f->prompt_cache.empty()) {
      if (std::filesystem::exists(f->prompt_cache)) cache.load(f->prompt_cache, model);
      o.prompt_cache = &cache;
    }
    std::vector<Tensor> scores, logits;
    std::vector<float> sequences_scores;
    std::vector<std::vector<int64_t>> beam_indices;
    const bool beams = o.num_beams.value_or(model.generation_config().num_beams) > 1;
    if (!f->scores_out.empty()) {
      o.scores = &scores;
      o.logits = &logits;
      if (beams) {
        o.sequences_scores = &sequences_scores;
        o.beam_indices = &beam_indices;
      }
    }
    // The steps' [rows, vocab] tensors stacked as [steps, rows, vocab].
    const auto write_scores = [&] {
      if (f->scores_out.empty()) return;
      SafetensorsWriter w(f->scores_out);
      for (const auto& [name, steps] :
           {std::pair("scores", &scores), std::pair("logits", &logits)}) {
        const Shape one = steps->empty() ? Shape{0, 0} : (*steps)[0].shape();
        w.add(name, DType::f32, {static_cast<int64_t>(steps->size()), one[0], one[1]},
              [steps](std::span<std::byte> out) {
                size_t at = 0;
                for (const Tensor& t : *steps) {
                  std::memcpy(out.data() + at, t.raw(), t.nbytes());
                  at += t.nbytes();
                }
              });
      }
      if (beams) {
        const auto rows = static_cast<int64_t>(beam_indices.size());
        const auto steps = rows == 0 ? 0 : static_cast<int64_t>(beam_indices[0].size());
        w.add("sequences_scores", Tensor::from_f32(sequences_scores, {rows}));
        // By value: the writer fills the tensor in finish(), after this block.
        w.add("beam_indices", DType::i64, {rows, steps},
              [&beam_indices, rows, steps](std::span<std::byte> out) {
                for (int64_t r = 0; r < rows; ++r) {
                  std::memcpy(out.data() + r * steps * 8, beam_indices[r].data(), steps * 8);
                }
              });
      }
      w.finish();
    };
    // Generates and prints (several forms, each returning when done); then the scores.
    const auto generate_and_print = [&] {
      if (!f->ids.empty()) {
        const Batch batch = batch_from_flags(f->ids, f->mask);
        // The tokenizer, loaded once, only where its text is needed: stop strings, printing
        // text, or an assistant of another tokenizer (which drafts through text; without a
        // tokenizer here the assistant's ids are taken as the model's).
        const bool stops =
            o.stop_strings.value_or(model.generation_config().stop_strings).size() > 0;
        std::optional<PreTrainedTokenizer> tok;
        if (stops || !f->output_ids) {
          tok.emplace(AutoTokenizer::from_pretrained(f->model));
        } else if (o.assistant_model) {
          try {
            tok.emplace(AutoTokenizer::from_pretrained(f->model));
          } catch (const Error& e) {
            std::fprintf(stderr,
                         "anvil: model's tokenizer not loaded (%s): the assistant's ids are "
                         "taken as the model's\n",
                         e.what());
          }
        }
        if (stops) o.tokenizer = &tok->tokenizer();
        std::unique_ptr<PreTrainedTokenizer> bridge;
        if (tok && o.assistant_model) {
          bridge = bridge_assistant_tokenizer(f->sampling, tok->tokenizer(), o);
        }
        const auto rows = model.generate(batch, o);
        if (!f->output_ids) {
          DecodeOptions skip;
          skip.skip_special_tokens = true;
          for (const auto& row : rows) {
            const std::string text = tok->decode(row, skip);
            std::printf("%s\n", text.c_str());
          }
          return;
        }
        for (const auto& row : rows) {
          std::string line;
          for (size_t i = 0; i < row.size(); ++i) line += (i ? "," : "") + std::to_string(row[i]);
          std::printf("%s\n", line.c_str());
        }
        return;
      }
      const auto tok = AutoTokenizer::from_pretrained(f->model);
      const auto ids = tok.encode(f->prompt);
      o.tokenizer = &tok.tokenizer();  // for stop strings (the options' or generation_config's)
      const auto bridge = bridge_assistant_tokenizer(f->sampling, tok.tokenizer(), o);
      if (!streams(o, model.generation_config())) {
        // Beam search (or several sequences): each row's continuation once it is final.
        Batch batch;
        batch.input_ids = {ids};
        const auto rows = model.generate(batch, o);
        DecodeOptions skip;
        skip.skip_special_tokens = true;
        for (size_t r = 0; r < rows.size(); ++r) {
          const std::vector<int64_t> fresh(rows[r].begin() + static_cast<int64_t>(ids.size()),
                                           rows[r].end());
          std::string line;
          for (size_t i = 0; i < fresh.size(); ++i)
            line += (i ? "," : "") + std::to_string(fresh[i]);
          if (rows.size() > 1) std::printf("[%zu] ", r + 1);
          std::printf("%s\n", f->output_ids ? line.c_str() : tok.decode(fresh, skip).c_str());
        }
        return;
      }
      if (f->output_ids) {
        const auto out = model.generate(ids, o);
        std::string line;
        for (size_t i = 0; i < out.size(); ++i) line += (i ? "," : "") + std::to_string(out[i]);
        std::printf("%s\n", line.c_str());
        return;
      }
      StreamingDecoder stream(tok.tokenizer(), true);
      o.streamer = [&](const std::vector<int64_t>& step) {
        const std::string piece = stream.push(step[0]);
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
      };
      model.generate(ids, o);
      const std::string rest = stream.finish();
      std::fwrite(rest.data(), 1, rest.size(), stdout);
      std::printf("\n");
    };
    const auto assistant = load_assistant(f->sampling, f->model_flags, o);
    SpeculationStats speculation;
    if (o.prompt_lookup_num_tokens || o.assistant_model || o.assistant_early_exit) {
      o.speculation_stats = &speculation;
    }
    generate_and_print();
    write_scores();
    print_speculation(o, speculation);
    if (!f->prompt_cache.empty()) {
      if (!f->prompt_cache_ro) cache.save(f->prompt_cache);
      std::fprintf(stderr, "prompt cache %s: %lld prompt tokens reused, %zu tokens %s\n",
                   f->prompt_cache.c_str(), static_cast<long long>(cache.reused()),
                   cache.tokens().size(), f->prompt_cache_ro ? "held (not saved)" : "saved");
    }
  });
}

}  // namespace anvil::cli
