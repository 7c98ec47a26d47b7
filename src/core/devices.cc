// Availability queries over the backend registry.
#include "anvil/devices.h"

#include "anvil/backend.h"

namespace anvil {

int device_count(DeviceType type) {
  // Only this type's backend is made (a CPU query must not start CUDA or load OpenCL).
  const Backend* backend = find_backend(type);
  return backend ? backend->device_count() : 0;
}

bool is_available(DeviceType type) {
  return device_count(type) > 0;
}

}  // namespace anvil
