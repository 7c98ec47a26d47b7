// `anvil embed`: a text's embedding from the model's last hidden states, pooled as
// sentence-transformers pools decoder models (the last token, or the mean), optionally
// normalised to unit length.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "anvil/auto_tokenizer.h"
#include "anvil/error.h"
#include "cli_common.h"
#include "commands.h"
#include "formats/mapped_file.h"

namespace anvil::cli {

void add_embed(CLI::App& app) {
  struct Flags {
    std::string model, file, ids, pooling = "last";
    std::vector<std::string> texts;
    bool normalize = false, no_special = false;
    ModelFlags model_flags;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "embed",
      "print each text's embedding: the last hidden states (after the final norm) pooled, as a "
      "JSON array per line");
  cmd->add_option("MODEL", f->model,
                  "model folder, .gguf or Hub id, a base model's checkpoint too (default: the "
                  "default model)");
  cmd->add_option("--text", f->texts, "a text to embed (repeat for several; one line each out)");
  cmd->add_option("--file", f->file, "one text from a file (- for standard input)");
  cmd->add_option("--input-ids", f->ids, "rows of token ids instead of texts: \"1,2,3;4,5\"");
  cmd->add_option("--pooling", f->pooling,
                  "last (the last token's state: Qwen3-Embedding, gte-Qwen2) or mean (over the "
                  "tokens)")
      ->check(CLI::IsMember({"last", "mean"}));
  cmd->add_flag("--normalize", f->normalize, "scale each embedding to unit L2 norm");
  cmd->add_flag("--no-special-tokens", f->no_special,
                "tokenize without BOS/EOS or template tokens");
  f->model_flags.add_to(*cmd);
  cmd->callback([f] {
    const int sources = !f->texts.empty() + !f->file.empty() + !f->ids.empty();
    if (sources != 1) throw Error("give --text (one or more), --file or --input-ids");
    f->model = model_or_default(f->model);
    std::vector<std::vector<int64_t>> rows;
    if (!f->ids.empty()) {
      rows = parse_id_rows(f->ids, "--input-ids");
    } else {
      std::vector<std::string> texts = f->texts;
      if (f->file == "-") {
        texts.emplace_back(std::istreambuf_iterator<char>(std::cin),
                           std::istreambuf_iterator<char>());
      } else if (!f->file.empty()) {
        texts.push_back(read_text_file(f->file));
      }
      const auto tok = AutoTokenizer::from_pretrained(f->model);
      for (const std::string& t : texts) rows.push_back(tok.encode(t, !f->no_special));
    }
    const CausalLM model = CausalLM::from_pretrained(f->model, f->model_flags.options());
    for (const auto& ids : rows) {
      if (ids.empty()) throw Error("embed: a text of no tokens");
      Batch batch;
      batch.input_ids.push_back(ids);
      const Tensor states = model.hidden_states(batch);  // [1, seq, hidden], one text at a time
      const auto seq = static_cast<int64_t>(ids.size());
      const int64_t hidden = states.size(2);
      const auto* h = static_cast<const float*>(states.raw());
      std::vector<double> v(static_cast<size_t>(hidden), 0.0);
      if (f->pooling == "last") {
        for (int64_t i = 0; i < hidden; ++i) v[i] = h[(seq - 1) * hidden + i];
      } else {
        for (int64_t t = 0; t < seq; ++t) {
          for (int64_t i = 0; i < hidden; ++i) v[i] += h[t * hidden + i];
        }
        for (double& x : v) x /= static_cast<double>(seq);
      }
      if (f->normalize) {
        double norm = 0.0;
        for (double x : v) norm += x * x;
        norm = std::sqrt(norm);
        if (norm > 0) {
          for (double& x : v) x /= norm;
        }
      }
      std::vector<float> out(v.begin(), v.end());
      std::printf("%s\n", nlohmann::json(out).dump().c_str());
    }
  });
}

}  // namespace anvil::cli
