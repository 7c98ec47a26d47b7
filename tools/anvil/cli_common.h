// Helpers shared by the subcommands: parsing id lists and the options every model command has.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "anvil/auto_tokenizer.h"
#include "anvil/model.h"

namespace anvil::cli {

/// "1,2,3;4,5,6" -> {{1,2,3},{4,5,6}}; `flag` names the option in errors.
std::vector<std::vector<int64_t>> parse_id_rows(const std::string& text, const std::string& flag);

/// The dtype a flag names (f32, bf16, f16); unset for an empty value; an error naming the flag
/// for any other.
std::optional<DType> compute_dtype_flag(const std::string& flag, const std::string& value);

/// --device, --dtype, --attn-implementation, --kv-dtype, --threads.
struct ModelFlags {
  std::string device = "cpu";
  std::string dtype;  // empty: the checkpoint's
  std::string attn = "sdpa";
  std::string kv_dtype;  // empty: the device's default
  int threads = 0;

  void add_to(CLI::App& cmd);
  /// Applies --threads and returns the loader options.
  ModelOptions options() const;
};

/// --max-new-tokens, --min-new-tokens, --greedy and the sampling flags.
struct SamplingFlags {
  int64_t max_new_tokens = -1, min_new_tokens = 0, top_k = -1;
  double temperature = -1, top_p = -1, min_p = -1, repetition_penalty = -1;
  double typical_p = -1, epsilon_cutoff = -1, eta_cutoff = -1;
  int64_t no_repeat_ngram_size = -1;
  int64_t num_beams = -1, num_return_sequences = -1;
  double length_penalty = std::numeric_limits<double>::quiet_NaN();
  double max_time = -1;
  std::vector<std::string> stop;
  std::string early_stopping;
  uint64_t seed = 0;
  bool greedy = false;
  static constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();
  int64_t prompt_lookup = kUnset, max_matching_ngram = kUnset;
  std::string assistant_model;
  int64_t num_assistant_tokens = kUnset;
  std::string num_assistant_tokens_schedule;
  double assistant_confidence_threshold = -1;
  bool assistant_adaptive_confidence = false;
  int64_t assistant_early_exit = kUnset;
  double assistant_ensemble_weight = -1;

  void add_to(CLI::App& cmd);
  /// Unset flags stay unset, so generation_config.json decides them.
  GenerateOptions options() const;
};

/// The model --assistant-model names, loaded as `model_flags` say (none without the flag), and
/// `o` pointed at it.
std::unique_ptr<CausalLM> load_assistant(const SamplingFlags& sampling,
                                         const ModelFlags& model_flags, GenerateOptions& o);

/// With --assistant-model: the assistant's tokenizer where its vocabulary is not `target`'s
/// (the model's), with `o` set to draft through text (GenerateOptions::assistant_tokenizer,
/// `o.tokenizer` = `target`); null where they are the same, or the assistant has none.
std::unique_ptr<PreTrainedTokenizer> bridge_assistant_tokenizer(const SamplingFlags& sampling,
                                                                const Tokenizer& target,
                                                                GenerateOptions& o);

/// Prints to stderr what speculative decoding did, where `o` asked for it.
void print_speculation(const GenerateOptions& o, const SpeculationStats& stats);

/// Whether a generation with `o` over `gen` can stream its tokens as they come: one beam and
/// one sequence per prompt (a beam's tokens can still be replaced).
bool streams(const GenerateOptions& o, const GenerationConfig& gen);

/// True when `s` names a model: it looks like a path or Hub id (no spaces; a slash or .gguf), or
/// resolves to a file, folder or cached Hub model.
bool is_model_reference(const std::string& s);
/// `model`, or the default model (fetched into the cache on first use) when `model` is empty.
std::string model_or_default(const std::string& model);

/// The text a --file option names: standard input for "-", else the file (read errors name it).
std::string read_file_option(const std::string& file);

/// The batch from --input-ids and --attention-mask.
Batch batch_from_flags(const std::string& ids, const std::string& mask);

}  // namespace anvil::cli
