#include "backends/opencl/profile.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace anvil::opencl {
namespace {

struct KernelTotals {
  long long launches = 0;
  double device_s = 0, host_s = 0, enqueue_s = 0;
};

struct Profile {
  std::mutex mu;
  std::vector<std::pair<std::string, cl_event>> pending;
  std::map<std::string, KernelTotals> totals;

  // Reads the pending events' device times (waiting for them) and releases them.
  void drain() {
    for (auto& [name, event] : pending) {
      cl_ulong start = 0, end = 0;
      if (clWaitForEvents(1, &event) == CL_SUCCESS &&
          clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                  nullptr) == CL_SUCCESS &&
          clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) ==
              CL_SUCCESS) {
        totals[name].device_s += static_cast<double>(end - start) * 1e-9;
      }
      clReleaseEvent(event);
    }
    pending.clear();
  }

  void print() {
    std::lock_guard<std::mutex> lock(mu);
    drain();
    std::vector<std::pair<std::string, KernelTotals>> rows(totals.begin(), totals.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.device_s > b.second.device_s; });
    double device = 0, host = 0;
    for (const auto& [name, t] : rows) {
      device += t.device_s;
      host += t.host_s;
    }
    std::fprintf(stderr,
                 "opencl profile (ANVIL_OPENCL_PROFILE): %.1f ms on the device, %.1f ms "
                 "on the host enqueueing\n",
                 device * 1e3, host * 1e3);
    std::fprintf(stderr, "%-28s %10s %12s %10s %10s %12s %7s\n", "kernel", "launches", "device ms",
                 "device us", "host us", "enqueue us", "share");
    for (const auto& [name, t] : rows) {
      const double n = static_cast<double>(t.launches);
      std::fprintf(stderr, "%-28s %10lld %12.2f %10.2f %10.2f %12.2f %6.1f%%\n", name.c_str(),
                   t.launches, t.device_s * 1e3, t.device_s * 1e6 / n, t.host_s * 1e6 / n,
                   t.enqueue_s * 1e6 / n, device > 0 ? 100 * t.device_s / device : 0.0);
    }
  }
};

Profile& profile() {
  static Profile* p = [] {
    auto* made = new Profile;  // kept alive for the exit handler
    std::atexit([] { profile().print(); });
    return made;
  }();
  return *p;
}

}  // namespace

bool profiling() {
  static const bool on = std::getenv("ANVIL_OPENCL_PROFILE") != nullptr;
  return on;
}

void profile_launch(const std::string& kernel, cl_event event, double host_seconds,
                    double enqueue_seconds) {
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mu);
  KernelTotals& t = p.totals[kernel];
  ++t.launches;
  t.host_s += host_seconds;
  t.enqueue_s += enqueue_seconds;
  p.pending.emplace_back(kernel, event);
  // Events hold driver resources: read them in batches rather than all at exit.
  if (p.pending.size() >= 4096) p.drain();
}

}  // namespace anvil::opencl
