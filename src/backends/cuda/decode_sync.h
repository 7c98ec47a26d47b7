// ANVIL_CUDA_DECODE_SYNC: how the one-launch decode kernel's phases hand their outputs over.
// Plain C++ (no CUDA), so that the accepted values and the error are tested on any machine.
#pragma once

#include <string>

#include "anvil/error.h"

namespace anvil::cuda {

/// True for flags mode ("flags", or unset: the default), false for "barrier" (grid barriers,
/// then reads); anything else is an error naming the variable and the values it takes.
inline bool decode_sync_by_flags(const char* value) {
  const std::string mode = value ? value : "";
  if (mode.empty() || mode == "flags") return true;
  if (mode == "barrier") return false;
  throw Error("ANVIL_CUDA_DECODE_SYNC must be 'barrier' or 'flags', not '" + mode + "'");
}

}  // namespace anvil::cuda
