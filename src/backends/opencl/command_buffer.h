// OpenCL command buffers (cl_khr_command_buffer): a decode step recorded once and replayed, the
// OpenCL counterpart of a CUDA graph. Each launch otherwise costs the host a driver call and its
// argument setting; replay enqueues the whole step at once.
#pragma once

#include <functional>
#include <memory>

#include "anvil/backend.h"
#include "backends/opencl/opencl_runtime.h"  // the OpenCL headers, at anvil's target version

namespace anvil::opencl {

/// The command buffer `q`'s launches are being recorded into, or null (launches run).
cl_command_buffer_khr recording(const Queue& q);

/// Records the kernels `body` launches on `device` into a command buffer; nullptr when the
/// device lacks cl_khr_command_buffer or ANVIL_OPENCL_NO_COMMAND_BUFFER is set.
std::unique_ptr<StepGraph> record_step(Device device, const std::function<void()>& body);

/// A kernel object of its own for a launch being recorded into `q`'s command buffer (a copy of
/// `kernel` without arguments), owned by the recording: drivers may read a recorded kernel's
/// arguments from the kernel object at replay, so recorded launches must not share one.
cl_kernel kernel_for_recording(Queue& q, cl_kernel kernel);

/// Appends one NDRange launch to the command buffer being recorded for `q`.
void record_launch(Queue& q, cl_kernel kernel, const size_t* global, const size_t* local);

}  // namespace anvil::opencl
