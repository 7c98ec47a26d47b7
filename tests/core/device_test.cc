// Device strings follow torch.device's grammar and messages.
#include <gtest/gtest.h>

#include "anvil/backend.h"
#include "anvil/device.h"
#include "anvil/devices.h"
#include "anvil/error.h"

namespace anvil {
namespace {

TEST(Device, ParsesValidStrings) {
  EXPECT_EQ(Device::parse("cpu").type, DeviceType::cpu);
  EXPECT_EQ(Device::parse("cpu").index, -1);
  EXPECT_EQ(Device::parse("cuda").type, DeviceType::cuda);
  const Device c1 = Device::parse("cuda:1");
  EXPECT_EQ(c1.type, DeviceType::cuda);
  EXPECT_EQ(c1.index, 1);
  EXPECT_EQ(Device::parse("xpu:0").type, DeviceType::xpu);
  EXPECT_EQ(Device::parse("xpu:0").index, 0);
  EXPECT_EQ(Device::parse("hpu").type, DeviceType::hpu);
  EXPECT_EQ(Device::parse("opencl:0").type, DeviceType::opencl);
  EXPECT_EQ(Device::parse("cuda:12").index, 12);
  EXPECT_EQ(Device::parse("cuda:1").str(), "cuda:1");
  EXPECT_EQ(Device::parse("hpu").str(), "hpu");
}

std::string error_of(const std::string& s) {
  try {
    Device::parse(s);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Device, RejectsWithPyTorchMessages) {
  EXPECT_EQ(error_of(""), "Device string must not be empty");
  for (const char* bad :
       {"cuda:", "cuda:01", "cuda:-1", " cpu", "cuda:1:2", "cpu ", ":0", "cuda:a"}) {
    EXPECT_EQ(error_of(bad), std::string("Invalid device string: '") + bad + "'") << bad;
  }
  EXPECT_EQ(error_of("gpu"),
            "Expected one of cpu, cuda, xpu, hpu, opencl device type at start of device string: "
            "gpu");
}

TEST(Device, EqualityTreatsMissingIndexAsZero) {
  EXPECT_TRUE(Device::parse("cuda") == Device::parse("cuda:0"));
  EXPECT_FALSE(Device::parse("cuda:1") == Device::parse("cuda:0"));
  EXPECT_FALSE(Device::parse("cpu") == Device::parse("cuda"));
}

}  // namespace
}  // namespace anvil

namespace anvil {
namespace {

// The per-type queries agree with `anvil devices` (the registry's report), whatever the machine.
TEST(DeviceQueries, AgreeWithTheBackendReport) {
  for (const BackendReport& r : report_backends()) {
    EXPECT_EQ(is_available(r.type), r.available) << device_type_name(r.type);
    EXPECT_EQ(device_count(r.type), r.available ? static_cast<int>(r.devices.size()) : 0);
  }
  EXPECT_TRUE(is_available(DeviceType::cpu));
  EXPECT_EQ(device_count(DeviceType::cpu), 1);
  EXPECT_FALSE(hpu::is_available());
  EXPECT_EQ(xpu::device_count(), device_count(DeviceType::xpu));
  EXPECT_EQ(cuda::is_available(), is_available(DeviceType::cuda));
  EXPECT_EQ(opencl::device_count(), device_count(DeviceType::opencl));
}

}  // namespace
}  // namespace anvil
