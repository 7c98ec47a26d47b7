// DType <-> ggml block type mapping.
#include "core/quant_types.h"

#include "anvil/error.h"
#include "formats/ggml_quants.h"

namespace anvil {
namespace {

struct Pair {
  DType dtype;
  GgmlType ggml;
  std::string_view name;
};

constexpr Pair kPairs[] = {
    {DType::q8_0, GgmlType::q8_0, "q8_0"},       {DType::q4_0, GgmlType::q4_0, "q4_0"},
    {DType::q4_1, GgmlType::q4_1, "q4_1"},       {DType::q5_0, GgmlType::q5_0, "q5_0"},
    {DType::q5_1, GgmlType::q5_1, "q5_1"},       {DType::q2_k, GgmlType::q2_k, "q2_k"},
    {DType::q3_k, GgmlType::q3_k, "q3_k"},       {DType::q4_k, GgmlType::q4_k, "q4_k"},
    {DType::q5_k, GgmlType::q5_k, "q5_k"},       {DType::q6_k, GgmlType::q6_k, "q6_k"},
    {DType::iq4_nl, GgmlType::iq4_nl, "iq4_nl"}, {DType::iq4_xs, GgmlType::iq4_xs, "iq4_xs"},
};

const Pair& pair_of(DType t) {
  for (const auto& p : kPairs) {
    if (p.dtype == t) return p;
  }
  throw Error("dtype " + std::to_string(static_cast<int>(t)) + " is not a quantized type");
}

}  // namespace

int64_t quant_block_elems(DType t) {
  return ggml_block_size(pair_of(t).ggml);
}
size_t quant_block_bytes(DType t) {
  return ggml_block_bytes(pair_of(t).ggml);
}
std::string_view quant_name(DType t) {
  for (const auto& p : kPairs) {
    if (p.dtype == t) return p.name;
  }
  return "?";
}

void dequantize(DType t, const void* src, float* dst, int64_t n) {
  dequantize_row(pair_of(t).ggml, src, dst, n);
}

std::optional<DType> dtype_of_ggml(GgmlType t) {
  switch (t) {
    case GgmlType::f32:
      return DType::f32;
    case GgmlType::f16:
      return DType::f16;
    case GgmlType::bf16:
      return DType::bf16;
    default:
      break;
  }
  for (const auto& p : kPairs) {
    if (p.ggml == t) return p.dtype;
  }
  return std::nullopt;
}

}  // namespace anvil
