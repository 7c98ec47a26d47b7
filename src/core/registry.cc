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

// Backends other than the CPU's are made when a device of their type is first asked for: a CPU
// run neither initialises CUDA's driver nor loads the OpenCL ICDs (PoCL alone maps LLVM and
// clang, ~50 MB resident and a tenth of a second).
struct Registry {
  std::mutex mu;
  std::map<DeviceType, std::unique_ptr<Backend>> backends;
  std::map<DeviceType, std::string> absent;  // why a device type has no backend in this build
  std::map<DeviceType, bool> tried;

  Registry() {
    backends[DeviceType::cpu] = make_cpu_backend();
    tried[DeviceType::cpu] = true;
  }

  // The backend of `type`, made on first use; nullptr (and `absent[type]` says why) if none.
  Backend* get(DeviceType type) {
    std::lock_guard<std::mutex> lock(mu);
    if (!tried[type]) {
      tried[type] = true;
      make(type);
    }
    auto it = backends.find(type);
    return it == backends.end() ? nullptr : it->second.get();
  }

  std::string why_absent(DeviceType type) {
    std::lock_guard<std::mutex> lock(mu);
    return absent[type];
  }

 private:
  void make(DeviceType type) {
    std::string why;
    std::unique_ptr<Backend> made;
    switch (type) {
      case DeviceType::cpu:
        return;
      case DeviceType::cuda:
#ifdef ANVIL_HAVE_CUDA
        made = make_cuda_backend(&why);
#else
        why =
            "not built: this anvil was built without the CUDA backend (no nvcc was found at build "
            "time; see docs/cuda.md)";
#endif
        break;
      case DeviceType::opencl:
      case DeviceType::xpu:
#ifdef ANVIL_HAVE_OPENCL
        made = make_opencl_backend(type, &why);
#else
        why = type == DeviceType::opencl
                  ? "not built: this anvil was built without the OpenCL backend (no OpenCL "
                    "headers/loader at build time)"
                  : "not built: Intel GPUs are reached through the OpenCL backend, which this "
                    "anvil was built without";
#endif
        break;
      case DeviceType::hpu:
        why =
            "Intel Gaudi needs Habana's SynapseAI stack, which is not distributed "
            "through any public package registry";
        break;
    }
    if (made) {
      backends[type] = std::move(made);
    } else {
      absent[type] = why;
    }
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
  return registry().get(type);
}

Backend& backend_for(Device device) {
  auto& r = registry();
  Backend* backend = r.get(device.type);
  if (!backend) {
    throw Error("device '" + device.str() + "' is not available: " + r.why_absent(device.type));
  }
  if (device.type != DeviceType::cpu) {
    const int count = backend->device_count();
    if (device.ordinal() >= count) {
      throw Error("device '" + device.str() + "' is not available: " + std::to_string(count) + " " +
                  std::string(device_type_name(device.type)) + " device(s) visible");
    }
  } else if (device.ordinal() != 0) {
    throw Error("device '" + device.str() + "' is not available: there is one cpu device, cpu:0");
  }
  return *backend;
}

std::vector<BackendReport> report_backends() {
  auto& r = registry();
  std::vector<BackendReport> out;
  for (DeviceType t : kAllDeviceTypes) {
    BackendReport rep;
    rep.type = t;
    if (Backend* backend = r.get(t); !backend) {
      rep.reason = r.why_absent(t);
    } else {
      rep.devices = backend->devices();
      rep.available = !rep.devices.empty();
      if (!rep.available) rep.reason = "the backend is built but found no device";
    }
    out.push_back(std::move(rep));
  }
  return out;
}

}  // namespace anvil
