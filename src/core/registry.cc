// The one place backends are registered, and the kernel table they fill. Absent backends are
// listed with the reason, so `anvil devices` can say why a device type cannot be used.
#include <map>
#include <mutex>
#include <tuple>

#include "anvil/backend.h"
#include "anvil/error.h"
#include "backends/cpu/cpu_backend.h"
#ifdef ANVIL_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif
#ifdef ANVIL_HAVE_OPENCL
#include "backends/opencl/opencl_backend.h"
#endif
#include "core/kernels.h"

namespace anvil {
namespace {

using Key = std::tuple<std::string, DeviceType, DType, DType>;

std::map<Key, AnyKernel>& kernel_table() {
  static std::map<Key, AnyKernel> table;
  return table;
}

struct Registry {
  std::map<DeviceType, std::unique_ptr<Backend>> backends;
  std::map<DeviceType, std::string> absent;  // why a device type has no backend in this build

  Registry() {
    backends[DeviceType::cpu] = make_cpu_backend();
#ifdef ANVIL_HAVE_CUDA
    std::string why;
    if (auto cuda = make_cuda_backend(&why)) {
      backends[DeviceType::cuda] = std::move(cuda);
    } else {
      absent[DeviceType::cuda] = why;
    }
#else
    absent[DeviceType::cuda] =
        "not built: this anvil was built without the CUDA backend (no nvcc was found at build "
        "time; see docs/cuda.md)";
#endif
#ifdef ANVIL_HAVE_OPENCL
    for (DeviceType t : {DeviceType::opencl, DeviceType::xpu}) {
      std::string why_not;
      if (auto b = make_opencl_backend(t, &why_not)) {
        backends[t] = std::move(b);
      } else {
        absent[t] = why_not;
      }
    }
#else
    absent[DeviceType::opencl] =
        "not built: this anvil was built without the OpenCL backend (no OpenCL headers/loader "
        "at build time)";
    absent[DeviceType::xpu] =
        "not built: Intel GPUs are reached through the OpenCL backend, which this anvil was "
        "built without";
#endif
    absent[DeviceType::hpu] =
        "Intel Gaudi needs Habana's SynapseAI stack, which is not distributed "
        "through any public package registry";
  }
};

std::once_flag g_once;
Registry* g_registry = nullptr;

Registry& registry() {
  std::call_once(g_once, [] {
    g_registry = new Registry();  // lives for the process: kernels may run during exit
    register_cpu_kernels();
#ifdef ANVIL_HAVE_CUDA
    register_cuda_kernels();
#endif
#ifdef ANVIL_HAVE_OPENCL
    register_opencl_kernels();
#endif
  });
  return *g_registry;
}

}  // namespace

void register_kernel_raw(const std::string& op, DeviceType dev, DType act, DType weight,
                         AnyKernel fn) {
  kernel_table()[Key{op, dev, act, weight}] = fn;
}

AnyKernel find_kernel_raw(const std::string& op, DeviceType dev, DType act, DType weight) {
  registry();
  auto it = kernel_table().find(Key{op, dev, act, weight});
  return it == kernel_table().end() ? nullptr : it->second;
}

void missing_kernel(const std::string& op, DeviceType dev, DType act, DType weight) {
  std::string what(dtype_name(act));
  if (weight != act) what += " activations with " + std::string(dtype_name(weight)) + " weights";
  throw Error(op + " is not implemented for " + what + " on " + std::string(device_type_name(dev)));
}

bool supports(const std::string& op, DeviceType type, DType act, DType weight) {
  return find_kernel_raw(op, type, act, weight) != nullptr;
}

std::unique_ptr<PendingCopy> Backend::copy_to_host_async(void* dst, const void* src, size_t nbytes,
                                                         Device device) {
  struct Done : PendingCopy {
    void wait() override {}
  };
  copy_to_host(dst, src, nbytes, device);
  return std::make_unique<Done>();
}

Backend* find_backend(DeviceType type) {
  auto& r = registry();
  auto it = r.backends.find(type);
  return it == r.backends.end() ? nullptr : it->second.get();
}

Backend& backend_for(Device device) {
  auto& r = registry();
  auto it = r.backends.find(device.type);
  if (it == r.backends.end()) {
    throw Error("device '" + device.str() + "' is not available: " + r.absent[device.type]);
  }
  if (device.type != DeviceType::cpu) {
    const int count = it->second->device_count();
    if (device.ordinal() >= count) {
      throw Error("device '" + device.str() + "' is not available: " + std::to_string(count) + " " +
                  std::string(device_type_name(device.type)) + " device(s) visible");
    }
  } else if (device.ordinal() != 0) {
    throw Error("device '" + device.str() + "' is not available: there is one cpu device, cpu:0");
  }
  return *it->second;
}

std::vector<BackendReport> report_backends() {
  auto& r = registry();
  std::vector<BackendReport> out;
  for (DeviceType t : kAllDeviceTypes) {
    BackendReport rep;
    rep.type = t;
    auto it = r.backends.find(t);
    if (it == r.backends.end()) {
      rep.reason = r.absent[t];
    } else {
      rep.devices = it->second->devices();
      rep.available = !rep.devices.empty();
      if (!rep.available) rep.reason = "the backend is built but found no device";
    }
    out.push_back(std::move(rep));
  }
  return out;
}

}  // namespace anvil
