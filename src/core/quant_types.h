// anvil's quantized dtypes are ggml's block types; this maps them onto the block layouts and
// dequantization of src/formats/ggml_quants.h, so the rest of core never names ggml.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "anvil/dtype.h"

namespace anvil {

enum class GgmlType : uint32_t;

int64_t quant_block_elems(DType t);
size_t quant_block_bytes(DType t);
std::string_view quant_name(DType t);
/// Dequantizes `n` values (a multiple of the block size).
void dequantize(DType t, const void* src, float* dst, int64_t n);
/// The dtype holding a GGUF tensor type as stored, if anvil has one.
std::optional<DType> dtype_of_ggml(GgmlType t);

}  // namespace anvil
