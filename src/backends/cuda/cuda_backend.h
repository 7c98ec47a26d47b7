// The CUDA backend: device memory through a caching allocator, one stream per device, kernels
// registered for f32, bf16 and f16 activations, and decode steps captured as CUDA graphs.
#pragma once

#include <memory>

#include "anvil/backend.h"

namespace anvil {

/// The backend, or nullptr with `reason` set when no CUDA device is usable.
std::unique_ptr<Backend> make_cuda_backend(std::string* reason);
void register_cuda_kernels();

// One per kernel file.
void register_cuda_linear();
void register_cuda_elementwise();
void register_cuda_norm();
void register_cuda_rope();
void register_cuda_attention();
void register_cuda_decode_layers();
void register_cuda_moe();
void register_cuda_sampling();
void register_cuda_token_losses();

}  // namespace anvil
