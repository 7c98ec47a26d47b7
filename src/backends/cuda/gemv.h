// Matrix-vector products for decoding (a few activation rows): one warp per output feature,
// 16-byte weight loads, float32 accumulation. cuBLASLt takes everything larger.
#pragma once

#include <cuda_runtime.h>

#include "anvil/dtype.h"

namespace anvil::cuda {

/// The most activation rows the GEMV kernel takes.
inline constexpr int kGemvMaxRows = 8;

/// out[n, o] = sum_k x[n, k] w[o, k] (+ bias[o]), all of `dtype`, contiguous. Requires k to be a
/// multiple of 16 bytes of elements and 16-byte aligned x and w (checked by gemv_fits).
void gemv(DType dtype, const void* x, const void* w, const void* bias, void* out, int rows,
          int k, int o, cudaStream_t stream);
bool gemv_fits(DType dtype, const void* x, const void* w, int rows, int k);

}  // namespace anvil::cuda
