#include "backends/opencl/command_buffer.h"

#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "anvil/error.h"
#include "backends/opencl/opencl_runtime.h"
#include "backends/opencl/profile.h"

namespace anvil::opencl {
namespace {

// The extension's entry points, looked up per platform (provisional extensions are not exported
// by the ICD loader).
struct Api {
  clCreateCommandBufferKHR_fn create = nullptr;
  clCommandNDRangeKernelKHR_fn ndrange = nullptr;
  clFinalizeCommandBufferKHR_fn finalize = nullptr;
  clEnqueueCommandBufferKHR_fn enqueue = nullptr;
  clReleaseCommandBufferKHR_fn release = nullptr;
  bool complete() const { return create && ndrange && finalize && enqueue && release; }
};

Api api_for(cl_platform_id platform) {
  Api a;
  const auto get = [&](const char* name) {
    return clGetExtensionFunctionAddressForPlatform(platform, name);
  };
  a.create = reinterpret_cast<clCreateCommandBufferKHR_fn>(get("clCreateCommandBufferKHR"));
  a.ndrange = reinterpret_cast<clCommandNDRangeKernelKHR_fn>(get("clCommandNDRangeKernelKHR"));
  a.finalize = reinterpret_cast<clFinalizeCommandBufferKHR_fn>(get("clFinalizeCommandBufferKHR"));
  a.enqueue = reinterpret_cast<clEnqueueCommandBufferKHR_fn>(get("clEnqueueCommandBufferKHR"));
  a.release = reinterpret_cast<clReleaseCommandBufferKHR_fn>(get("clReleaseCommandBufferKHR"));
  return a;
}

// The kernel objects of the step being recorded, per queue (one recording at a time per queue).
std::vector<cl_kernel>& recorded_kernels(const Queue& q) {
  static std::map<const Queue*, std::vector<cl_kernel>> kernels;
  return kernels[&q];
}

class CommandBufferStep : public StepGraph {
 public:
  CommandBufferStep(Api api, cl_command_queue queue, cl_command_buffer_khr cb,
                    std::vector<cl_kernel> kernels)
      : api_(api), queue_(queue), cb_(cb), kernels_(std::move(kernels)) {}
  ~CommandBufferStep() override {
    api_.release(cb_);
    for (cl_kernel k : kernels_) clReleaseKernel(k);
  }
  void replay() override {
    check(api_.enqueue(1, &queue_, cb_, 0, nullptr, nullptr), "clEnqueueCommandBufferKHR");
  }

 private:
  Api api_;
  cl_command_queue queue_;
  cl_command_buffer_khr cb_;
  std::vector<cl_kernel> kernels_;
};

}  // namespace

cl_command_buffer_khr recording(const Queue& q) {
  return q.recording;
}

cl_kernel kernel_for_recording(Queue& q, cl_kernel kernel) {
  cl_program program = nullptr;
  check(clGetKernelInfo(kernel, CL_KERNEL_PROGRAM, sizeof program, &program, nullptr),
        "clGetKernelInfo");
  size_t n = 0;
  check(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, 0, nullptr, &n), "clGetKernelInfo");
  std::string name(n, '\0');
  check(clGetKernelInfo(kernel, CL_KERNEL_FUNCTION_NAME, n, name.data(), nullptr),
        "clGetKernelInfo");
  cl_int err = CL_SUCCESS;
  cl_kernel own = clCreateKernel(program, name.c_str(), &err);
  check(err, "clCreateKernel");
  recorded_kernels(q).push_back(own);
  return own;
}

void record_launch(Queue& q, cl_kernel kernel, const size_t* global, const size_t* local) {
  // Arguments are captured when the command is recorded, so the shared kernel objects may be
  // set again for the next launch.
  const Api api = api_for(q.record->platform);
  check(api.ndrange(q.recording, nullptr, nullptr, kernel, 2, nullptr, global, local, 0, nullptr,
                    nullptr, nullptr),
        "clCommandNDRangeKernelKHR");
}

std::unique_ptr<StepGraph> record_step(Device device, const std::function<void()>& body) {
  static const bool off = std::getenv("ANVIL_OPENCL_NO_COMMAND_BUFFER") != nullptr;
  Queue& q = queue(device);
  if (off || profiling() || gating() || !q.record->command_buffer) return nullptr;
  const Api api = api_for(q.record->platform);
  if (!api.complete()) return nullptr;
  cl_int err = CL_SUCCESS;
  // Replays are enqueued back to back; a device that allows it may overlap them.
  const cl_command_buffer_flags_khr flags =
      q.record->command_buffer_simultaneous ? CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR : 0;
  const cl_command_buffer_properties_khr props[] = {CL_COMMAND_BUFFER_FLAGS_KHR, flags, 0};
  cl_command_buffer_khr cb = api.create(1, &q.queue, props, &err);
  check(err, "clCreateCommandBufferKHR");
  q.recording = cb;
  std::vector<cl_kernel>& kernels = recorded_kernels(q);
  kernels.clear();
  const auto abandon = [&] {
    q.recording = nullptr;
    api.release(cb);
    for (cl_kernel k : kernels) clReleaseKernel(k);
    kernels.clear();
  };
  try {
    body();
  } catch (...) {
    abandon();
    throw;
  }
  q.recording = nullptr;
  const cl_int fin = api.finalize(cb);
  if (fin != CL_SUCCESS) {
    abandon();
    check(fin, "clFinalizeCommandBufferKHR");
  }
  auto step = std::make_unique<CommandBufferStep>(api, q.queue, cb, std::move(kernels));
  kernels.clear();
  return step;
}

}  // namespace anvil::opencl
