// cuBLASLt is opened at run time, not linked: the loader finds it where the toolkit is installed
// (CI and the GPU machine) and every function anvil calls resolves. Needs no GPU.
#include "backends/cuda/cublaslt_loader.h"

#include <cublasLt.h>
#include <gtest/gtest.h>

#include <string>

namespace anvil {
namespace {

TEST(CublasLtLoader, OpensTheLibraryAndResolvesEveryFunction) {
  std::string why;
  ASSERT_TRUE(cuda::load_cublaslt(&why)) << why;
  EXPECT_TRUE(why.empty());
  // A forwarded call that needs no device: the library's own words for two statuses ("success"
  // and "the requested functionality is not supported" in CUDA 13), not the loader's fallback.
  const std::string ok = cublasLtGetStatusString(CUBLAS_STATUS_SUCCESS);
  const std::string unsupported = cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED);
  EXPECT_FALSE(ok.empty());
  EXPECT_NE(ok, unsupported);
  EXPECT_NE(ok, "cuBLASLt not loaded");
  EXPECT_NE(unsupported.find("not supported"), std::string::npos) << unsupported;
}

}  // namespace
}  // namespace anvil
