// `anvil embed`: a text's embedding from the model's last hidden states, pooled as
// sentence-transformers pools them (the mode its folder's Pooling module names, else the last
// token), normalised to unit length where a Normalize module follows or --normalize asks.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "anvil/auto_tokenizer.h"
#include "anvil/error.h"
#include "cli_common.h"
#include "commands.h"
#include "formats/model_path.h"
#include "generate/pooling.h"

namespace anvil::cli {

void add_embed(CLI::App& app) {
  struct Flags {
    std::string model, file, ids, pooling;
    std::vector<std::string> texts;
    int64_t batch_size = 1;
    bool normalize = false, no_normalize = false, no_special = false, lines = false;
    ModelFlags model_flags;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "embed",
      "print each text's embedding: the last hidden states (after the final norm) pooled, one "
      "JSON array a line");
  cmd->add_option("MODEL", f->model,
                  "model folder, .gguf or Hub id, a base model's checkpoint too (default: the "
                  "default model)");
  cmd->add_option("--text", f->texts, "a text to embed (repeat for several; one line each out)");
  cmd->add_option("--file", f->file, "one text from a file (- for standard input)");
  cmd->add_flag("--lines", f->lines, "with --file: each non-empty line is a text of its own");
  cmd->add_option("--batch-size", f->batch_size,
                  "texts run together, left-padded as sentence-transformers batches them "
                  "(default 1: each alone, no padding)");
  cmd->add_option("--input-ids", f->ids, "rows of token ids instead of texts: \"1,2,3;4,5\"");
  cmd->add_option("--pooling", f->pooling,
                  "last, mean, cls, max, mean_sqrt_len or weighted_mean (default: what the "
                  "folder's sentence-transformers Pooling module says, else last)");
  cmd->add_flag("--normalize", f->normalize,
                "scale each embedding to unit L2 norm (the default where the folder's "
                "modules.json has a Normalize module)");
  cmd->add_flag("--no-normalize", f->no_normalize, "leave the embeddings unscaled");
  cmd->add_flag("--no-special-tokens", f->no_special,
                "tokenize without BOS/EOS or template tokens");
  f->model_flags.add_to(*cmd);
  cmd->callback([f] {
    const int sources = !f->texts.empty() + !f->file.empty() + !f->ids.empty();
    if (sources != 1) throw Error("give --text (one or more), --file or --input-ids");
    if (f->normalize && f->no_normalize) {
      throw Error("give --normalize or --no-normalize, not both");
    }
    if (f->lines && f->file.empty()) throw Error("--lines: needs --file");
    if (f->batch_size < 1) throw Error("--batch-size must be at least 1");
    f->model = model_or_default(f->model);
    const SentenceTransformersConfig st = read_sentence_transformers(resolve_model_path(f->model));
    const Pooling pooling =
        f->pooling.empty() ? st.pooling.value_or(Pooling::last) : pooling_named(f->pooling);
    const bool normalize = f->normalize || (!f->no_normalize && st.normalize.value_or(false));
    std::vector<std::vector<int64_t>> rows;
    if (!f->ids.empty()) {
      rows = parse_id_rows(f->ids, "--input-ids");
    } else {
      std::vector<std::string> texts = f->texts;
      if (!f->file.empty()) {
        const std::string whole = read_file_option(f->file);
        if (f->lines) {
          std::istringstream in(whole);
          for (std::string line; std::getline(in, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (!line.empty()) texts.push_back(line);
          }
          if (texts.empty()) throw Error(f->file + ": no non-empty line to embed");
        } else {
          texts.push_back(whole);
        }
      }
      const auto tok = AutoTokenizer::from_pretrained(f->model);
      for (const std::string& t : texts) rows.push_back(tok.encode(t, !f->no_special));
    }
    const CausalLM model = CausalLM::from_pretrained(f->model, f->model_flags.options());
    for (const auto& ids : rows) {
      if (ids.empty()) throw Error("embed: a text of no tokens");
    }
    // Batches of texts, left-padded: a row's real tokens are its last ones, where the
    // last-token pooling of left-padded batches reads them.
    const auto per_batch = static_cast<size_t>(f->batch_size);
    for (size_t first = 0; first < rows.size(); first += per_batch) {
      const auto from = rows.begin() + static_cast<std::ptrdiff_t>(first);
      const std::vector<std::vector<int64_t>> group(
          from, from + static_cast<std::ptrdiff_t>(std::min(per_batch, rows.size() - first)));
      const Batch batch = group.size() == 1 ? Batch{group, {}} : Batch::left_padded(group, 0);
      const Tensor states = model.hidden_states(batch);  // [rows, seq, hidden]
      const int64_t seq = states.size(1), hidden = states.size(2);
      const auto* all = static_cast<const float*>(states.raw());
      for (size_t r = 0; r < group.size(); ++r) {
        const auto tokens = static_cast<int64_t>(group[r].size());
        const float* real = all + (static_cast<int64_t>(r) * seq + seq - tokens) * hidden;
        const std::span<const float> values(real, static_cast<size_t>(tokens * hidden));
        std::printf(
            "%s\n",
            nlohmann::json(pool(values, tokens, hidden, pooling, normalize)).dump().c_str());
      }
    }
  });
}

}  // namespace anvil::cli
