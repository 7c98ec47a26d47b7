#include "backends/opencl/profile.h"

#include <algorithm>
#include <chrono>
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
  // Gated runs: the windows between synchronizations, their host enqueueing and device seconds.
  long long gates = 0, gated_launches = 0;
  double gate_host_s = 0, gate_device_s = 0, gate_span_s = 0;

  // Reads the pending events' device times (waiting for them) and releases them.
  void drain() {
    cl_ulong first = ~cl_ulong{0}, last = 0;
    for (auto& [name, event] : pending) {
      cl_ulong start = 0, end = 0;
      if (clWaitForEvents(1, &event) == CL_SUCCESS &&
          clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start,
                                  nullptr) == CL_SUCCESS &&
          clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr) ==
              CL_SUCCESS) {
        totals[name].device_s += static_cast<double>(end - start) * 1e-9;
        first = std::min(first, start);
        last = std::max(last, end);
      }
      clReleaseEvent(event);
    }
    pending.clear();
    // Gated, a drain covers one window: from its first kernel's start to its last one's end.
    if (gating() && last > first) gate_span_s += static_cast<double>(last - first) * 1e-9;
  }

  void print() {
    std::lock_guard<std::mutex> lock(mu);
    if (gates > 0) {
      const double n = static_cast<double>(gates);
      std::fprintf(stderr,
                   "opencl gate (ANVIL_OPENCL_GATE): %lld windows, %.1f launches each; host "
                   "enqueueing %.1f us, device after release %.1f us per window\n",
                   gates, static_cast<double>(gated_launches) / n, gate_host_s * 1e6 / n,
                   gate_device_s * 1e6 / n);
      if (profiling()) {
        std::fprintf(stderr, "  first kernel start to last kernel end: %.1f us per window\n",
                     gate_span_s * 1e6 / n);
      }
    }
    if (!profiling()) return;
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

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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
  // Events hold driver resources: read them in batches rather than all at exit (when gating,
  // at each release: events behind a closed gate would never complete).
  if (p.pending.size() >= 4096 && !gating()) p.drain();
}

bool gating() {
  static const bool on = std::getenv("ANVIL_OPENCL_GATE") != nullptr;
  return on;
}

cl_event gate_for_launch(Queue& q) {
  if (!gating()) return nullptr;
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mu);
  ++p.gated_launches;
  if (!q.gate) {
    cl_int err = CL_SUCCESS;
    q.gate = clCreateUserEvent(q.context, &err);
    check(err, "clCreateUserEvent");
    q.gate_opened = now_seconds();
  }
  return q.gate;
}

void release_gate(Queue& q) {
  if (!q.gate) return;
  const double released = now_seconds();
  check(clSetUserEventStatus(q.gate, CL_COMPLETE), "clSetUserEventStatus");
  check(clFinish(q.queue), "clFinish");
  const double done = now_seconds();
  clReleaseEvent(q.gate);
  q.gate = nullptr;
  Profile& p = profile();
  std::lock_guard<std::mutex> lock(p.mu);
  if (profiling()) p.drain();
  ++p.gates;
  p.gate_host_s += released - q.gate_opened;
  p.gate_device_s += done - released;
}

}  // namespace anvil::opencl
