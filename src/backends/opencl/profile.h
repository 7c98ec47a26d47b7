// ANVIL_OPENCL_PROFILE=1: where an OpenCL run's time goes, per kernel. The device time of every
// launch comes from OpenCL's profiling events, the host time from the clock around setting its
// arguments and enqueueing it; the table goes to stderr when the process exits. Command buffers
// are off while profiling (their launches have no events). For finding out, on a driver one
// cannot profile otherwise, whether a run is bound by the host's enqueueing or by its kernels.
#pragma once

#include <string>

#include "backends/opencl/opencl_runtime.h"

namespace anvil::opencl {

/// Whether ANVIL_OPENCL_PROFILE is set.
bool profiling();

/// Records a launch: its event (released here once read), the host seconds from looking up the
/// kernel to the end of its enqueue, and those of the clEnqueueNDRangeKernel call alone (which
/// include making the profiling event).
void profile_launch(const std::string& kernel, cl_event event, double host_seconds,
                    double enqueue_seconds);

/// ANVIL_OPENCL_GATE=1: the launches between two synchronizations of a queue wait behind a user
/// event that the synchronization releases, so the device runs them back to back, with no
/// waiting for the host's enqueueing. The time from release to completion is then the device's
/// own time for that work (a decode step), printed at exit beside the host's enqueueing time
/// (with ANVIL_OPENCL_PROFILE, the kernels' event times become back-to-back times too).
bool gating();
/// The event a launch on `q` must wait for: the gate, made at the first launch after a
/// synchronization. Null when not gating.
cl_event gate_for_launch(Queue& q);
/// Releases q's gate (if any) and waits for the queue: every synchronization and blocking copy
/// calls this first, since a blocking command behind a closed gate would never complete.
void release_gate(Queue& q);

}  // namespace anvil::opencl
