// cuBLASLt is opened when the CUDA backend is first made, not linked: a binary built with CUDA
// then starts (and runs on the CPU) where the library is absent, and a CPU run does not map and
// relocate it (~190 MB resident: its 84 MB data segment and the text its relocations touch).
#pragma once

#include <string>

namespace anvil::cuda {

/// Opens libcublasLt (LD_LIBRARY_PATH and the loader's paths, then the toolkit's library folder
/// found at build time); false with the loader's message in `why` when it cannot be opened or
/// lacks a function anvil calls.
bool load_cublaslt(std::string* why);

}  // namespace anvil::cuda
