// The CUDA backend object: `anvil devices` information, memory, copies and graph capture.
// CUDA_VISIBLE_DEVICES is applied by the driver itself; cuda:N counts the devices it leaves.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "anvil/error.h"
#include "backends/cuda/cublaslt_loader.h"
#include "backends/cuda/cuda_allocator.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/pinned_staging.h"
#include "backends/cuda/small_copy.h"

namespace anvil {
namespace {

class CudaGraph : public StepGraph {
 public:
  CudaGraph(cudaGraphExec_t exec, cudaGraph_t graph, Device device)
      : exec_(exec), graph_(graph), device_(device) {}
  ~CudaGraph() override {
    (void)cudaGraphExecDestroy(exec_);
    (void)cudaGraphDestroy(graph_);
  }
  void replay() override { ANVIL_CUDA_CHECK(cudaGraphLaunch(exec_, cuda::stream_of(device_))); }

 private:
  cudaGraphExec_t exec_;
  cudaGraph_t graph_;
  Device device_;
};

class CudaBackend : public Backend {
 public:
  DeviceType type() const override { return DeviceType::cuda; }

  std::vector<DeviceInfo> devices() const override {
    std::vector<DeviceInfo> out;
    for (int i = 0; i < cuda::visible_device_count(); ++i) {
      cudaDeviceProp p{};
      ANVIL_CUDA_CHECK(cudaGetDeviceProperties(&p, i));
      DeviceInfo info;
      info.device = Device{DeviceType::cuda, i};
      info.name = p.name;
      info.total_memory = p.totalGlobalMem;
      info.bf16 = p.major >= 8;
      char bus[32] = {};
      if (cudaDeviceGetPCIBusId(bus, sizeof bus, i) == cudaSuccess) info.pci_bus_id = bus;
      info.details = "compute capability " + std::to_string(p.major) + "." +
                     std::to_string(p.minor) + ", " + std::to_string(p.multiProcessorCount) +
                     " SMs, " + std::to_string(p.l2CacheSize >> 20) + " MiB L2";
      out.push_back(info);
    }
    return out;
  }

  int device_count() const override { return cuda::visible_device_count(); }

  std::shared_ptr<Buffer> allocate(Device device, size_t nbytes) override {
    return cuda::allocate(device, nbytes);
  }

  // Copies are queued on the device's stream, so they are ordered with the kernels; the host
  // waits for them because its memory may be reused as soon as the call returns.
  void copy_to_host(void* dst, const void* src, size_t n, Device device) override {
    const cudaStream_t s = cuda::stream_of(device);
    ANVIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, s));
    ANVIL_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  void copy_from_host(void* dst, const void* src, size_t n, Device device) override {
    const cudaStream_t s = cuda::stream_of(device);
    ANVIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, s));
    ANVIL_CUDA_CHECK(cudaStreamSynchronize(s));
  }
  // Queued copies pass through page-locked slots (pinned_staging.h): the host returns at once.
  void copy_from_host_queued(void* dst, const void* src, size_t n, Device device) override {
    const cudaStream_t s = cuda::stream_of(device);
    cuda::PinnedStaging::Slot* slot =
        n <= cuda::PinnedStaging::kSlotBytes ? staging(device).take() : nullptr;
    if (!slot) return copy_from_host(dst, src, n, device);
    std::memcpy(slot->host, src, n);
    if (by_kernel(n)) {
      cuda::small_copy(dst, slot->device, n, s);
    } else {
      ANVIL_CUDA_CHECK(cudaMemcpyAsync(dst, slot->host, n, cudaMemcpyHostToDevice, s));
    }
    ANVIL_CUDA_CHECK(cudaEventRecord(slot->done, s));
    staging(device).release(slot);  // reused only after `done`
  }
  std::unique_ptr<PendingCopy> copy_to_host_async(void* dst, const void* src, size_t n,
                                                  Device device) override {
    const cudaStream_t s = cuda::stream_of(device);
    cuda::PinnedStaging& st = staging(device);
    cuda::PinnedStaging::Slot* slot = n <= cuda::PinnedStaging::kSlotBytes ? st.take() : nullptr;
    if (!slot) return Backend::copy_to_host_async(dst, src, n, device);
    if (by_kernel(n)) {
      cuda::small_copy(slot->device, src, n, s);
    } else {
      ANVIL_CUDA_CHECK(cudaMemcpyAsync(slot->host, src, n, cudaMemcpyDeviceToHost, s));
    }
    ANVIL_CUDA_CHECK(cudaEventRecord(slot->done, s));
    return std::make_unique<PinnedCopy>(st, slot, dst, n);
  }
  void copy_on_device(void* dst, const void* src, size_t n, Device device) override {
    if (by_kernel(n)) return cuda::small_copy(dst, src, n, cuda::stream_of(device));
    ANVIL_CUDA_CHECK(
        cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, cuda::stream_of(device)));
  }
  void synchronize(Device device) override {
    ANVIL_CUDA_CHECK(cudaStreamSynchronize(cuda::stream_of(device)));
  }
  // Half-precision weights keep half-precision activations (as transformers does on GPUs);
  // the kernels accumulate in float32.
  DType activation_dtype(DType weights) const override {
    return weights == DType::bf16 || weights == DType::f16 ? weights : DType::f32;
  }

  std::unique_ptr<StepGraph> capture(Device device, const std::function<void()>& body) override {
    cuda::Context& ctx = cuda::context(device);
    ANVIL_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal));
    ctx.capturing = true;
    try {
      body();
    } catch (...) {
      ctx.capturing = false;
      cudaGraph_t broken = nullptr;
      (void)cudaStreamEndCapture(ctx.stream, &broken);
      if (broken) (void)cudaGraphDestroy(broken);
      (void)cudaGetLastError();
      throw;
    }
    ctx.capturing = false;
    cudaGraph_t graph = nullptr;
    ANVIL_CUDA_CHECK(cudaStreamEndCapture(ctx.stream, &graph));
    cudaGraphExec_t exec = nullptr;
    ANVIL_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    return std::make_unique<CudaGraph>(exec, graph, device);
  }

 private:
  // Queued copies of a few bytes run as kernels (small_copy.h) unless
  // ANVIL_CUDA_COPY_ENGINE=1 keeps them on the copy engine (for measuring the difference).
  static bool by_kernel(size_t n) {
    static const bool engine = [] {
      const char* v = std::getenv("ANVIL_CUDA_COPY_ENGINE");
      return v != nullptr && std::string(v) == "1";
    }();
    return n <= cuda::kSmallCopyBytes && !engine;
  }

  // A copy to the host through a held slot: wait() moves the bytes out and frees the slot.
  class PinnedCopy : public PendingCopy {
   public:
    PinnedCopy(cuda::PinnedStaging& staging, cuda::PinnedStaging::Slot* slot, void* dst, size_t n)
        : staging_(staging), slot_(slot), dst_(dst), n_(n) {}
    ~PinnedCopy() override {
      if (slot_) staging_.release(slot_);
    }
    void wait() override {
      if (!slot_) return;
      ANVIL_CUDA_CHECK(cudaEventSynchronize(slot_->done));
      std::memcpy(dst_, slot_->host, n_);
      staging_.release(slot_);
      slot_ = nullptr;
    }

   private:
    cuda::PinnedStaging& staging_;
    cuda::PinnedStaging::Slot* slot_;
    void* dst_;
    size_t n_;
  };

  cuda::PinnedStaging& staging(Device device) {
    cuda::context(device);  // makes the device current: the slots' events belong to it
    std::lock_guard<std::mutex> lock(mu_);
    auto& slot = staging_[device.ordinal()];
    if (!slot) slot = std::make_unique<cuda::PinnedStaging>();
    return *slot;
  }

  std::mutex mu_;
  std::map<int, std::unique_ptr<cuda::PinnedStaging>> staging_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::string* reason) {
  if (cuda::visible_device_count() == 0) {
    *reason = cuda::unavailable_reason();
    return nullptr;
  }
  if (!cuda::load_cublaslt(reason)) return nullptr;
  return std::make_unique<CudaBackend>();
}

void register_cuda_kernels() {
  register_cuda_linear();
  register_cuda_elementwise();
  register_cuda_moe();
  register_cuda_norm();
  register_cuda_rope();
  register_cuda_attention();
  register_cuda_decode_layers();
  register_cuda_sampling();
  register_cuda_token_losses();
}

}  // namespace anvil
