// Host memory (64-byte aligned, for vector loads) and the CPU's entry in `anvil devices`.
#include "backends/cpu/cpu_backend.h"

#include "backends/cpu/cpu_isa.h"
#include "backends/cpu/huge_pages.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "anvil/error.h"
#include "core/thread_pool.h"

namespace anvil {
namespace {

// Freed host blocks of 64 KiB to 64 MiB are kept for reuse (up to 256 MiB in all): the decoder
// allocates a few tensors per step (the logits, uploads), and each fresh large allocation is an
// mmap whose pages fault in again (measured ~3-4% of a decode step).
class BlockCache {
 public:
  static constexpr size_t kMin = size_t{64} << 10, kMax = size_t{64} << 20;
  static constexpr size_t kLimit = size_t{256} << 20;
  void* take(size_t rounded) {
    if (rounded < kMin || rounded > kMax) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    held_ -= rounded;
    return p;
  }
  void give(void* p, size_t rounded) {
    if (rounded >= kMin && rounded <= kMax) {
      std::lock_guard<std::mutex> lock(mu_);
      if (held_ + rounded <= kLimit) {
        free_[rounded].push_back(p);
        held_ += rounded;
        return;
      }
    }
    std::free(p);
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t held_ = 0;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache;  // never destroyed: buffers may outlive statics
  return *cache;
}

// Buffers of 2 MiB and more (a long KV cache's layers, prefill scratch) are whole huge pages
// (huge_pages.h).
size_t rounded_size(size_t nbytes) {
  return cpu::huge_page_rounded(nbytes);
}

void* fresh_block(size_t rounded) {
  return cpu::allocate_huge_page_rounded(rounded);
}

class HostBuffer : public Buffer {
 public:
  HostBuffer(void* data, size_t nbytes) : Buffer(data, nbytes, Device::cpu()) {}
  ~HostBuffer() override { block_cache().give(data(), rounded_size(nbytes())); }
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
    // The kernels' ISA level (ANVIL_CPU_ISA caps it), so a user sees what runs.
    info.details =
        std::to_string(num_threads()) + " threads, " + cpu::isa_name(cpu::isa()) + " kernels";
    if (cpu::isa() >= cpu::Isa::avx512) {
      info.details += cpu::wide_decode_rows() ? ", 512-bit decode rows" : ", 256-bit decode rows";
    }
    if (cpu::isa() >= cpu::Isa::avx512bf16) {
      info.details += cpu::bf16_pair_products() ? ", bf16 batches on pair products"
                                                : ", bf16 batches on widened FMA";
    }
    return {info};
  }

  std::shared_ptr<Buffer> allocate(Device, size_t nbytes) override {
    const size_t rounded = rounded_size(nbytes);
    void* p = block_cache().take(rounded);
    if (!p) p = fresh_block(rounded);
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
  // Quantized weights already round activations to 8 bits, so a half-precision cache (what
  // llama.cpp keeps by default) costs no accuracy that matters and halves the bytes attention
  // reads per step; float weights keep the exact float32 cache.
  DType kv_cache_dtype(DType weights) const override {
    return is_quantized(weights) ? DType::f16 : DType::f32;
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() {
#if defined(__GLIBC__)
  // Host vectors of a few hundred KB made every decode step (the logits row copied to the host,
  // 608 KB for a 152k vocabulary) are above glibc's default mmap threshold: each one is a fresh
  // mmap whose pages fault in and are zeroed again (~2-4% of a step). Serving blocks up to 32 MiB
  // from the heap, and trimming it only past 64 MiB free, lets them be reused.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
  return std::make_unique<CpuBackend>();
}

void register_cpu_kernels() {
  register_cpu_linear();
  register_cpu_norm();
  register_cpu_rope();
  register_cpu_top_k();
  register_cpu_token_losses();
  register_cpu_repetition_penalty();
  register_cpu_sample_candidates();
  register_cpu_attention();
  register_cpu_elementwise();
  register_cpu_moe_rows();
  register_cpu_decode_layers();
}

}  // namespace anvil
