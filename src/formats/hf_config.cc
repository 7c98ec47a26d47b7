// config.json as transformers reads it: Hub-style files (rope_theta/rope_scaling at the top
// level) and transformers 5 files (rope_parameters) both load; anything the decoder cannot run
// faithfully (another activation, an unimplemented RoPE scaling) is refused by
// name rather than run wrongly.
#include "anvil/config.h"
#include "anvil/error.h"
#include "formats/json_fields.h"
#include "formats/mapped_file.h"
#include "models/architectures.h"

namespace anvil {
namespace {

namespace jf = json_fields;
using nlohmann::json;

int64_t positive(const json& j, const std::string& key, const std::string& source) {
  const int64_t v = jf::get_int(j, key, source);
  if (v <= 0) jf::fail(source, key, "must be positive, got " + std::to_string(v));
  return v;
}

// yarn's and longrope's attention_factor: absent means derived (0), else a positive factor.
void read_attention_factor(const json& params, const std::string& at, ModelConfig& c,
                           const std::string& source) {
  if (auto a = jf::opt_number(params, "attention_factor", source)) {
    if (!(*a > 0)) jf::fail(source, at + "attention_factor", "must be positive");
    c.rope.attention_factor = *a;
  }
}

// YaRN as transformers' _compute_yarn_parameters reads it: factor (null: max_position_embeddings
// over the original context, DeepSeek-V3's convention), attention_factor / mscale /
// mscale_all_dim, beta_fast and beta_slow (absent, null or 0: 32 and 1), truncate.
void parse_yarn(const json& params, const char* field, int64_t original_context, ModelConfig& c,
                const std::string& source) {
  const std::string at = std::string(field) + ".";
  c.rope.type = RopeType::yarn;
  c.rope.original_max_position_embeddings = original_context;
  if (!params.contains("factor"))
    jf::fail(source, at + "factor", "is missing (yarn RoPE needs it)");
  const auto factor = jf::opt_number(params, "factor", source);
  c.rope.factor = factor ? *factor
                         : static_cast<double>(c.max_position_embeddings) /
                               static_cast<double>(original_context);
  if (!(c.rope.factor > 0)) jf::fail(source, at + "factor", "must be positive for yarn RoPE");
  auto nonzero_or = [&](const char* key, double fallback) {
    const double v = jf::opt_number(params, key, source).value_or(0.0);
    return v != 0.0 ? v : fallback;
  };
  c.rope.beta_fast = nonzero_or("beta_fast", 32.0);
  c.rope.beta_slow = nonzero_or("beta_slow", 1.0);
  c.rope.mscale = nonzero_or("mscale", 0.0);
  c.rope.mscale_all_dim = nonzero_or("mscale_all_dim", 0.0);
  read_attention_factor(params, at, c, source);
  c.rope.truncate = jf::opt_bool(params, "truncate", source).value_or(true);
}

// longrope as _compute_longrope_parameters reads it: short_factor and long_factor (one divisor
// per frequency), factor (null or absent: max_position_embeddings over the original context)
// and attention_factor (absent: sqrt(1 + ln(factor) / ln(original)), 1 for factors up to 1).
void parse_longrope(const json& params, const char* field, int64_t original_context, ModelConfig& c,
                    const std::string& source) {
  const std::string at = std::string(field) + ".";
  c.rope.type = RopeType::longrope;
  c.rope.original_max_position_embeddings = original_context;
  const size_t half = static_cast<size_t>(c.rotary_dims() / 2);
  auto factors = [&](const char* key) {
    const json* v = jf::find(params, key);
    if (!v || !v->is_array() || v->size() != half) {
      jf::fail(source, at + key,
               "must be a list of (rotary) head_dim / 2 = " + std::to_string(half) + " numbers");
    }
    std::vector<float> out;
    for (const json& x : *v) {
      if (!x.is_number() || !(x.get<double>() > 0)) {
        jf::fail(source, at + key, "must hold positive numbers, got " + x.dump());
      }
      out.push_back(static_cast<float>(x.get<double>()));
    }
    return out;
  };
  c.rope.short_factor = factors("short_factor");
  c.rope.long_factor = factors("long_factor");
  c.rope.factor = jf::opt_number(params, "factor", source)
                      .value_or(static_cast<double>(c.max_position_embeddings) /
                                static_cast<double>(original_context));
  if (!(c.rope.factor > 0)) jf::fail(source, at + "factor", "must be positive for longrope");
  read_attention_factor(params, at, c, source);
}

// partial_rotary_factor, from the rope parameters or the top level (Phi3Config's setdefault
// order): int(head_dim * factor) dimensions rotate. Only a class that splits the head for it
// (Phi3Attention) takes a factor below 1.
void parse_partial_rotary(const json& j, const json* params, const Architecture& arch,
                          ModelConfig& c, const std::string& source) {
  std::optional<double> factor;
  const char* field = "partial_rotary_factor";
  if (params && params->is_object()) factor = jf::opt_number(*params, field, source);
  if (!factor) factor = jf::opt_number(j, field, source);
  if (!factor || *factor == 1.0) return;
  if (!arch.partial_rotary) {
    jf::fail(source, field,
             "is " + json(*factor).dump() + ", but " + arch.class_name +
                 " rotates whole heads (transformers' rotary embedding fails on it too)");
  }
  const auto dims = static_cast<int64_t>(static_cast<double>(c.head_dim) * *factor);
  if (!(*factor > 0 && *factor < 1) || dims < 2 || dims % 2 != 0) {
    jf::fail(source, field,
             "must be in (0, 1) and rotate an even number of dimensions (head_dim " +
                 std::to_string(c.head_dim) + " x factor = " + std::to_string(dims) + ")");
  }
  c.rope.rotary_dim = dims;
}

// One set of rope parameters (`params`, null when absent, named `field` in errors) into c.rope,
// over the base `theta` when the parameters give none.
void parse_rope_params(const json& j, const json* params, const char* field, double theta,
                       const Architecture& arch, ModelConfig& c, const std::string& source) {
  c.rope.theta = theta;
  parse_partial_rotary(j, params, arch, c, source);
  if (params) {
    if (!params->is_object()) jf::fail(source, field, "must be an object, got " + params->dump());
    if (auto t = jf::opt_number(*params, "rope_theta", source)) c.rope.theta = *t;
    std::string type = jf::opt_string(*params, "rope_type", source)
                           .value_or(jf::opt_string(*params, "type", source).value_or("default"));
    if (arch.yarn_means_longrope && (type == "su" || type == "yarn")) type = "longrope";
    // llama3, yarn and longrope: the pretraining context, as standardize_rope_params resolves
    // it (a top-level original_max_position_embeddings wins, then the parameters', then
    // max_position_embeddings; a config class with a top-level one has its own default).
    auto original_context = [&] {
      auto v = jf::opt_int(j, "original_max_position_embeddings", source);
      if (!v) v = jf::opt_int(*params, "original_max_position_embeddings", source);
      const int64_t n = v.value_or(arch.default_original_context > 0 ? arch.default_original_context
                                                                     : c.max_position_embeddings);
      if (n <= 0) {
        jf::fail(source, std::string(field) + ".original_max_position_embeddings",
                 "must be positive, got " + std::to_string(n));
      }
      return n;
    };
    if (type == "llama3") {
      c.rope.type = RopeType::llama3;
      auto need = [&](const char* key) {
        auto v = jf::opt_number(*params, key, source);
        if (!v)
          jf::fail(source, std::string(field) + "." + key, "is missing (llama3 RoPE needs it)");
        return *v;
      };
      c.rope.factor = need("factor");
      c.rope.low_freq_factor = need("low_freq_factor");
      c.rope.high_freq_factor = need("high_freq_factor");
      c.rope.original_max_position_embeddings = original_context();
      if (c.rope.high_freq_factor <= c.rope.low_freq_factor) {
        jf::fail(source, field, "has high_freq_factor <= low_freq_factor");
      }
    } else if (type == "linear") {
      c.rope.type = RopeType::linear;
      auto f = jf::opt_number(*params, "factor", source);
      if (!f || *f <= 0) {
        jf::fail(source, std::string(field) + ".factor",
                 "must be a positive number for linear RoPE");
      }
      c.rope.factor = *f;
    } else if (type == "dynamic") {
      // _compute_dynamic_ntk_parameters: factor, and max_position_embeddings as the length up
      // to which the frequencies stay the original ones.
      c.rope.type = RopeType::dynamic;
      auto f = jf::opt_number(*params, "factor", source);
      if (!f || !(*f > 0)) {
        jf::fail(source, std::string(field) + ".factor",
                 "must be a positive number for dynamic RoPE");
      }
      c.rope.factor = *f;
      c.rope.original_max_position_embeddings = c.max_position_embeddings;
    } else if (type == "yarn") {
      parse_yarn(*params, field, original_context(), c, source);
    } else if (type == "longrope") {
      parse_longrope(*params, field, original_context(), c, source);
    } else if (type != "default") {
      jf::fail(source, std::string(field) + ".rope_type",
               "is '" + type +
                   "', which anvil does not implement (it implements default, linear, llama3, "
                   "yarn, dynamic and longrope)");
    }
  }
  if (c.rope.theta <= 0) jf::fail(source, "rope_theta", "must be positive");
}

void parse_rope(const json& j, const Architecture& arch, ModelConfig& c,
                const std::string& source) {
  // transformers 5: rope_parameters {rope_type, rope_theta, ...}; the Hub's older files:
  // rope_theta at the top level and rope_scaling {type|rope_type, ...} or null.
  const json* params = jf::find(j, "rope_parameters");
  const char* field = "rope_parameters";
  if (!params) {
    params = jf::find(j, "rope_scaling");
    field = "rope_scaling";
  }
  const std::optional<double> theta = jf::opt_number(j, "rope_theta", source);
  const bool per_layer_type =
      params && params->is_object() &&
      (params->contains("full_attention") || params->contains("sliding_attention"));
  if (!per_layer_type) {
    parse_rope_params(j, params, field, theta.value_or(arch.default_rope_theta), arch, c, source);
    return;
  }
  // transformers 5's rope parameters per layer type (Gemma3TextConfig): the full layers' and
  // the sliding layers', each defaulting as the config class does (rope_theta, else 1e6;
  // rope_local_base_freq, else 1e4).
  if (!arch.rope_per_layer_type) {
    jf::fail(source, field,
             std::string("holds parameters per layer type, which ") + arch.class_name +
                 " does not read");
  }
  const auto part = [&](const char* key) -> const json* {
    const json* p = jf::find(*params, key);
    if (p && !p->is_null() && !p->is_object()) {
      jf::fail(source, std::string(field) + "." + key, "must be an object, got " + p->dump());
    }
    return p && p->is_object() ? p : nullptr;
  };
  parse_rope_params(j, part("full_attention"), "rope_parameters.full_attention",
                    theta.value_or(arch.default_rope_theta), arch, c, source);
  ModelConfig sliding = c;
  sliding.rope = RopeConfig{};
  parse_rope_params(j, part("sliding_attention"), "rope_parameters.sliding_attention",
                    jf::opt_number(j, "rope_local_base_freq", source).value_or(10000.0), arch,
                    sliding, source);
  c.sliding_rope = sliding.rope;
}

std::optional<DType> parse_dtype_field(const json& j, const std::string& source) {
  auto s = jf::opt_string(j, "dtype", source);
  if (!s) s = jf::opt_string(j, "torch_dtype", source);
  if (!s) return std::nullopt;
  auto d = parse_compute_dtype(*s);
  if (!d) jf::fail(source, "dtype", "is '" + *s + "', expected float32, bfloat16 or float16");
  return d;
}

}  // namespace

ModelConfig ModelConfig::from_file(const std::string& path) {
  return from_json_text(read_text_file(path), path);
}

ModelConfig ModelConfig::from_json_text(const std::string& text, const std::string& source) {
  const json j = jf::parse(text, source);
  if (!j.is_object()) throw Error(source + ": not a JSON object");
  ModelConfig c;
  const Architecture& arch = find_architecture(j, source);
  c.architecture = arch.class_name;
  c.model_type = arch.model_type;
  c.vocab_size = positive(j, "vocab_size", source);
  c.hidden_size = positive(j, "hidden_size", source);
  c.intermediate_size = positive(j, "intermediate_size", source);
  c.num_hidden_layers = positive(j, "num_hidden_layers", source);
  c.num_attention_heads = positive(j, "num_attention_heads", source);
  c.num_key_value_heads =
      jf::opt_int(j, "num_key_value_heads", source)
          .value_or(arch.default_kv_heads > 0 ? arch.default_kv_heads : c.num_attention_heads);
  if (c.num_key_value_heads <= 0 || c.num_attention_heads % c.num_key_value_heads != 0) {
    jf::fail(source, "num_key_value_heads",
             "must divide num_attention_heads (" + std::to_string(c.num_attention_heads) +
                 "), got " + std::to_string(c.num_key_value_heads));
  }
  if (jf::find(j, "head_dim")) {
    c.head_dim = positive(j, "head_dim", source);
  } else if (arch.default_head_dim > 0) {
    c.head_dim = arch.default_head_dim;
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      jf::fail(source, "hidden_size",
               "is not divisible by num_attention_heads and no head_dim is given");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (c.head_dim % 2 != 0) jf::fail(source, "head_dim", "must be even for rotary embeddings");
  c.max_position_embeddings =
      jf::opt_int(j, "max_position_embeddings", source).value_or(arch.default_max_positions);
  c.rms_norm_eps = jf::opt_number(j, "rms_norm_eps", source).value_or(arch.default_rms_norm_eps);
  if (c.rms_norm_eps <= 0) jf::fail(source, "rms_norm_eps", "must be positive");
  c.tie_word_embeddings =
      jf::opt_bool(j, "tie_word_embeddings", source).value_or(arch.default_tie_word_embeddings);
  parse_rope(j, arch, c, source);
  c.dtype = parse_dtype_field(j, source);
  c.eos_token_ids = jf::int_or_list(j, "eos_token_id", source);
  c.bos_token_id = jf::opt_int(j, "bos_token_id", source);
  c.pad_token_id = jf::opt_int(j, "pad_token_id", source);
  arch.apply(j, c, source);
  return c;
}

}  // namespace anvil
