/// @file devices.h
/// Which devices this process can use, per device type, as torch.cuda / torch.xpu ask it:
///
///     if (anvil::xpu::is_available()) device = "xpu:0";
///     int gpus = anvil::cuda::device_count();
///
/// The answer reflects this build (a backend compiled in) and this machine (a driver and a
/// device present, after CUDA_VISIBLE_DEVICES or ZE_AFFINITY_MASK as the drivers apply them).
#pragma once

#include "anvil/device.h"

namespace anvil {

bool is_available(DeviceType type);
int device_count(DeviceType type);

namespace cuda {
inline bool is_available() {
  return anvil::is_available(DeviceType::cuda);
}
inline int device_count() {
  return anvil::device_count(DeviceType::cuda);
}
}  // namespace cuda
namespace xpu {
inline bool is_available() {
  return anvil::is_available(DeviceType::xpu);
}
inline int device_count() {
  return anvil::device_count(DeviceType::xpu);
}
}  // namespace xpu
namespace opencl {
inline bool is_available() {
  return anvil::is_available(DeviceType::opencl);
}
inline int device_count() {
  return anvil::device_count(DeviceType::opencl);
}
}  // namespace opencl
namespace hpu {
inline bool is_available() {
  return anvil::is_available(DeviceType::hpu);
}
inline int device_count() {
  return anvil::device_count(DeviceType::hpu);
}
}  // namespace hpu

}  // namespace anvil
