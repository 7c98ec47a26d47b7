// Host memory (64-byte aligned, for vector loads) and the CPU's entry in `anvil devices`.
#include "backends/cpu/cpu_backend.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include "anvil/error.h"
#include "core/thread_pool.h"

namespace anvil {
namespace {

class HostBuffer : public Buffer {
 public:
  HostBuffer(void* data, size_t nbytes) : Buffer(data, nbytes, Device::cpu()) {}
  ~HostBuffer() override { std::free(data()); }
};

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "cpu";
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0)
      return (line + " ").find(" " + flag + " ") != std::string::npos;
  }
  return false;
}

class CpuBackend : public Backend {
 public:
  DeviceType type() const override { return DeviceType::cpu; }

  std::vector<DeviceInfo> devices() const override {
    DeviceInfo info;
    info.device = Device{DeviceType::cpu, 0};
    info.name = cpu_model_name();
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) info.total_memory = static_cast<uint64_t>(pages) * page;
    info.bf16 = cpu_has_flag("avx512_bf16") || cpu_has_flag("amx_bf16");
    info.details = std::to_string(num_threads()) + " threads";
    return {info};
  }

  std::shared_ptr<Buffer> allocate(Device, size_t nbytes) override {
    const size_t rounded = (nbytes + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) {
      throw Error("out of host memory allocating " + std::to_string(nbytes) + " bytes");
    }
    return std::make_shared<HostBuffer>(p, nbytes);
  }

  void copy_to_host(void* dst, const void* src, size_t n, Device) override {
    std::memcpy(dst, src, n);
  }
  void copy_from_host(void* dst, const void* src, size_t n, Device) override {
    std::memcpy(dst, src, n);
  }
  void copy_on_device(void* dst, const void* src, size_t n, Device) override {
    std::memmove(dst, src, n);
  }
  void synchronize(Device) override {}
  // The CPU keeps activations in float32 whatever the weights are: bf16 weights are widened in
  // registers, so accuracy is that of the stored weights alone.
  DType activation_dtype(DType) const override { return DType::f32; }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<CpuBackend>();
}

void register_cpu_kernels() {
  register_cpu_linear();
  register_cpu_norm();
  register_cpu_rope();
  register_cpu_attention();
  register_cpu_elementwise();
}

}  // namespace anvil
