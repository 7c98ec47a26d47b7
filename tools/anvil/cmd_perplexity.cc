// `anvil perplexity`: a text's perplexity under the model, by transformers' sliding windows.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <optional>

#include <nlohmann/json.hpp>

#include "anvil/auto_tokenizer.h"
#include "anvil/error.h"
#include "anvil/perplexity.h"
#include "cli_common.h"
#include "commands.h"

namespace anvil::cli {

namespace {

// The BOS id where the tokenizer adds one to a text (llama.cpp then starts every chunk with
// it), else -1.
int64_t added_bos(const PreTrainedTokenizer& tok) {
  const auto bos = tok.bos_token_id();
  if (!bos) return -1;
  const std::vector<int64_t> with = tok.encode("a", true), without = tok.encode("a", false);
  const bool adds = !with.empty() && with[0] == *bos && (without.empty() || without[0] != *bos);
  return adds ? *bos : -1;
}

}  // namespace

void add_perplexity(CLI::App& app) {
  struct Flags {
    std::string model, file, text, ids, reference, reference_dtype;
    int64_t max_length = 0, stride = 0, batch_size = 0;
    bool json = false, no_special = false, quiet = false, llama_cpp = false;
    ModelFlags model_flags;
  };
  auto f = std::make_shared<Flags>();
  auto* cmd = app.add_subcommand(
      "perplexity",
      "a text's perplexity, in windows as transformers' guide \"Perplexity of fixed-length "
      "models\" computes it");
  cmd->add_option("MODEL", f->model, "model folder, .gguf or Hub id (default: the default model)");
  cmd->add_option("--file", f->file, "the text, from a file (- for standard input)");
  cmd->add_option("--text", f->text, "the text itself");
  cmd->add_option("--input-ids", f->ids, "token ids instead of a text: \"1,2,3\"");
  cmd->add_option("--max-length", f->max_length,
                  "tokens a window holds at most (default: 1024, or the model's "
                  "max_position_embeddings if smaller)");
  cmd->add_option("--stride", f->stride,
                  "tokens between windows' beginnings, 1..max-length (default: max-length / 2); "
                  "each window scores only the tokens past the previous window's end");
  cmd->add_option("--batch-size", f->batch_size,
                  "windows run together in one step (default: automatic, 1 on the CPU, up to "
                  "8192 tokens a step on a GPU)");
  cmd->add_option("--reference", f->reference,
                  "compare with this model (say, the checkpoint a quantized model came from; "
                  "llama.cpp's --kl-divergence): its perplexity, the KL divergence from its "
                  "next-token distributions to the model's, and how often their top tokens agree; "
                  "loaded on --device");
  cmd->add_option("--reference-dtype", f->reference_dtype,
                  "the reference's dtype: f32, bf16 or f16 (default: its checkpoint's)");
  cmd->add_flag("--llama-cpp-chunks", f->llama_cpp,
                "llama.cpp's perplexity instead of transformers' windows, to compare with its "
                "figures: chunks of --max-length tokens side by side, each scoring its second "
                "half, its first token replaced by BOS where the tokenizer adds one");
  cmd->add_flag("--no-special-tokens", f->no_special,
                "tokenize without BOS/EOS or template tokens");
  cmd->add_flag("--json", f->json, "print one JSON object");
  cmd->add_flag("--quiet", f->quiet, "no line per window on stderr");
  f->model_flags.add_to(*cmd);
  cmd->callback([f] {
    const int sources = !f->file.empty() + !f->text.empty() + !f->ids.empty();
    if (sources != 1) throw Error("give one of --file, --text or --input-ids");
    if (f->max_length < 0 || f->stride < 0 || f->batch_size < 0) {
      throw Error("--max-length, --stride and --batch-size must be positive");
    }
    if (f->llama_cpp && f->stride > 0) {
      throw Error("--stride does not apply to --llama-cpp-chunks (its chunks lie side by side)");
    }
    // Checked before anything loads.
    if (f->reference.empty() && !f->reference_dtype.empty()) {
      throw Error("--reference-dtype needs --reference");
    }
    const std::optional<DType> reference_dtype =
        compute_dtype_flag("--reference-dtype", f->reference_dtype);
    f->model = model_or_default(f->model);
    std::vector<int64_t> ids;
    int64_t chunk_bos = -1;
    if (!f->ids.empty()) {
      const auto rows = parse_id_rows(f->ids, "--input-ids");
      if (rows.size() != 1) throw Error("--input-ids: one row of ids, without ';'");
      ids = rows[0];
      if (f->llama_cpp) {
        try {
          chunk_bos = added_bos(AutoTokenizer::from_pretrained(f->model));
        } catch (const Error& e) {
          std::fprintf(stderr, "anvil: no tokenizer (%s): chunks keep their first token\n",
                       e.what());
        }
      }
    } else {
      const std::string text = f->file.empty() ? f->text : read_file_option(f->file);
      const auto tok = AutoTokenizer::from_pretrained(f->model);
      ids = tok.encode(text, !f->no_special);
      chunk_bos = added_bos(tok);
    }
    const CausalLM model = CausalLM::from_pretrained(f->model, f->model_flags.options());
    std::optional<CausalLM> reference;
    if (!f->reference.empty()) {
      ModelOptions ro = f->model_flags.options();
      ro.dtype = reference_dtype;  // unset: the reference checkpoint's own
      reference.emplace(CausalLM::from_pretrained(f->reference, ro));
    }
    PerplexityOptions o;
    if (reference) o.reference = &*reference;
    const int64_t context = model.config().max_position_embeddings;
    o.max_length =
        f->max_length > 0 ? f->max_length : (context > 0 ? std::min<int64_t>(1024, context) : 1024);
    o.stride = f->stride > 0 ? f->stride : std::max<int64_t>(1, o.max_length / 2);
    o.batch_size = f->batch_size;
    o.llama_cpp_chunks = f->llama_cpp;
    o.chunk_bos = chunk_bos;
    int64_t scored = 0, run = 0;
    double nll = 0.0;
    const auto start = std::chrono::steady_clock::now();
    const PerplexityResult r = perplexity(model, ids, o, [&](const PerplexityWindow& w) {
      run += w.end - w.begin;
      scored += w.scored;
      nll += w.nll_sum;
      if (!f->quiet && scored > 0) {
        std::fprintf(stderr,
                     "window [%" PRId64 ", %" PRId64 "): %" PRId64
                     " tokens scored, perplexity so far %.4f\n",
                     w.begin, w.end, w.scored, std::exp(nll / static_cast<double>(scored)));
      }
    });
    // The windows' time, the model's load left out; `run` counts a token once per window.
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (f->json) {
      nlohmann::json j = {{"perplexity", r.perplexity()},
                          {"perplexity_error", r.perplexity_error()},
                          {"nll_mean", r.nll_sum / static_cast<double>(r.tokens)},
                          {"tokens", r.tokens},
                          {"windows", r.windows.size()},
                          {"max_length", o.max_length},
                          {"stride", o.llama_cpp_chunks ? o.max_length : o.stride},
                          {"method", o.llama_cpp_chunks ? "llama.cpp chunks" : "windows"},
                          {"seconds", seconds},
                          {"tokens_run_per_second", static_cast<double>(run) / seconds}};
      if (r.reference) {
        const PerplexityReference& ref = *r.reference;
        j["reference"] = {{"perplexity", ref.perplexity()},
                          {"perplexity_error", ref.perplexity_error()},
                          {"kl_divergence",
                           {{"mean", ref.kl_mean()},
                            {"error", ref.kl_error()},
                            {"median", ref.kl_quantile(0.5)},
                            {"p90", ref.kl_quantile(0.9)},
                            {"p99", ref.kl_quantile(0.99)},
                            {"max", ref.kl_quantile(1.0)}}},
                          {"same_top", ref.same_top_fraction()}};
      }
      std::printf("%s\n", j.dump().c_str());
      return;
    }
    std::printf(
        "perplexity %.4f +/- %.4f (mean negative log-likelihood %.6f over %" PRId64 " tokens; ",
        r.perplexity(), r.perplexity_error(), r.nll_sum / static_cast<double>(r.tokens), r.tokens);
    if (o.llama_cpp_chunks) {
      std::printf("%zu llama.cpp chunks of %" PRId64 " tokens, each scoring its second half%s)\n",
                  r.windows.size(), o.max_length, o.chunk_bos >= 0 ? ", BOS first" : "");
    } else {
      std::printf("%zu windows of up to %" PRId64 " tokens, stride %" PRId64 ")\n",
                  r.windows.size(), o.max_length, o.stride);
    }
    if (r.reference) {
      const PerplexityReference& ref = *r.reference;
      const double agree = ref.same_top_fraction();
      const double n = static_cast<double>(ref.kl.size());
      std::printf("reference perplexity %.4f +/- %.4f (the model's is %.4f%% of it)\n",
                  ref.perplexity(), ref.perplexity_error(),
                  100.0 * r.perplexity() / ref.perplexity());
      std::printf(
          "KL divergence from the reference: mean %.6f +/- %.6f, median %.6f, 90%% %.6f, "
          "99%% %.6f, max %.6f\n",
          ref.kl_mean(), ref.kl_error(), ref.kl_quantile(0.5), ref.kl_quantile(0.9),
          ref.kl_quantile(0.99), ref.kl_quantile(1.0));
      std::printf("same top token as the reference: %.3f%% +/- %.3f%%\n", 100.0 * agree,
                  100.0 * std::sqrt(agree * (1.0 - agree) / std::max(1.0, n - 1.0)));
    }
    if (!f->quiet) {
      std::fprintf(stderr, "%.3f s for the windows (%.0f tokens run a second)\n", seconds,
                   static_cast<double>(run) / seconds);
    }
  });
}

}  // namespace anvil::cli
