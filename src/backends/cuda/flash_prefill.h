// Flash attention for prefill on the tensor cores (see flash_prefill.cu).
#pragma once

#include "ops/ops.h"

namespace anvil::cuda {

/// Runs `a` with the flash kernel and returns true when it takes the case (bf16/f16, head_dim
/// 64 or 128, past length on the host); false leaves it to the other attention paths.
/// ANVIL_CUDA_NO_FLASH=1 always returns false (for measuring against the cuBLASLt path).
bool flash_prefill(const ops::AttentionArgs& a);

}  // namespace anvil::cuda
