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

}  // namespace anvil::opencl
