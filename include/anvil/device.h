/// @file device.h
/// A device is a value `{type, index}` written as PyTorch writes it: "cpu", "cuda", "cuda:1",
/// "xpu:0", "hpu", "opencl:0". Parsing follows PyTorch's grammar and error messages.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace anvil {

enum class DeviceType : uint8_t { cpu, cuda, xpu, hpu, opencl };

/// Every device type anvil knows, in the order messages list them.
inline constexpr DeviceType kAllDeviceTypes[] = {DeviceType::cpu, DeviceType::cuda, DeviceType::xpu,
                                                 DeviceType::hpu, DeviceType::opencl};

std::string_view device_type_name(DeviceType t);

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = -1;  ///< -1: "the current device of this type" (written without an index)

  /// Parses `([a-zA-Z_]+)(?::([1-9]\d*|0))?` exactly as torch.device does; throws anvil::Error
  /// with PyTorch's message otherwise ("Invalid device string: 'cuda:01'").
  static Device parse(std::string_view s);
  static Device cpu() { return {}; }

  /// The index to use: 0 when none was given.
  int ordinal() const { return index < 0 ? 0 : index; }
  std::string str() const;
  bool operator==(const Device& o) const { return type == o.type && ordinal() == o.ordinal(); }
};

}  // namespace anvil
