// The OpenCL runtime of anvil: devices in the order of platforms and devices (opencl:N), the
// Intel GPUs among them (xpu:N), one context, in-order queue and set of built programs per
// device, and device memory addressed through stand-in pointers.
//
// OpenCL memory is a handle (cl_mem), not an address, while anvil's tensors are pointers with
// views at offsets. Each allocation therefore gets a range of stand-in addresses (non-canonical
// on x86-64, so a host dereference faults instead of reading garbage); kernels translate a
// tensor's pointer back to (cl_mem, byte offset).
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "anvil/backend.h"

namespace anvil::opencl {

struct DeviceRecord {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string name, vendor, platform_name, version;
  cl_uint vendor_id = 0;
  bool gpu = false;
  bool fp16 = false;           ///< cl_khr_fp16
  bool bf16 = false;           ///< cl_intel_bfloat16_conversions
  bool subgroups = false;      ///< cl_khr_subgroups or cl_intel_subgroups
  bool subgroups_khr = false;  ///< cl_khr_subgroups (its built-ins need OpenCL C 2.0)
  uint64_t memory = 0;
  uint64_t max_alloc = 0;                    ///< CL_DEVICE_MAX_MEM_ALLOC_SIZE
  cl_uint compute_units = 1;                 ///< CL_DEVICE_MAX_COMPUTE_UNITS
  bool command_buffer = false;               ///< cl_khr_command_buffer
  bool command_buffer_simultaneous = false;  ///< its buffers may be enqueued while pending
  std::string pci_bus_id;  ///< from cl_khr_pci_bus_info, "" when the driver does not tell
};

/// Every OpenCL device, in the order of platforms and of devices within each (opencl:N).
const std::vector<DeviceRecord>& devices();
/// Why there is no device (no ICD loader, no platform, ...), when devices() is empty.
const std::string& unavailable_reason();
/// Indices into devices() of the Intel GPUs (xpu:N is the N-th of them).
std::vector<int> intel_gpus();

/// The devices() index a device string refers to (opencl:N or xpu:N).
int record_index(Device device);

struct Queue {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  const DeviceRecord* record = nullptr;
  /// While a step is being recorded (command_buffer.h), launches go here instead of running.
  cl_command_buffer_khr recording = nullptr;
  /// ANVIL_OPENCL_GATE (profile.h): the user event the launches since the last
  /// synchronization wait behind, and when the first of them was enqueued.
  cl_event gate = nullptr;
  double gate_opened = 0;
};
/// The context and queue of a device, made on first use.
Queue& queue(Device device);

/// Device memory with stand-in addresses.
std::shared_ptr<Buffer> allocate(Device device, size_t nbytes);
/// The buffer and byte offset a stand-in address points into; throws if it points nowhere.
struct Location {
  cl_mem mem;
  size_t offset;
};
Location locate(const void* address);

/// The kernel `name` of the program built from anvil's OpenCL C sources with `options`
/// (defines), built once per device and option set; a build failure throws with the log.
cl_kernel kernel(Device device, const std::string& name, const std::string& options);

[[noreturn]] void fail(cl_int err, const char* what);
inline void check(cl_int err, const char* what) {
  if (err != CL_SUCCESS) fail(err, what);
}

}  // namespace anvil::opencl
