// OpenCL devices behind the backend interface. Intel's runtime applies ZE_AFFINITY_MASK and
// ZE_ENABLE_PCI_ID_DEVICE_ORDER itself before anvil enumerates; anvil never applies them again,
// it only reports them.
#include "backends/opencl/opencl_backend.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "anvil/error.h"
#include "backends/opencl/command_buffer.h"
#include "backends/opencl/opencl_runtime.h"
#include "backends/opencl/profile.h"

namespace anvil {
namespace {

std::string env_or(const char* name, const char* none) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string(none);
}

class OpenClBackend : public Backend {
 public:
  explicit OpenClBackend(DeviceType type) : type_(type) {}
  DeviceType type() const override { return type_; }

  std::vector<DeviceInfo> devices() const override {
    std::vector<DeviceInfo> out;
    const auto& all = opencl::devices();
    std::vector<int> indices;
    if (type_ == DeviceType::xpu) {
      indices = opencl::intel_gpus();
    } else {
      for (size_t i = 0; i < all.size(); ++i) indices.push_back(static_cast<int>(i));
    }
    for (size_t n = 0; n < indices.size(); ++n) {
      const opencl::DeviceRecord& r = all[static_cast<size_t>(indices[n])];
      DeviceInfo info;
      info.device = Device{type_, static_cast<int>(n)};
      info.name = r.name;
      info.total_memory = r.memory;
      info.bf16 = r.bf16;
      info.pci_bus_id = r.pci_bus_id;
      info.details = r.platform_name + ", " + r.version + ", fp16 " + (r.fp16 ? "yes" : "no") +
                     ", subgroups " + (r.subgroups ? "yes" : "no") + ", command buffers " +
                     (r.command_buffer ? "yes" : "no");
      if (type_ == DeviceType::xpu) info.details += ", opencl:" + std::to_string(indices[n]);
      if (r.vendor_id == 0x8086 && r.gpu) info.details += ", " + xpu_environment_note();
      out.push_back(info);
    }
    return out;
  }

  int device_count() const override {
    return type_ == DeviceType::xpu ? static_cast<int>(opencl::intel_gpus().size())
                                    : static_cast<int>(opencl::devices().size());
  }

  std::shared_ptr<Buffer> allocate(Device device, size_t nbytes) override {
    note_xpu_use(device);
    return opencl::allocate(device, nbytes);
  }

  void copy_to_host(void* dst, const void* src, size_t n, Device device) override {
    not_recording(device, "copy to the host");
    opencl::release_gate(opencl::queue(device));
    const auto loc = opencl::locate(src);
    opencl::check(clEnqueueReadBuffer(opencl::queue(device).queue, loc.mem, CL_TRUE, loc.offset, n,
                                      dst, 0, nullptr, nullptr),
                  "clEnqueueReadBuffer");
  }
  void copy_from_host(void* dst, const void* src, size_t n, Device device) override {
    not_recording(device, "copy from the host");
    opencl::release_gate(opencl::queue(device));
    const auto loc = opencl::locate(dst);
    opencl::check(clEnqueueWriteBuffer(opencl::queue(device).queue, loc.mem, CL_TRUE, loc.offset, n,
                                       src, 0, nullptr, nullptr),
                  "clEnqueueWriteBuffer");
  }
  void copy_on_device(void* dst, const void* src, size_t n, Device device) override {
    not_recording(device, "copy on the device");
    opencl::release_gate(opencl::queue(device));
    const auto d = opencl::locate(dst), s = opencl::locate(src);
    opencl::check(clEnqueueCopyBuffer(opencl::queue(device).queue, s.mem, d.mem, s.offset, d.offset,
                                      n, 0, nullptr, nullptr),
                  "clEnqueueCopyBuffer");
  }
  void synchronize(Device device) override {
    opencl::release_gate(opencl::queue(device));
    opencl::check(clFinish(opencl::queue(device).queue), "clFinish");
  }
  std::unique_ptr<StepGraph> capture(Device device, const std::function<void()>& body) override {
    return opencl::record_step(device, body);
  }

 private:
  // A recorded step holds kernel launches only (Backend::capture's contract): a copy would run
  // at record time instead of at each replay.
  static void not_recording(Device device, const char* what) {
    if (opencl::recording(opencl::queue(device))) {
      throw Error(std::string("internal error: a ") + what + " while recording a step on " +
                  device.str());
    }
  }

 public:
  // Float32 activations on every OpenCL device: half-precision weights are storage, widened on
  // load, so devices without fp16/bf16 arithmetic run the same kernels.
  DType activation_dtype(DType) const override { return DType::f32; }

 private:
  void note_xpu_use(Device device) {
    if (type_ != DeviceType::xpu || noted_) return;
    noted_ = true;
    std::fprintf(stderr, "anvil: using %s (%s)\n", device.str().c_str(),
                 xpu_environment_note().c_str());
  }
  DeviceType type_;
  bool noted_ = false;
};

}  // namespace

std::string xpu_environment_note() {
  return "ZE_AFFINITY_MASK=" + env_or("ZE_AFFINITY_MASK", "(unset)") +
         " ZE_ENABLE_PCI_ID_DEVICE_ORDER=" + env_or("ZE_ENABLE_PCI_ID_DEVICE_ORDER", "(unset)");
}

std::unique_ptr<Backend> make_opencl_backend(DeviceType type, std::string* reason) {
  if (opencl::devices().empty()) {
    *reason = opencl::unavailable_reason();
    return nullptr;
  }
  if (type == DeviceType::xpu && opencl::intel_gpus().empty()) {
    *reason = "no Intel GPU among the " + std::to_string(opencl::devices().size()) +
              " OpenCL device(s) (Intel GPUs are reached through Intel's OpenCL runtime, "
              "intel-opencl-icd; " +
              xpu_environment_note() + ")";
    return nullptr;
  }
  return std::make_unique<OpenClBackend>(type);
}

}  // namespace anvil
