// Every CUDA and cuBLASLt call is checked: a failure becomes an anvil::Error naming the call's
// place and the library's own message, never a silent wrong answer.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <string>

namespace anvil::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t st, const char* what, const char* file,
                                     int line);

}  // namespace anvil::cuda

#define ANVIL_CUDA_CHECK(call)                                                \
  do {                                                                        \
    const cudaError_t anvil_err_ = (call);                                    \
    if (anvil_err_ != cudaSuccess)                                            \
      ::anvil::cuda::throw_cuda_error(anvil_err_, #call, __FILE__, __LINE__); \
  } while (0)

#define ANVIL_CUBLAS_CHECK(call)                                               \
  do {                                                                         \
    const cublasStatus_t anvil_st_ = (call);                                   \
    if (anvil_st_ != CUBLAS_STATUS_SUCCESS)                                    \
      ::anvil::cuda::throw_cublas_error(anvil_st_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, at the launch that made them.
#define ANVIL_CUDA_CHECK_LAUNCH() ANVIL_CUDA_CHECK(cudaGetLastError())
