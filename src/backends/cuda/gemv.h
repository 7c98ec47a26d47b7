// Matrix-vector products for decoding (a few activation rows): one warp per output feature,
// 16-byte weight loads, float32 accumulation. cuBLASLt takes everything larger.
#pragma once

#include <cuda_runtime.h>

#include "anvil/dtype.h"

namespace anvil::cuda {

/// The most activation rows the GEMV kernels take.
inline constexpr int kGemvMaxRows = 4;

/// Up to three weight matrices sharing one input (q, k and v): segment i has `rows[i]` output
/// features, its own weight, bias (or null) and output [n, rows[i]].
struct GemvSegments {
  const void* w[3] = {};
  const void* bias[3] = {};
  void* out[3] = {};
  int rows[3] = {};
  int count = 0;
  const void* norm_w = nullptr;  ///< x is RMS-normalised with this weight first (when set)
  float eps = 0.0f;
  bool accumulate = false;  ///< out[0] += product (a residual add) instead of out[0] = product
  /// The rounded product times this, rounded again, before it is stored or added (Granite's
  /// residual multiplier); 1: none.
  float out_scale = 1.0f;
  /// Where set (with norm_w), the normalised rows [n, k] the products read are stored here too,
  /// for a later op that reads them (the experts after their router).
  void* normed = nullptr;
};

/// True when x and every weight suit the kernels: 1..kGemvMaxRows rows, rows of a multiple of
/// 16 bytes, 16-byte aligned.
bool gemv_fits(DType dtype, const void* x, const void* const* weights, int nweights, int n, int k);

/// out_i[r, o] = sum_k x[r, k] w_i[o, k] (+ bias_i[o]) for every segment.
void gemv(DType dtype, const void* x, const GemvSegments& seg, int n, int k, int sm_count,
          cudaStream_t stream);

/// out[r, o] = act(g) * u with g, u the products of x with gate row o and up row o (+ biases),
/// each rounded to the activation type first, act SiLU or (gelu) GELU's tanh form; x
/// RMS-normalised with norm_w first when set.
void gemv_swiglu(DType dtype, const void* x, const void* gate, const void* gate_bias,
                 const void* up, const void* up_bias, void* out, int n, int k, int o,
                 const void* norm_w, float eps, bool gelu, int sm_count, cudaStream_t stream);

}  // namespace anvil::cuda
