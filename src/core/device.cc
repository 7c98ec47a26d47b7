// Device strings with PyTorch's grammar (c10/core/Device.cpp) and its error messages, so users
// moving from transformers see the same behaviour.
#include "anvil/device.h"

#include <cctype>
#include <string>

#include "anvil/error.h"

namespace anvil {

std::string_view device_type_name(DeviceType t) {
  switch (t) {
    case DeviceType::cpu:
      return "cpu";
    case DeviceType::cuda:
      return "cuda";
    case DeviceType::xpu:
      return "xpu";
    case DeviceType::hpu:
      return "hpu";
    case DeviceType::opencl:
      return "opencl";
  }
  return "?";
}

Device Device::parse(std::string_view s) {
  if (s.empty()) throw Error("Device string must not be empty");
  const auto invalid = [&] { return Error("Invalid device string: '" + std::string(s) + "'"); };

  size_t i = 0;
  while (i < s.size() && (std::isalpha(static_cast<unsigned char>(s[i])) || s[i] == '_')) ++i;
  const std::string_view name = s.substr(0, i);
  if (name.empty()) throw invalid();

  int index = -1;
  if (i < s.size()) {
    if (s[i] != ':') throw invalid();
    const std::string_view digits = s.substr(i + 1);
    if (digits.empty() || digits.size() > 9) throw invalid();
    for (char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c))) throw invalid();
    }
    if (digits.size() > 1 && digits[0] == '0') throw invalid();
    index = std::stoi(std::string(digits));
  }

  for (DeviceType t : kAllDeviceTypes) {
    if (device_type_name(t) == name) return Device{t, index};
  }
  std::string expected;
  for (DeviceType t : kAllDeviceTypes) {
    if (!expected.empty()) expected += ", ";
    expected += device_type_name(t);
  }
  throw Error("Expected one of " + expected +
              " device type at start of device string: " + std::string(name));
}

std::string Device::str() const {
  std::string out(device_type_name(type));
  if (index >= 0) out += ":" + std::to_string(index);
  return out;
}

}  // namespace anvil
