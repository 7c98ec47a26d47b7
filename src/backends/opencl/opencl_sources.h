// anvil's OpenCL C kernels, embedded in the binary and built once per device and weight type.
#pragma once

namespace anvil::opencl {

extern const char* const kOpenClSource;

}  // namespace anvil::opencl
