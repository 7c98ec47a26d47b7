// Parsing of the CLI's shared flags; every error names the flag.
#include "cli_common.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>

#include "anvil/error.h"
#include "core/thread_pool.h"
#include "formats/default_model.h"
#include "formats/mapped_file.h"
#include "formats/model_path.h"

namespace anvil::cli {

std::vector<std::vector<int64_t>> parse_id_rows(const std::string& text, const std::string& flag) {
  std::vector<std::vector<int64_t>> rows(1);
  std::string token;
  auto flush = [&] {
    size_t b = token.find_first_not_of(" \t"), e = token.find_last_not_of(" \t");
    if (b == std::string::npos) throw Error(flag + ": empty value in '" + text + "'");
    const std::string t = token.substr(b, e - b + 1);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || p != t.data() + t.size()) {
      throw Error(flag + ": '" + t + "' is not an integer");
    }
    rows.back().push_back(v);
    token.clear();
  };
  for (char ch : text) {
    if (ch == ',') {
      flush();
    } else if (ch == ';') {
      flush();
      rows.emplace_back();
    } else {
      token += ch;
    }
  }
  flush();
  return rows;
}

void ModelFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--device", device, "device to run on: cpu, cuda, cuda:1, ...")
      ->capture_default_str();
  cmd.add_option("--dtype", dtype, "weight dtype: f32, bf16 or f16 (default: the checkpoint's)");
  cmd.add_option("--attn-implementation", attn, "sdpa (fused) or eager (materialised scores)")
      ->capture_default_str();
  cmd.add_option("--kv-dtype", kv_dtype,
                 "KV cache dtype: f32, f16 or bf16 (default: f16 for quantized weights on the "
                 "CPU, else the activations')");
  cmd.add_option("--threads", threads, "CPU threads (default: ANVIL_NUM_THREADS, else all cores)");
}

std::optional<DType> compute_dtype_flag(const std::string& flag, const std::string& value) {
  if (value.empty()) return std::nullopt;
  const auto d = parse_compute_dtype(value);
  if (!d) throw Error(flag + ": '" + value + "' is not one of f32, bf16, f16");
  return d;
}

ModelOptions ModelFlags::options() const {
  if (threads < 0) throw Error("--threads: must not be negative");
  if (threads > 0) set_num_threads(threads);
  ModelOptions o;
  o.device_map = device;
  o.attn_implementation = attn;
  o.dtype = compute_dtype_flag("--dtype", dtype);
  o.kv_cache_dtype = compute_dtype_flag("--kv-dtype", kv_dtype);
  return o;
}

void SamplingFlags::add_to(CLI::App& cmd) {
  cmd.add_option("--max-new-tokens", max_new_tokens,
                 "tokens to generate (default: generation_config.json's, else 20)");
  cmd.add_option("--min-new-tokens", min_new_tokens, "suppress eos until this many are new");
  cmd.add_flag("--greedy", greedy, "greedy decoding, whatever generation_config.json says");
  cmd.add_option("--temperature", temperature, "sampling temperature (implies sampling)");
  cmd.add_option("--top-k", top_k, "keep the k most likely tokens (0 disables)");
  cmd.add_option("--top-p", top_p, "nucleus sampling mass");
  cmd.add_option("--min-p", min_p, "drop tokens below min_p x the top probability");
  cmd.add_option("--typical-p", typical_p, "typical sampling's mass (implies sampling)");
  cmd.add_option("--epsilon-cutoff", epsilon_cutoff,
                 "drop tokens below this probability (implies sampling)");
  cmd.add_option("--eta-cutoff", eta_cutoff, "eta sampling's cutoff (implies sampling)");
  cmd.add_option("--repetition-penalty", repetition_penalty, "CTRL-style repetition penalty");
  cmd.add_option("--no-repeat-ngram-size", no_repeat_ngram_size,
                 "ban tokens that would repeat an n-gram of this size (0 off)");
  cmd.add_option("--num-beams", num_beams, "beam search with this many beams (1: none)");
  cmd.add_option("--num-return-sequences", num_return_sequences,
                 "sequences per prompt: the best beams, or independent samples");
  cmd.add_option("--length-penalty", length_penalty,
                 "beam search: rank finished beams by log-probability / length^this (default 1)");
  cmd.add_option("--early-stopping", early_stopping,
                 "beam search: true (stop when num_beams have finished), false (when no running "
                 "beam can still win; the default) or never");
  cmd.add_option("--max-time", max_time, "stop after this many seconds");
  cmd.add_option("--stop", stop,
                 "stop a row once its text ends with this string (repeatable; transformers' "
                 "stop_strings)");
  cmd.add_option("--seed", seed, "random seed for sampling")->capture_default_str();
  cmd.add_option("--prompt-lookup", prompt_lookup,
                 "prompt lookup decoding: draft up to N tokens a step from where the last tokens "
                 "occurred earlier, and keep those the model picks (transformers' "
                 "prompt_lookup_num_tokens; one prompt, no beams)");
  cmd.add_option("--max-matching-ngram", max_matching_ngram,
                 "with --prompt-lookup: the longest n-gram it matches (default 2)");
  cmd.add_option("--assistant-model", assistant_model,
                 "speculative decoding with this smaller model (transformers' assistant_model, "
                 "llama.cpp's draft model): it drafts, the model keeps what it would produce "
                 "itself; loaded with the same --device and --dtype. One of another tokenizer "
                 "drafts through text (transformers' universal assisted decoding)");
  cmd.add_option("--num-assistant-tokens", num_assistant_tokens,
                 "with --assistant-model: tokens drafted a step at most (default: the "
                 "assistant's generation_config, else 20)");
  cmd.add_option("--num-assistant-tokens-schedule", num_assistant_tokens_schedule,
                 "with --assistant-model: constant, heuristic (+2 after a step that keeps its "
                 "whole draft, else -1) or heuristic_transient (default: the assistant's "
                 "generation_config, else constant)");
  cmd.add_option("--assistant-confidence-threshold", assistant_confidence_threshold,
                 "with --assistant-model: a draft stops at a token the assistant gives less than "
                 "this probability (default: the assistant's generation_config, else 0.4)");
  cmd.add_option("--assistant-early-exit", assistant_early_exit,
                 "speculative decoding with the model's own first N layers (then its final norm "
                 "and head) as the assistant (transformers' assistant_early_exit, LayerSkip's "
                 "self-speculation), for models trained to exit early; the assistant flags "
                 "below apply to it");
  cmd.add_option("--assistant-ensemble-weight", assistant_ensemble_weight,
                 "with an assistant: check drafts against W p + (1 - W) q, the model's and the "
                 "assistant's probabilities (transformers' assistant_ensemble_weight, DIVERSE): "
                 "more drafts kept, output biased toward the assistant; in (0, 1)");
  cmd.add_flag("--assistant-adaptive-confidence", assistant_adaptive_confidence,
               "with --assistant-model: after each step, move that threshold to where the ROC "
               "curve of the drafted tokens' probabilities (kept or not) has the least fpr + 3 "
               "fnr, as transformers does where scikit-learn is installed");
}

std::unique_ptr<CausalLM> load_assistant(const SamplingFlags& sampling,
                                         const ModelFlags& model_flags, GenerateOptions& o) {
  if (sampling.assistant_model.empty()) return nullptr;
  auto assistant = std::make_unique<CausalLM>(
      CausalLM::from_pretrained(sampling.assistant_model, model_flags.options()));
  o.assistant_model = assistant.get();
  return assistant;
}

namespace {
bool same_vocabulary(const Tokenizer& a, const Tokenizer& b) {
  if (a.vocab_size() != b.vocab_size()) return false;
  for (int64_t id = 0; id < a.vocab_size(); ++id) {
    if (a.id_to_token(id) != b.id_to_token(id)) return false;
  }
  return true;
}
}  // namespace

std::unique_ptr<PreTrainedTokenizer> bridge_assistant_tokenizer(const SamplingFlags& sampling,
                                                                const Tokenizer& target,
                                                                GenerateOptions& o) {
  if (sampling.assistant_model.empty()) return nullptr;
  std::unique_ptr<PreTrainedTokenizer> theirs;
  try {
    theirs = std::make_unique<PreTrainedTokenizer>(
        AutoTokenizer::from_pretrained(sampling.assistant_model));
  } catch (const Error& e) {
    // No tokenizer of its own (or one that does not load): its ids are taken as the model's,
    // which costs kept drafts, never the model's tokens. Said, since a broken file would
    // otherwise pass unnoticed.
    std::fprintf(stderr,
                 "anvil: assistant's tokenizer not loaded (%s): its ids are taken as the model's\n",
                 e.what());
    return nullptr;
  }
  if (same_vocabulary(target, theirs->tokenizer())) return nullptr;
  o.tokenizer = &target;
  o.assistant_tokenizer = &theirs->tokenizer();
  return theirs;
}

void print_speculation(const GenerateOptions& o, const SpeculationStats& stats) {
  if (!o.speculation_stats) return;
  std::fprintf(stderr, "%s: %lld of %lld drafted tokens kept over %lld steps",
               o.assistant_model || o.assistant_early_exit ? "assistant" : "prompt lookup",
               static_cast<long long>(stats.accepted), static_cast<long long>(stats.drafted),
               static_cast<long long>(stats.steps));
  if (o.assistant_adaptive_confidence) {
    std::fprintf(stderr, ", confidence threshold ended at %.6g",
                 static_cast<double>(stats.assistant_confidence_threshold));
  }
  std::fprintf(stderr, "\n");
}

GenerateOptions SamplingFlags::options() const {
  const bool sampling_flag = temperature >= 0 || top_k >= 0 || top_p >= 0 || min_p >= 0 ||
                             typical_p >= 0 || epsilon_cutoff >= 0 || eta_cutoff >= 0;
  if (greedy && sampling_flag) {
    throw Error(
        "--greedy: cannot be combined with --temperature/--top-k/--top-p/--min-p/--typical-p/"
        "--epsilon-cutoff/--eta-cutoff");
  }
  GenerateOptions o;
  if (max_new_tokens >= 0) o.max_new_tokens = max_new_tokens;
  o.min_new_tokens = min_new_tokens;
  if (greedy) o.do_sample = false;
  if (sampling_flag) o.do_sample = true;
  if (temperature >= 0) o.temperature = static_cast<float>(temperature);
  if (top_k >= 0) o.top_k = top_k;
  if (top_p >= 0) o.top_p = static_cast<float>(top_p);
  if (min_p >= 0) o.min_p = static_cast<float>(min_p);
  if (typical_p >= 0) o.typical_p = static_cast<float>(typical_p);
  if (epsilon_cutoff >= 0) o.epsilon_cutoff = static_cast<float>(epsilon_cutoff);
  if (eta_cutoff >= 0) o.eta_cutoff = static_cast<float>(eta_cutoff);
  if (repetition_penalty >= 0) o.repetition_penalty = static_cast<float>(repetition_penalty);
  if (no_repeat_ngram_size >= 0) o.no_repeat_ngram_size = no_repeat_ngram_size;
  if (num_beams >= 0) o.num_beams = num_beams;
  if (num_return_sequences >= 0) o.num_return_sequences = num_return_sequences;
  if (!std::isnan(length_penalty)) o.length_penalty = static_cast<float>(length_penalty);
  if (max_time >= 0) o.max_time = max_time;
  if (!stop.empty()) o.stop_strings = stop;
  if (early_stopping == "true") {
    o.early_stopping = EarlyStopping::when_beams_finished;
  } else if (early_stopping == "false") {
    o.early_stopping = EarlyStopping::heuristic;
  } else if (early_stopping == "never") {
    o.early_stopping = EarlyStopping::never;
  } else if (!early_stopping.empty()) {
    throw Error("--early-stopping: expected true, false or never, got '" + early_stopping + "'");
  }
  if (prompt_lookup != kUnset) o.prompt_lookup_num_tokens = prompt_lookup;
  if (max_matching_ngram != kUnset) o.max_matching_ngram_size = max_matching_ngram;
  if (num_assistant_tokens != kUnset) o.num_assistant_tokens = num_assistant_tokens;
  if (!num_assistant_tokens_schedule.empty()) {
    o.num_assistant_tokens_schedule =
        assistant_tokens_schedule_named(num_assistant_tokens_schedule);
    if (!o.num_assistant_tokens_schedule) {
      throw Error(
          "--num-assistant-tokens-schedule: expected constant, heuristic or heuristic_transient, "
          "got '" +
          num_assistant_tokens_schedule + "'");
    }
  }
  if (assistant_confidence_threshold >= 0) {
    o.assistant_confidence_threshold = static_cast<float>(assistant_confidence_threshold);
  }
  o.assistant_adaptive_confidence = assistant_adaptive_confidence;
  if (assistant_early_exit != kUnset) o.assistant_early_exit = assistant_early_exit;
  if (assistant_ensemble_weight != -1) o.assistant_ensemble_weight = assistant_ensemble_weight;
  if (assistant_model.empty() && assistant_early_exit == kUnset &&
      (num_assistant_tokens != kUnset || !num_assistant_tokens_schedule.empty() ||
       assistant_confidence_threshold >= 0 || assistant_adaptive_confidence)) {
    throw Error(
        "--num-assistant-tokens / --num-assistant-tokens-schedule / "
        "--assistant-confidence-threshold / --assistant-adaptive-confidence: need "
        "--assistant-model or --assistant-early-exit");
  }
  o.seed = seed;
  return o;
}

bool streams(const GenerateOptions& o, const GenerationConfig& gen) {
  return o.num_beams.value_or(gen.num_beams) == 1 &&
         o.num_return_sequences.value_or(gen.num_return_sequences) == 1;
}

bool is_model_reference(const std::string& s) {
  // A path or Hub id has no whitespace and a slash or a .gguf suffix; a prompt usually has
  // spaces. Anything that resolves is a model whatever it looks like.
  const bool path_like = s.find_first_of(" \t\n") == std::string::npos &&
                         (s.find('/') != std::string::npos ||
                          (s.size() > 5 && s.compare(s.size() - 5, 5, ".gguf") == 0));
  if (path_like) return true;
  try {
    resolve_model_path(s);
    return true;
  } catch (const Error&) {
    return false;
  }
}

std::string read_file_option(const std::string& file) {
  if (file != "-") return read_text_file(file);
  return {std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
}

std::string model_or_default(const std::string& model) {
  return model.empty() ? ensure_default_model() : model;
}

Batch batch_from_flags(const std::string& ids, const std::string& mask) {
  Batch b;
  b.input_ids = parse_id_rows(ids, "--input-ids");
  if (!mask.empty()) b.attention_mask = parse_id_rows(mask, "--attention-mask");
  return b;
}

}  // namespace anvil::cli
