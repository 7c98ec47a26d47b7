// CUDA contexts: one non-blocking stream and one cuBLASLt handle per device, made on first use.
#include "backends/cuda/cuda_context.h"

#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "anvil/error.h"
#include "backends/cuda/cuda_check.h"

namespace anvil::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  throw Error(std::string("CUDA error: ") + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) +
              ") in " + what + " at " + file + ":" + std::to_string(line));
}

[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* what, const char* file,
                                     int line) {
  throw Error(std::string("cuBLASLt error: ") + cublasLtGetStatusString(st) + " in " + what +
              " at " + file + ":" + std::to_string(line));
}

namespace {

struct Probe {
  int count = 0;
  std::string reason;
  Probe() {
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      count = 0;
      reason = std::string("no usable CUDA driver or GPU: ") + cudaGetErrorString(err);
      (void)cudaGetLastError();  // clear the sticky error so later queries start clean
    } else if (count == 0) {
      reason = "the CUDA driver reports no GPU (check CUDA_VISIBLE_DEVICES)";
    }
  }
};

const Probe& probe() {
  static const Probe p;
  return p;
}

constexpr size_t kWorkspaceBytes = size_t{32} << 20;

}  // namespace

int visible_device_count() {
  return probe().count;
}
const char* unavailable_reason() {
  return probe().reason.c_str();
}

Context& context(Device device) {
  static std::mutex mu;
  static std::vector<std::unique_ptr<Context>> contexts;
  const int n = visible_device_count();
  const int i = device.ordinal();
  if (i >= n) {
    throw Error("device '" + device.str() + "' is not available: " + std::to_string(n) +
                " CUDA device(s) visible");
  }
  std::lock_guard<std::mutex> lock(mu);
  if (contexts.empty()) contexts.resize(static_cast<size_t>(n));
  auto& slot = contexts[static_cast<size_t>(i)];
  ANVIL_CUDA_CHECK(cudaSetDevice(i));
  if (!slot) {
    auto c = std::make_unique<Context>();
    c->ordinal = i;
    ANVIL_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    ANVIL_CUBLAS_CHECK(cublasLtCreate(&c->lt));
    ANVIL_CUDA_CHECK(cudaMalloc(&c->workspace, kWorkspaceBytes));
    c->workspace_bytes = kWorkspaceBytes;
    ANVIL_CUDA_CHECK(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, i));
    slot = std::move(c);
  }
  return *slot;
}

bool pdl_enabled() {
  static const bool off = std::getenv("ANVIL_CUDA_NO_PDL") != nullptr;
  if (off) return false;
  // Programmatic dependent launch exists from compute capability 9.0 (Hopper) on.
  static int major[64] = {};
  int device = 0;
  ANVIL_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= 64) return false;
  if (major[device] == 0) {
    ANVIL_CUDA_CHECK(
        cudaDeviceGetAttribute(&major[device], cudaDevAttrComputeCapabilityMajor, device));
  }
  return major[device] >= 9;
}

}  // namespace anvil::cuda
