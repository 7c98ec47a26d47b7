// Availability queries over the backend registry.
#include "anvil/devices.h"

#include "anvil/backend.h"

namespace anvil {

int device_count(DeviceType type) {
  for (const BackendReport& r : report_backends()) {
    if (r.type == type) return r.available ? static_cast<int>(r.devices.size()) : 0;
  }
  return 0;
}

bool is_available(DeviceType type) {
  return device_count(type) > 0;
}

}  // namespace anvil
