// A caching allocator for device memory: freed blocks go back to per-size free lists and are
// handed out again, so steady-state decoding never calls cudaMalloc (which synchronises the
// device) and graph capture never meets an allocation. Reuse is safe because anvil runs every
// kernel of a device on one stream: a block freed by the host is reused only by work queued
// after the work that last read it.
#pragma once

#include <cstddef>
#include <memory>

#include "anvil/backend.h"

namespace anvil::cuda {

std::shared_ptr<Buffer> allocate(Device device, size_t nbytes);
/// Bytes held by the allocator for `device` (in use + cached).
size_t reserved_bytes(Device device);

}  // namespace anvil::cuda
