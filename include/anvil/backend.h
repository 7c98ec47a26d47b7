/// @file backend.h
/// The backend interface and registry. A backend owns a device type's memory and registers
/// kernels for the ops it implements; what it can do is asked (`supports`), never assumed.
/// Backends are registered in one place (src/core/registry.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "anvil/device.h"
#include "anvil/dtype.h"

namespace anvil {

/// A block of memory on one device; freed by the backend that made it when the last owner drops.
class Buffer {
 public:
  Buffer(void* data, size_t nbytes, Device device)
      : data_(data), nbytes_(nbytes), device_(device) {}
  virtual ~Buffer() = default;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
};

/// What `anvil devices` prints for one device.
struct DeviceInfo {
  Device device;
  std::string name;
  uint64_t total_memory = 0;  ///< bytes; 0 when unknown
  bool bf16 = false;          ///< native bf16 arithmetic
  std::string pci_bus_id;     ///< "0000:19:00.0" where the platform tells
  std::string details;        ///< backend-specific notes (ISA, compute capability, ...)
};

/// Device work recorded once and replayed with the same buffers and arguments (a CUDA graph):
/// what changes between replays must be read by the kernels from device memory.
class StepGraph {
 public:
  virtual ~StepGraph() = default;
  virtual void replay() = 0;
};

/// A copy to host memory queued behind the work already queued on a device
/// (Backend::copy_to_host_async).
class PendingCopy {
 public:
  virtual ~PendingCopy() = default;
  /// Returns once the bytes are in the destination.
  virtual void wait() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual DeviceType type() const = 0;
  virtual std::vector<DeviceInfo> devices() const = 0;
  /// How many devices devices() lists, without gathering what it prints (checked on every
  /// backend_for call, so on every step).
  virtual int device_count() const { return static_cast<int>(devices().size()); }
  /// Allocates `nbytes` on `device` (uninitialised).
  virtual std::shared_ptr<Buffer> allocate(Device device, size_t nbytes) = 0;
  /// Copies between host memory and this backend's memory (either side may be the host).
  virtual void copy_to_host(void* dst, const void* src, size_t nbytes, Device device) = 0;
  virtual void copy_from_host(void* dst, const void* src, size_t nbytes, Device device) = 0;
  virtual void copy_on_device(void* dst, const void* src, size_t nbytes, Device device) = 0;
  /// Queues a copy from host memory behind the work already queued on `device` and returns
  /// without waiting for that work: the bytes are taken before it returns. By default, as
  /// copy_from_host (which waits).
  virtual void copy_from_host_queued(void* dst, const void* src, size_t nbytes, Device device) {
    copy_from_host(dst, src, nbytes, device);
  }
  /// Queues a copy to host memory behind the work already queued on `device`; `dst` must stay
  /// valid until the returned copy's wait(). By default the copy is made before returning.
  virtual std::unique_ptr<PendingCopy> copy_to_host_async(void* dst, const void* src, size_t nbytes,
                                                          Device device);
  /// Waits for all queued work on `device`.
  virtual void synchronize(Device device) = 0;
  /// The dtype activations are kept in when weights are stored as `weights`.
  virtual DType activation_dtype(DType weights) const = 0;
  /// The dtype of the KV cache when the user names none: by default the activations'.
  virtual DType kv_cache_dtype(DType weights) const { return activation_dtype(weights); }
  /// Records the work `body` queues on `device` into a graph. nullptr when this backend has no
  /// graphs; callers then run `body` itself each time. `body` must not allocate or copy.
  virtual std::unique_ptr<StepGraph> capture(Device device, const std::function<void()>& body) {
    (void)device;
    (void)body;
    return nullptr;
  }
};

/// One line of `anvil devices`: a device type, whether anvil can use it, and if not, why.
struct BackendReport {
  DeviceType type;
  bool available = false;
  std::string reason;  ///< why the backend is absent or has no device
  std::vector<DeviceInfo> devices;
};

/// The backend serving `type`, or nullptr when this build has none.
Backend* find_backend(DeviceType type);
/// The backend serving `device`; throws a clear error when it is absent or the index is out of
/// range.
Backend& backend_for(Device device);
/// Every device type with its status, for `anvil devices`.
std::vector<BackendReport> report_backends();
/// True when kernels for `op` exist on `type` for activation dtype `act` and weight dtype `weight`.
bool supports(const std::string& op, DeviceType type, DType act, DType weight);

}  // namespace anvil
