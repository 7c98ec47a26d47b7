// ANVIL_CUDA_DECODE_SYNC's values: flags by default, barrier on request, and any other value an
// error that names the variable, what it takes and what it got.
#include <gtest/gtest.h>

#include <string>

#include "anvil/error.h"
#include "backends/cuda/decode_sync.h"

namespace anvil::cuda {
namespace {

TEST(DecodeSync, FlagsByDefaultBarrierOnRequest) {
  EXPECT_TRUE(decode_sync_by_flags(nullptr));
  EXPECT_TRUE(decode_sync_by_flags(""));
  EXPECT_TRUE(decode_sync_by_flags("flags"));
  EXPECT_FALSE(decode_sync_by_flags("barrier"));
}

TEST(DecodeSync, OtherValuesAreRefusedByName) {
  for (const char* bad : {"Flags", "barriers", "1", " flags"}) {
    try {
      decode_sync_by_flags(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("ANVIL_CUDA_DECODE_SYNC must be 'barrier' or "
                                                   "'flags', not '") +
                                           bad + "'");
    }
  }
}

}  // namespace
}  // namespace anvil::cuda
