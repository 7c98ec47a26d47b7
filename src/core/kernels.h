// The op -> kernel table every backend fills (ggml-backend style): kernels are found by
// (op name, device type, activation dtype, weight dtype). A missing entry is a clear error
// ("rms_norm is not implemented for bf16 on opencl"), never a silent fallback.
#pragma once

#include <string>

#include "anvil/device.h"
#include "anvil/dtype.h"

namespace anvil {

using AnyKernel = void (*)();

void register_kernel_raw(const std::string& op, DeviceType dev, DType act, DType weight,
                         AnyKernel fn);
/// nullptr when absent.
AnyKernel find_kernel_raw(const std::string& op, DeviceType dev, DType act, DType weight);
[[noreturn]] void missing_kernel(const std::string& op, DeviceType dev, DType act, DType weight);

template <class Args>
void register_kernel(const std::string& op, DeviceType dev, DType act, DType weight,
                     void (*fn)(const Args&)) {
  register_kernel_raw(op, dev, act, weight, reinterpret_cast<AnyKernel>(fn));
}

/// The kernel for `op`, or throws naming the op, dtypes and device.
template <class Args>
auto get_kernel(const std::string& op, DeviceType dev, DType act, DType weight)
    -> void (*)(const Args&) {
  AnyKernel k = find_kernel_raw(op, dev, act, weight);
  if (!k) missing_kernel(op, dev, act, weight);
  return reinterpret_cast<void (*)(const Args&)>(k);
}

}  // namespace anvil
