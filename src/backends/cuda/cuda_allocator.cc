// Size classes: 512-byte steps up to 1 MiB, 2 MiB steps above, so a block is at most a few
// percent larger than asked for large tensors and small activations share a handful of classes.
#include "backends/cuda/cuda_allocator.h"

#include <cuda_runtime.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "anvil/error.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"

namespace anvil::cuda {
namespace {

size_t size_class(size_t n) {
  constexpr size_t kSmall = 512, kLarge = size_t{2} << 20, kSplit = size_t{1} << 20;
  if (n == 0) n = 1;
  if (n <= kSplit) return (n + kSmall - 1) / kSmall * kSmall;
  return (n + kLarge - 1) / kLarge * kLarge;
}

struct Pool {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> free_blocks;
  size_t reserved = 0;
};

Pool& pool(int ordinal) {
  static std::mutex mu;
  static std::map<int, Pool*> pools;  // lives for the process: buffers may die during exit
  std::lock_guard<std::mutex> lock(mu);
  Pool*& p = pools[ordinal];
  if (!p) p = new Pool();
  return *p;
}

class DeviceBuffer : public Buffer {
 public:
  DeviceBuffer(void* data, size_t nbytes, size_t block, Device device)
      : Buffer(data, nbytes, device), block_(block) {}
  ~DeviceBuffer() override {
    Pool& p = pool(device().ordinal());
    std::lock_guard<std::mutex> lock(p.mu);
    p.free_blocks[block_].push_back(data());
  }

 private:
  size_t block_;
};

void release_cached(Pool& p) {
  for (auto& [block, blocks] : p.free_blocks) {
    for (void* ptr : blocks) {
      (void)cudaFree(ptr);
      p.reserved -= block;
    }
  }
  p.free_blocks.clear();
}

}  // namespace

std::shared_ptr<Buffer> allocate(Device device, size_t nbytes) {
  Context& ctx = context(device);
  const size_t block = size_class(nbytes);
  Pool& p = pool(ctx.ordinal);
  std::lock_guard<std::mutex> lock(p.mu);
  auto it = p.free_blocks.find(block);
  if (it != p.free_blocks.end() && !it->second.empty()) {
    void* ptr = it->second.back();
    it->second.pop_back();
    return std::make_shared<DeviceBuffer>(ptr, nbytes, block, device);
  }
  if (ctx.capturing) {
    throw Error("internal error: device memory allocated while a CUDA graph is being captured");
  }
  void* ptr = nullptr;
  cudaError_t err = cudaMalloc(&ptr, block);
  if (err == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    ANVIL_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    release_cached(p);
    err = cudaMalloc(&ptr, block);
  }
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    (void)cudaMemGetInfo(&free_b, &total_b);
    throw Error("out of memory on " + device.str() + " allocating " + std::to_string(nbytes) +
                " bytes (" + std::to_string(free_b >> 20) + " MiB free of " +
                std::to_string(total_b >> 20) + " MiB): " + cudaGetErrorString(err));
  }
  p.reserved += block;
  return std::make_shared<DeviceBuffer>(ptr, nbytes, block, device);
}

size_t reserved_bytes(Device device) {
  Pool& p = pool(device.ordinal());
  std::lock_guard<std::mutex> lock(p.mu);
  return p.reserved;
}

}  // namespace anvil::cuda
