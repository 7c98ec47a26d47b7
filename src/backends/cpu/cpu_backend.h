// The CPU backend: host memory and the CPU kernels. Always present.
#pragma once

#include <memory>

#include "anvil/backend.h"

namespace anvil {

std::unique_ptr<Backend> make_cpu_backend();
/// Registers every CPU kernel in the kernel table (called once by the registry).
void register_cpu_kernels();

// One per kernel file.
void register_cpu_linear();
void register_cpu_norm();
void register_cpu_rope();
void register_cpu_top_k();
void register_cpu_token_losses();
void register_cpu_repetition_penalty();
void register_cpu_sample_candidates();
void register_cpu_attention();
void register_cpu_elementwise();
void register_cpu_moe_rows();
void register_cpu_decode_layers();

}  // namespace anvil
