// Random-weight model folders that both anvil and transformers load.
#include "models/init_model.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "anvil/config.h"
#include "anvil/error.h"
#include "anvil/safetensors.h"
#include "core/random.h"
#include "core/thread_pool.h"
#include "formats/ggml_quants.h"
#include "formats/gguf_writer.h"
#include "formats/mapped_file.h"
#include "models/gguf_quant_plan.h"
#include "models/rope_table.h"
#include "models/weights.h"
#include "tokenizer/components.h"

namespace anvil {
namespace fs = std::filesystem;

namespace {

// The config text for `like`: an embedded Hub config by name, or a config.json file.
std::pair<std::string, std::string> find_config(const std::string& like) {
  std::string names;
  for (const auto& c : embedded_configs()) {
    if (like == c.name) return {c.json, "configs/" + like + ".json"};
    names += names.empty() ? "" : ", ";
    names += c.name;
  }
  std::error_code ec;
  if (fs::is_regular_file(like, ec)) return {read_text_file(like), like};
  throw Error("--like: unknown model '" + like + "' (known: " + names + ", or a config.json path)");
}

// RoPE scaling in the GGUF keys llama.cpp's llama, qwen2 and qwen3 loaders read: the type,
// factor and original context, and rope.scaling.attn_factor, which multiplies YaRN's own
// 0.1 ln(factor) + 1 (so mscale / mscale_all_dim and an explicit attention factor fold into it).
// llama3 goes in rope_freqs.weight instead (llama architecture only, as llama.cpp reads it).
// What those loaders cannot read (other betas, an untruncated ramp) is refused rather than
// written as a file llama.cpp would run as another model.
void add_rope_scaling(GgufWriter& w, const std::string& arch, const RopeConfig& rope) {
  const std::string a = arch + ".";
  if (rope.type == RopeType::llama3 && arch != "llama") {
    throw Error(
        "init-model: llama.cpp reads llama3 RoPE scaling (rope_freqs.weight) only for "
        "the llama architecture, not " +
        arch + "; write a safetensors folder instead");
  }
  if (rope.type == RopeType::dynamic) {
    throw Error(
        "init-model: GGUF (llama.cpp) has no dynamic NTK RoPE scaling; write a "
        "safetensors folder instead");
  }
  if (rope.type == RopeType::linear) {
    w.add_string(a + "rope.scaling.type", "linear");
    w.add_f32(a + "rope.scaling.factor", static_cast<float>(rope.factor));
  }
  if (rope.type != RopeType::yarn) return;
  if (!rope.truncate || rope.beta_fast != 32.0 || rope.beta_slow != 1.0) {
    throw Error("init-model: llama.cpp's " + arch +
                " GGUF keys have no form for this yarn "
                "RoPE (beta_fast / beta_slow other than 32 / 1, or truncate false); write a "
                "safetensors folder instead");
  }
  w.add_string(a + "rope.scaling.type", "yarn");
  w.add_f32(a + "rope.scaling.factor", static_cast<float>(rope.factor));
  w.add_u32(a + "rope.scaling.original_context_length",
            static_cast<uint32_t>(rope.original_max_position_embeddings));
  RopeConfig plain = rope;  // the factor llama.cpp applies by itself
  plain.attention_factor = plain.mscale = plain.mscale_all_dim = 0;
  const double multiplier = yarn_attention_factor(rope) / yarn_attention_factor(plain);
  if (multiplier != 1.0) {
    w.add_f32(a + "rope.scaling.attn_factor", static_cast<float>(multiplier));
  }
}

// Fills `out` (n values of `dtype`) from normal(0, std), chunked so threads share the work and
// the result does not depend on the thread count.
void fill_normal(std::span<std::byte> out, DType dtype, double stddev, uint64_t seed,
                 uint64_t tensor_id) {
  const int64_t n = static_cast<int64_t>(out.size() / dtype_size(dtype));
  constexpr int64_t kChunk = 1 << 16;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> tmp(kChunk);
    for (int64_t c = c0; c < c1; ++c) {
      Xoshiro256 rng(seed, (tensor_id << 32) + static_cast<uint64_t>(c));
      const int64_t b = c * kChunk, e = std::min(n, b + kChunk);
      for (int64_t i = b; i < e; ++i) tmp[i - b] = static_cast<float>(rng.normal() * stddev);
      convert_from_f32(tmp.data(), out.data() + b * dtype_size(dtype), dtype,
                       static_cast<size_t>(e - b));
    }
  });
}

void fill_constant(std::span<std::byte> out, DType dtype, float value) {
  const size_t n = out.size() / dtype_size(dtype);
  std::vector<float> tmp(n, value);
  convert_from_f32(tmp.data(), out.data(), dtype, n);
}

// The weights as a GGUF file laid out as llama.cpp writes one (llama.cpp tensor names, {arch}.*
// metadata): matrices (and the embedding) in the block types of `plan` (or one float type),
// norms and biases F32.
// The float values before quantization are those the safetensors writer would store (same seed
// and tensor ids), quantized by quantize_row. The tokenizer is a placeholder vocabulary of
// vocab_size tokens: the 256 byte tokens, then "<t256>", ... (the model is random: its ids mean
// nothing). Llama's and SmolLM3's q/k rows are permuted as llama.cpp's converter permutes them,
// so the file and the folder hold one model.
// Gemma's keys as llama.cpp's converter writes them and its gemma* loaders read them
// (gguf_model.cc, read_gguf_gemma): softcaps, the window, the sliding layers as
// attention.sliding_window_pattern flags, the sliding layers' RoPE base. What those keys cannot
// say (another query_pre_attn_scalar than llama.cpp derives, a scaled sliding RoPE, Gemma's
// untied head) is refused.
void add_gemma_keys(GgufWriter& w, const std::string& arch, const ModelConfig& c) {
  const std::string a = arch + ".";
  if (arch == "gemma") {
    if (!c.tie_word_embeddings) {
      throw Error("init-model: llama.cpp's gemma architecture ties the head to token_embd");
    }
    return;
  }
  const bool big = c.num_hidden_layers == (arch == "gemma2" ? 46 : 62);
  const double derived = big ? static_cast<double>(c.hidden_size / c.num_attention_heads)
                             : static_cast<double>(c.head_dim);
  if (c.query_pre_attn_scalar.value_or(derived) != derived) {
    throw Error("init-model: GGUF has no query_pre_attn_scalar (llama.cpp scales " + arch +
                " scores by 1/sqrt(" + std::to_string(static_cast<int64_t>(derived)) +
                ") for this shape, not 1/sqrt(" + std::to_string(*c.query_pre_attn_scalar) +
                ")); write a safetensors folder");
  }
  if (arch == "gemma2") {
    w.add_f32(a + "attn_logit_softcapping", static_cast<float>(c.attn_logit_softcapping));
  }
  w.add_f32(a + "final_logit_softcapping", static_cast<float>(c.final_logit_softcapping));
  if (!c.has_sliding_window()) {
    if (arch == "gemma2") {  // llama.cpp's gemma2 always has one (default 4096)
      throw Error("init-model: llama.cpp's gemma2 needs a sliding window; this config has none");
    }
    return;
  }
  w.add_u32(a + "attention.sliding_window", static_cast<uint32_t>(*c.sliding_window));
  std::vector<bool> sliding;
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) sliding.push_back(c.layer_window(l) > 0);
  w.add_bool_array(a + "attention.sliding_window_pattern", sliding);
  if (c.sliding_rope) {
    if (c.sliding_rope->type != RopeType::standard) {
      throw Error("init-model: llama.cpp rotates " + arch +
                  "'s sliding layers unscaled; this config scales them");
    }
    w.add_f32(a + "rope.freq_base_swa", static_cast<float>(c.sliding_rope->theta));
  }
}

// What llama.cpp's MoE architectures cannot say: dense layers between sparse ones, and a
// routing other than the one build_moe_ffn applies to the architecture.
void check_gguf_moe(const ModelConfig& c, const std::string& arch) {
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    if (!c.is_moe_layer(l)) {
      throw Error("init-model: llama.cpp's " + arch +
                  " has no dense layers between sparse ones "
                  "(layer " +
                  std::to_string(l) + "); write a safetensors folder instead");
    }
  }
  const bool renormalised = arch == "qwen3moe" || arch == "llama" || arch == "granitemoe";
  if (c.norm_topk_prob != renormalised) {
    throw Error(std::string("init-model: llama.cpp ") +
                (renormalised ? "renormalises " : "does not renormalise ") + arch +
                "'s picked experts; this config's norm_topk_prob differs");
  }
}

void write_gguf_model(const ModelConfig& c, double stddev, uint64_t seed, const GgufQuantPlan& plan,
                      const std::string& dtype_name, const std::string& path) {
  // llama.cpp's converter writes Mistral as llama; it has no sliding window to write.
  static const std::map<std::string, std::string> kGgufArch = {
      {"mistral", "llama"},      {"mixtral", "llama"},      {"granitemoeshared", "granitemoe"},
      {"gemma3_text", "gemma3"}, {"qwen3_moe", "qwen3moe"}, {"qwen2_moe", "qwen2moe"}};
  const auto renamed = kGgufArch.find(c.model_type);
  const std::string arch = renamed != kGgufArch.end() ? renamed->second : c.model_type;
  const bool gemma = arch.rfind("gemma", 0) == 0;
  const bool granite = arch == "granite" || arch == "granitemoe";
  if (arch != "llama" && arch != "qwen2" && arch != "qwen3" && arch != "smollm3" &&
      arch != "olmo2" && arch != "qwen3moe" && arch != "qwen2moe" && arch != "olmoe" && !gemma &&
      !granite) {
    throw Error(
        "init-model: a GGUF file needs a llama, mistral, mixtral, qwen2, qwen3, qwen2_moe, "
        "qwen3_moe, olmoe, gemma (1-3), smollm3, olmo2, granite, granitemoe or "
        "granitemoeshared model, not '" +
        c.model_type + "'");
  }
  if (c.num_experts > 0) check_gguf_moe(c, arch);
  if (arch == "smollm3") {
    // llama.cpp's smollm3 has no key for NoPE layers: every 4th layer is one.
    for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
      if (c.layer_rotates(l) != ((l + 1) % 4 != 0)) {
        throw Error(
            "init-model: llama.cpp's smollm3 makes every 4th layer a NoPE layer; this config's "
            "no_rope_layers differ at layer " +
            std::to_string(l) + "; write a safetensors folder instead");
      }
    }
  }
  // llama.cpp's converter permutes these architectures' q/k rows for its interleaved RoPE; the
  // rows are written that way, so the file holds the model the safetensors folder of the same
  // seed holds.
  const bool permuted_qk = arch == "llama" || arch == "smollm3" || granite;
  if (c.has_sliding_window() && !gemma) {
    throw Error("init-model: GGUF (llama.cpp) has no sliding-window attention (sliding_window " +
                std::to_string(*c.sliding_window) + "); write a safetensors folder instead");
  }
  if (ggml_block_size(plan.base) > 1) {
    for (const int64_t width :
         {c.hidden_size, c.intermediate_size, c.num_attention_heads * c.head_dim,
          c.num_experts > 0 ? c.moe_intermediate_size : 0, c.shared_expert_intermediate_size}) {
      if (width % 32 != 0) {
        throw Error("init-model: " + dtype_name + " needs matrix rows that are whole 32-value " +
                    "blocks (a width of " + std::to_string(width) + ")");
      }
    }
  }
  GgufWriter w(path);
  w.add_string("general.architecture", arch);
  w.add_string("general.name", "anvil init-model");
  // llama.cpp's file type (llama_ftype) where one names this file's mix exactly; a pure Q4_K or
  // Q5_K file has none (llama.cpp then guesses it from the tensors).
  static const std::map<std::string, uint32_t> kFileTypes = {
      {"f32", 0},  {"f16", 1},     {"q4_0", 2},    {"q4_1", 3},  {"q8_0", 7}, {"q5_0", 8},
      {"q5_1", 9}, {"q4_k_m", 15}, {"q5_k_m", 17}, {"q6_k", 18}, {"bf16", 32}};
  if (const auto ft = kFileTypes.find(dtype_name); ft != kFileTypes.end()) {
    w.add_u32("general.file_type", ft->second);
  }
  const std::string a = arch + ".";
  w.add_u32(a + "block_count", static_cast<uint32_t>(c.num_hidden_layers));
  w.add_u32(a + "context_length", static_cast<uint32_t>(c.max_position_embeddings));
  w.add_u32(a + "embedding_length", static_cast<uint32_t>(c.hidden_size));
  w.add_u32(a + "feed_forward_length", static_cast<uint32_t>(c.intermediate_size));
  w.add_u32(a + "attention.head_count", static_cast<uint32_t>(c.num_attention_heads));
  w.add_u32(a + "attention.head_count_kv", static_cast<uint32_t>(c.num_key_value_heads));
  w.add_u32(a + "attention.key_length", static_cast<uint32_t>(c.head_dim));
  w.add_u32(a + "attention.value_length", static_cast<uint32_t>(c.head_dim));
  w.add_f32(a + "attention.layer_norm_rms_epsilon", static_cast<float>(c.rms_norm_eps));
  w.add_f32(a + "rope.freq_base", static_cast<float>(c.rope.theta));
  add_rope_scaling(w, arch, c.rope);
  if (gemma) add_gemma_keys(w, arch, c);
  if (granite) {  // the multipliers, as llama.cpp's GraniteModel writes them
    w.add_f32(a + "embedding_scale", static_cast<float>(c.embedding_scale));
    w.add_f32(a + "residual_scale", static_cast<float>(c.residual_multiplier));
    w.add_f32(a + "logit_scale", static_cast<float>(c.logits_scaling));
    if (c.attention_multiplier) {
      w.add_f32(a + "attention.scale", static_cast<float>(*c.attention_multiplier));
    }
  }
  if (c.num_experts > 0) {
    w.add_u32(a + "expert_count", static_cast<uint32_t>(c.num_experts));
    w.add_u32(a + "expert_used_count", static_cast<uint32_t>(c.num_experts_per_tok));
    if (arch == "qwen3moe" || arch == "qwen2moe") {
      w.add_u32(a + "expert_feed_forward_length", static_cast<uint32_t>(c.moe_intermediate_size));
    }
    if (c.shared_expert_intermediate_size > 0) {
      w.add_u32(a + "expert_shared_feed_forward_length",
                static_cast<uint32_t>(c.shared_expert_intermediate_size));
    }
  }
  // A byte-level BPE vocabulary with no merges: the 256 byte tokens first (so any text
  // tokenizes, byte by byte), placeholders after. The merges list, though empty, is there:
  // llama.cpp refuses a gpt2 tokenizer without one.
  w.add_string("tokenizer.ggml.model", "gpt2");
  std::vector<std::string> tokens(static_cast<size_t>(c.vocab_size));
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] =
        i < 256 ? tok::byte_to_char(static_cast<unsigned char>(i)) : "<t" + std::to_string(i) + ">";
  }
  w.add_string_array("tokenizer.ggml.tokens", tokens);
  w.add_string_array("tokenizer.ggml.merges", {});
  if (c.bos_token_id)
    w.add_u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(*c.bos_token_id));
  if (!c.eos_token_ids.empty()) {
    w.add_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(c.eos_token_ids[0]));
  }

  uint64_t tensor_id = 0;
  const int64_t layers = c.num_hidden_layers;
  // `heads`: the heads whose rows llama.cpp permutes (within each head, HF row i < d/2 goes to
  // row 2i and row i + d/2 to row 2i + 1), or 0.
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols,
                    MatrixRole role = MatrixRole::other, int64_t layer = 0, int64_t heads = 0) {
    const uint64_t id = tensor_id++;
    const GgmlType qtype = plan.type_for(role, layer, layers, cols, c.tie_word_embeddings);
    w.add_tensor(name, qtype, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)},
                 [=](std::span<std::byte> out) {
                   std::vector<float> f(static_cast<size_t>(rows * cols));
                   fill_normal(std::as_writable_bytes(std::span<float>(f)), DType::f32, stddev,
                               seed, id);
                   const uint64_t row_bytes = ggml_row_bytes(qtype, cols);
                   const int64_t dim = heads ? rows / heads : 0, half = dim / 2;
                   const auto stored_row = [&](int64_t r) {
                     if (!heads) return r;
                     const int64_t j = r % dim;
                     return r - j + (j < half ? 2 * j : 2 * (j - half) + 1);
                   };
                   parallel_for(rows, 64, [&](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) {
                       quantize_row(qtype, f.data() + r * cols,
                                    out.data() + stored_row(r) * row_bytes, cols);
                     }
                   });
                 });
  };
  auto constant = [&](const std::string& name, int64_t n, float v) {
    ++tensor_id;
    w.add_tensor(name, GgmlType::f32, {static_cast<uint64_t>(n)},
                 [=](std::span<std::byte> out) { fill_constant(out, DType::f32, v); });
  };
  // A layer's experts stacked as llama.cpp stores them ({cols, rows, experts}): expert e's
  // matrix `part` (0 gate, 1 up, 2 down) has the values of the safetensors writer's tensor
  // first_id + 3e + part.
  auto stacked = [&](const std::string& name, int64_t rows, int64_t cols, int part,
                     uint64_t first_id, MatrixRole role, int64_t layer) {
    const GgmlType qtype = plan.type_for(role, layer, layers, cols, c.tie_word_embeddings);
    const int64_t experts = c.num_experts;
    w.add_tensor(
        name, qtype,
        {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows), static_cast<uint64_t>(experts)},
        [=](std::span<std::byte> out) {
          const uint64_t row_bytes = ggml_row_bytes(qtype, cols);
          std::vector<float> f(static_cast<size_t>(rows * cols));
          for (int64_t e = 0; e < experts; ++e) {
            fill_normal(std::as_writable_bytes(std::span<float>(f)), DType::f32, stddev, seed,
                        first_id + 3 * static_cast<uint64_t>(e) + part);
            std::byte* at = out.data() + e * rows * row_bytes;
            parallel_for(rows, 64, [&](int64_t r0, int64_t r1) {
              for (int64_t r = r0; r < r1; ++r) {
                quantize_row(qtype, f.data() + r * cols, at + r * row_bytes, cols);
              }
            });
          }
        });
  };
  // A tensor of `dims` ({cols, rows[, experts]}) whose rows are rows of another tensor's values
  // (the folder's tensor `id`, `source_rows` x cols): GraniteMoe's stacks as llama.cpp splits
  // them, output row r taken from source row source_row(r).
  auto rows_of = [&](const std::string& name, std::vector<uint64_t> dims, uint64_t id,
                     int64_t source_rows, auto source_row, MatrixRole role, int64_t layer) {
    const int64_t cols = static_cast<int64_t>(dims[0]);
    int64_t rows = 1;
    for (size_t d = 1; d < dims.size(); ++d) rows *= static_cast<int64_t>(dims[d]);
    const GgmlType qtype = plan.type_for(role, layer, layers, cols, c.tie_word_embeddings);
    w.add_tensor(name, qtype, std::move(dims), [=](std::span<std::byte> out) {
      std::vector<float> f(static_cast<size_t>(source_rows * cols));
      fill_normal(std::as_writable_bytes(std::span<float>(f)), DType::f32, stddev, seed, id);
      const uint64_t row_bytes = ggml_row_bytes(qtype, cols);
      parallel_for(rows, 64, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          quantize_row(qtype, f.data() + source_row(r) * cols, out.data() + r * row_bytes, cols);
        }
      });
    });
  };
  const int64_t h = c.hidden_size, hd = c.head_dim, inter = c.intermediate_size;
  const int64_t q_out = c.num_attention_heads * hd, kv_out = c.num_key_value_heads * hd;
  matrix("token_embd.weight", c.vocab_size, h, MatrixRole::embedding);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    if (!c.output_norms_only) constant(p + "attn_norm.weight", h, 1.0f);
    matrix(p + "attn_q.weight", q_out, h, MatrixRole::other, i,
           permuted_qk ? c.num_attention_heads : 0);
    matrix(p + "attn_k.weight", kv_out, h, MatrixRole::other, i,
           permuted_qk ? c.num_key_value_heads : 0);
    matrix(p + "attn_v.weight", kv_out, h, MatrixRole::attn_v, i);
    matrix(p + "attn_output.weight", h, q_out);
    if (c.qkv_bias) {
      constant(p + "attn_q.bias", q_out, 0.0f);
      constant(p + "attn_k.bias", kv_out, 0.0f);
      constant(p + "attn_v.bias", kv_out, 0.0f);
    }
    if (c.o_bias) constant(p + "attn_output.bias", h, 0.0f);
    if (c.qk_norm) {
      constant(p + "attn_q_norm.weight", hd, 1.0f);
      constant(p + "attn_k_norm.weight", hd, 1.0f);
    }
    if (c.qk_norm_full) {  // OLMo 2: over the whole projections
      constant(p + "attn_q_norm.weight", q_out, 1.0f);
      constant(p + "attn_k_norm.weight", kv_out, 1.0f);
    }
    // Gemma's norms are stored as 1 + w (llama.cpp's converter adds the 1): 1 for w = 0 too.
    // OLMo 2 has the output norms only.
    const bool output_norms = c.sandwich_norms || c.output_norms_only;
    if (output_norms) constant(p + "post_attention_norm.weight", h, 1.0f);
    if (!c.output_norms_only) constant(p + "ffn_norm.weight", h, 1.0f);
    if (output_norms) constant(p + "post_ffw_norm.weight", h, 1.0f);
    if (c.is_moe_layer(i) && c.stacked_experts) {
      // GraniteMoe: the folder's stacks (ids router, gate/up, down, shared gate/up, shared
      // down), gate and up rows split as llama.cpp's converter splits them.
      const int64_t mi = c.moe_intermediate_size, si = c.shared_expert_intermediate_size;
      const int64_t experts = c.num_experts;
      const auto e_count = static_cast<uint64_t>(experts);
      matrix(p + "ffn_gate_inp.weight", experts, h);
      const uint64_t gate_up = tensor_id++, down = tensor_id++;
      const std::vector<uint64_t> dims = {static_cast<uint64_t>(h), static_cast<uint64_t>(mi),
                                          e_count};
      for (const int64_t half : {int64_t{0}, int64_t{1}}) {
        rows_of(
            p + (half ? "ffn_up_exps.weight" : "ffn_gate_exps.weight"), dims, gate_up,
            experts * 2 * mi, [=](int64_t r) { return (r / mi) * 2 * mi + half * mi + r % mi; },
            MatrixRole::other, i);
      }
      rows_of(
          p + "ffn_down_exps.weight",
          {static_cast<uint64_t>(mi), static_cast<uint64_t>(h), e_count}, down, experts * h,
          [](int64_t r) { return r; }, MatrixRole::ffn_down, i);
      if (si > 0) {
        const uint64_t shared = tensor_id++;
        for (const int64_t half : {int64_t{0}, int64_t{1}}) {
          rows_of(
              p + (half ? "ffn_up_shexp.weight" : "ffn_gate_shexp.weight"),
              {static_cast<uint64_t>(h), static_cast<uint64_t>(si)}, shared, 2 * si,
              [=](int64_t r) { return half * si + r; }, MatrixRole::other, i);
        }
        matrix(p + "ffn_down_shexp.weight", h, si);
      }
      continue;
    }
    if (c.is_moe_layer(i)) {  // the ids follow the safetensors writer's per-expert order
      const int64_t mi = c.moe_intermediate_size, si = c.shared_expert_intermediate_size;
      matrix(p + "ffn_gate_inp.weight", c.num_experts, h);
      const uint64_t first = tensor_id;
      tensor_id += 3 * static_cast<uint64_t>(c.num_experts);
      stacked(p + "ffn_gate_exps.weight", mi, h, 0, first, MatrixRole::other, i);
      stacked(p + "ffn_up_exps.weight", mi, h, 1, first, MatrixRole::other, i);
      stacked(p + "ffn_down_exps.weight", h, mi, 2, first, MatrixRole::ffn_down, i);
      if (si > 0) {
        matrix(p + "ffn_gate_shexp.weight", si, h);
        matrix(p + "ffn_up_shexp.weight", si, h);
        matrix(p + "ffn_down_shexp.weight", h, si);
        // [1, hidden] in the folder, a vector here (zeros there too: a constant's id)
        constant(p + "ffn_gate_inp_shexp.weight", h, 0.0f);
      }
      continue;
    }
    matrix(p + "ffn_gate.weight", inter, h);
    matrix(p + "ffn_up.weight", inter, h);
    matrix(p + "ffn_down.weight", h, inter, MatrixRole::ffn_down, i);
    if (c.mlp_bias) {
      constant(p + "ffn_gate.bias", inter, 0.0f);
      constant(p + "ffn_up.bias", inter, 0.0f);
      constant(p + "ffn_down.bias", h, 0.0f);
    }
  }
  constant("output_norm.weight", h, 1.0f);
  if (!c.tie_word_embeddings) matrix("output.weight", c.vocab_size, h, MatrixRole::output);
  if (c.rope.type == RopeType::llama3) {
    // As llama.cpp's converter stores Llama 3.1's scaling: one divisor per frequency (last, so
    // that the other tensors' random values do not depend on it).
    RopeConfig plain = c.rope;
    plain.type = RopeType::standard;
    const auto base = rope_frequencies(plain, hd).inv_freq;
    const auto scaled = rope_frequencies(c.rope, hd).inv_freq;
    std::vector<float> divisors(base.size());
    for (size_t i = 0; i < base.size(); ++i) divisors[i] = base[i] / scaled[i];
    w.add_tensor("rope_freqs.weight", GgmlType::f32, {static_cast<uint64_t>(divisors.size())},
                 [divisors](std::span<std::byte> out) {
                   std::memcpy(out.data(), divisors.data(), divisors.size() * sizeof(float));
                 });
  }
  w.finish();
}

}  // namespace

void init_model(const std::string& like, const std::string& out_dir, uint64_t seed, DType dtype) {
  init_model(like, out_dir, seed, std::string(dtype_name(dtype)));
}

void init_model(const std::string& like, const std::string& out_dir, uint64_t seed,
                const std::string& dtype_spec, InitFormat format) {
  std::optional<GgufQuantPlan> plan = GgufQuantPlan::parse(dtype_spec);
  const std::optional<DType> float_type = parse_compute_dtype(dtype_spec);
  if (!plan && !float_type) {
    throw Error("init-model: dtype '" + dtype_spec + "' is not one of f32, bf16, f16, " +
                GgufQuantPlan::names());
  }
  if (!plan && format == InitFormat::gguf) {
    const DType t = *float_type;
    plan = GgufQuantPlan{t == DType::bf16  ? GgmlType::bf16
                         : t == DType::f16 ? GgmlType::f16
                                           : GgmlType::f32,
                         false};
  }
  const DType dtype = float_type.value_or(DType::f32);
  const auto [text, source] = find_config(like);
  const ModelConfig c = ModelConfig::from_json_text(text, source);
  nlohmann::ordered_json raw = nlohmann::ordered_json::parse(text);
  const double stddev = raw.value("initializer_range", 0.02);

  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw Error(out_dir + ": cannot create folder: " + ec.message());

  const char* torch_name = dtype == DType::bf16  ? "bfloat16"
                           : dtype == DType::f16 ? "float16"
                                                 : "float32";
  raw["torch_dtype"] = torch_name;
  {
    std::ofstream f(fs::path(out_dir) / "config.json");
    f << raw.dump(2) << "\n";
    if (!f) throw Error(out_dir + "/config.json: write failed");
  }
  {
    nlohmann::ordered_json gen = nlohmann::ordered_json::object();  // `{}` without token ids
    if (c.bos_token_id) gen["bos_token_id"] = *c.bos_token_id;
    if (c.eos_token_ids.size() == 1) gen["eos_token_id"] = c.eos_token_ids[0];
    if (c.eos_token_ids.size() > 1) gen["eos_token_id"] = c.eos_token_ids;
    if (c.pad_token_id) gen["pad_token_id"] = *c.pad_token_id;
    std::ofstream f(fs::path(out_dir) / "generation_config.json");
    f << gen.dump(2) << "\n";
    if (!f) throw Error(out_dir + "/generation_config.json: write failed");
  }

  if (plan) {
    write_gguf_model(c, stddev, seed, *plan, dtype_spec,
                     (fs::path(out_dir) / "model.gguf").string());
    return;
  }
  SafetensorsWriter w((fs::path(out_dir) / "model.safetensors").string());
  w.set_metadata("format", "pt");
  uint64_t tensor_id = 0;
  auto normal = [&](const std::string& name, Shape shape) {
    const uint64_t id = tensor_id++;
    w.add(name, dtype, std::move(shape),
          [=](std::span<std::byte> out) { fill_normal(out, dtype, stddev, seed, id); });
  };
  auto constant = [&](const std::string& name, Shape shape, float v) {
    ++tensor_id;
    w.add(name, dtype, std::move(shape),
          [=](std::span<std::byte> out) { fill_constant(out, dtype, v); });
  };
  const int64_t h = c.hidden_size, hd = c.head_dim, inter = c.intermediate_size;
  const int64_t q_out = c.num_attention_heads * hd, kv_out = c.num_key_value_heads * hd;
  // Norms start as the identity: weight 1, or w = 0 where the scale is 1 + w (Gemma's zeros).
  const float unit_norm = c.norm_plus_one ? 0.0f : 1.0f;
  normal("model.embed_tokens.weight", {c.vocab_size, h});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    if (!c.output_norms_only) constant(p + "input_layernorm.weight", {h}, unit_norm);
    if (c.fused_projections) {
      normal(p + "self_attn.qkv_proj.weight", {q_out + 2 * kv_out, h});
    } else {
      normal(p + "self_attn.q_proj.weight", {q_out, h});
      normal(p + "self_attn.k_proj.weight", {kv_out, h});
      normal(p + "self_attn.v_proj.weight", {kv_out, h});
    }
    normal(p + "self_attn.o_proj.weight", {h, q_out});
    if (c.qkv_bias) {
      constant(p + "self_attn.q_proj.bias", {q_out}, 0.0f);
      constant(p + "self_attn.k_proj.bias", {kv_out}, 0.0f);
      constant(p + "self_attn.v_proj.bias", {kv_out}, 0.0f);
    }
    if (c.o_bias) constant(p + "self_attn.o_proj.bias", {h}, 0.0f);
    if (c.qk_norm) {
      constant(p + "self_attn.q_norm.weight", {hd}, unit_norm);
      constant(p + "self_attn.k_norm.weight", {hd}, unit_norm);
    }
    if (c.qk_norm_full) {
      constant(p + "self_attn.q_norm.weight", {q_out}, unit_norm);
      constant(p + "self_attn.k_norm.weight", {kv_out}, unit_norm);
    }
    constant(p + "post_attention_layernorm.weight", {h}, unit_norm);
    if (c.output_norms_only) constant(p + "post_feedforward_layernorm.weight", {h}, unit_norm);
    if (c.sandwich_norms) {
      constant(p + "pre_feedforward_layernorm.weight", {h}, unit_norm);
      constant(p + "post_feedforward_layernorm.weight", {h}, unit_norm);
    }
    if (c.is_moe_layer(i)) {
      const MoeNames n = moe_names(c, i);
      const int64_t mi = c.moe_intermediate_size, si = c.shared_expert_intermediate_size;
      normal(n.router, {c.num_experts, h});
      if (c.stacked_experts) {  // GraniteMoe's stacks, and its shared MLP's gate and up rows
        normal(n.stacked_gate_up, {c.num_experts, 2 * mi, h});
        normal(n.stacked_down, {c.num_experts, h, mi});
        if (si > 0) {
          normal(n.shared_gate_up, {2 * si, h});
          normal(n.shared_down, {h, si});
        }
        continue;
      }
      for (int64_t e = 0; e < c.num_experts; ++e) {
        normal(n.gate(e), {mi, h});
        normal(n.up(e), {mi, h});
        normal(n.down(e), {h, mi});
      }
      if (si > 0) {
        normal(n.shared_gate, {si, h});
        normal(n.shared_up, {si, h});
        normal(n.shared_down, {h, si});
        constant(n.shared_expert_gate, {1, h}, 0.0f);  // sigmoid(0): half the shared expert
      }
      continue;
    }
    if (c.fused_projections) {
      normal(p + "mlp.gate_up_proj.weight", {2 * inter, h});
    } else {
      normal(p + "mlp.gate_proj.weight", {inter, h});
      normal(p + "mlp.up_proj.weight", {inter, h});
    }
    normal(p + "mlp.down_proj.weight", {h, inter});
    if (c.mlp_bias) {
      constant(p + "mlp.gate_proj.bias", {inter}, 0.0f);
      constant(p + "mlp.up_proj.bias", {inter}, 0.0f);
      constant(p + "mlp.down_proj.bias", {h}, 0.0f);
    }
  }
  constant("model.norm.weight", {h}, unit_norm);
  if (!c.tie_word_embeddings) normal("lm_head.weight", {c.vocab_size, h});
  w.finish();
}

}  // namespace anvil
