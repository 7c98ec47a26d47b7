// Strided-batched matrix products through cuBLASLt, for attention's score and value products.
// Plans are cached per shape, as linear's are.
#pragma once

#include <cublasLt.h>

#include <cstdint>

#include "anvil/dtype.h"
#include "backends/cuda/cuda_context.h"

namespace anvil::cuda {

/// cuBLASLt's name of a float dtype; throws naming `op` for any other.
cudaDataType_t lt_type(DType d, const char* op);

/// One column-major operand: rows x cols, leading dimension ld, `stride` elements between
/// batch members.
struct MatrixView {
  DType dtype;
  int64_t rows, cols, ld, stride;
};

/// C = alpha * op(A) * op(B) for `batch` members (float32 accumulation).
void batched_gemm(Context& ctx, bool trans_a, const MatrixView& a, const void* pa,
                  const MatrixView& b, const void* pb, const MatrixView& c, void* pc, int batch,
                  float alpha);

}  // namespace anvil::cuda
