// Element-wise activations on AVX2 + FMA CPUs (no AVX-512). Compiled with -mavx2 -mfma and
// called only after runtime detection; free of other headers, like kernels_avx512.h.
#pragma once

#include <cstdint>

namespace anvil::cpu {

/// out[i] = silu(gate[i]) * up[i] for i < n (out may be gate), with the vectorised e^x of the
/// AVX-512 kernels (~2e-7 relative to expf).
void swiglu_avx2(const float* gate, const float* up, float* out, int64_t n);
/// out[i] = gelu_tanh(gate[i]) * up[i] (GeGLU), as swiglu_avx2.
void geglu_avx2(const float* gate, const float* up, float* out, int64_t n);

}  // namespace anvil::cpu
