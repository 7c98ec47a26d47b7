// The OpenCL backend: every OpenCL device as opencl:N, and the Intel GPUs among them as xpu:N.
#pragma once

#include <memory>
#include <string>

#include "anvil/backend.h"

namespace anvil {

/// The backend for `type` (opencl or xpu), or nullptr with `reason` set when it has no device.
std::unique_ptr<Backend> make_opencl_backend(DeviceType type, std::string* reason);
void register_opencl_kernels();
/// The line anvil logs when a run uses an xpu device: which of Intel's selection variables are
/// in effect (they move work between GPUs silently when exported and forgotten).
std::string xpu_environment_note();

}  // namespace anvil
