// `anvil devices`: every device type, its devices, or why there are none.
#include <cstdio>

#include "anvil/backend.h"
#include "commands.h"

namespace anvil::cli {

void add_devices(CLI::App& app) {
  auto* cmd = app.add_subcommand("devices", "list every backend's devices (or why it has none)");
  cmd->callback([] {
    for (const BackendReport& r : report_backends()) {
      const std::string type(device_type_name(r.type));
      if (!r.available) {
        std::printf("%-7s unavailable: %s\n", type.c_str(), r.reason.c_str());
        continue;
      }
      for (const DeviceInfo& d : r.devices) {
        std::printf("%-7s %s  %s  memory %.1f GiB  bf16 %s", d.device.str().c_str(), d.name.c_str(),
                    d.details.c_str(),
                    static_cast<double>(d.total_memory) / (1024.0 * 1024.0 * 1024.0),
                    d.bf16 ? "yes" : "no");
        if (!d.pci_bus_id.empty()) std::printf("  pci %s", d.pci_bus_id.c_str());
        std::printf("\n");
      }
    }
  });
}

}  // namespace anvil::cli
