#include "models/gguf_quant_plan.h"

namespace anvil {
namespace {

// llama-quantize's use_more_bits: the first and last eighth of the layers, and every third
// layer between.
bool more_bits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

GgmlType fallback(GgmlType t, int64_t cols) {
  if (cols % 256 == 0) return t;
  switch (t) {
    case GgmlType::q4_k:
      return GgmlType::q5_0;
    case GgmlType::q5_k:
      return GgmlType::q5_1;
    case GgmlType::q6_k:
      return GgmlType::q8_0;
    default:
      return t;
  }
}

}  // namespace

std::optional<GgufQuantPlan> GgufQuantPlan::parse(const std::string& name) {
  struct Entry {
    const char* name;
    GgmlType base;
    bool mix;
  };
  static constexpr Entry kPlans[] = {
      {"q8_0", GgmlType::q8_0, false},  {"q4_0", GgmlType::q4_0, false},
      {"q4_1", GgmlType::q4_1, false},  {"q5_0", GgmlType::q5_0, false},
      {"q5_1", GgmlType::q5_1, false},  {"q4_k", GgmlType::q4_k, false},
      {"q5_k", GgmlType::q5_k, false},  {"q6_k", GgmlType::q6_k, false},
      {"q4_k_m", GgmlType::q4_k, true}, {"q5_k_m", GgmlType::q5_k, true},
  };
  for (const Entry& e : kPlans) {
    if (name == e.name) return GgufQuantPlan{e.base, e.mix};
  }
  return std::nullopt;
}

const char* GgufQuantPlan::names() {
  return "q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k, q4_k_m, q5_k_m";
}

GgmlType GgufQuantPlan::type_for(MatrixRole role, int64_t layer, int64_t layers, int64_t cols,
                                 bool tied_embeddings) const {
  GgmlType t = base;
  if (k_mix) {
    const bool output =
        role == MatrixRole::output || (role == MatrixRole::embedding && tied_embeddings);
    const bool promoted =
        (role == MatrixRole::attn_v || role == MatrixRole::ffn_down) && more_bits(layer, layers);
    if (output || promoted) t = GgmlType::q6_k;
  }
  return fallback(t, cols);
}

}  // namespace anvil
