# The CUDA backend: compiled whenever nvcc is found (CI compiles it without a GPU), run where a
# GPU is present. Kernels are built for Hopper (sm_90a machine code) with PTX for newer GPUs.
target_sources(anvil PRIVATE
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/cuda_backend.cc
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/cuda_context.cc
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/cublaslt_loader.cc
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/cuda_allocator.cc
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/pinned_staging.cc
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/linear_cuda.cc
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/batched_gemm.cc
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/gemv.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/elementwise.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/norm.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/rope.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/attention.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/flash_prefill.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/sampling.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/token_losses.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/small_copy.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/decode_layers.cu
  ${CMAKE_SOURCE_DIR}/src/backends/cuda/moe.cu
)
target_compile_definitions(anvil PRIVATE ANVIL_HAVE_CUDA)
# cuBLASLt is opened at run time (cublaslt_loader.h): its headers here, its library not linked.
set_source_files_properties(${CMAKE_SOURCE_DIR}/src/backends/cuda/cublaslt_loader.cc PROPERTIES
  COMPILE_DEFINITIONS
  "ANVIL_CUBLASLT_SONAME=\"libcublasLt.so.${CUDAToolkit_VERSION_MAJOR}\";ANVIL_CUBLASLT_DIR=\"${CUDAToolkit_LIBRARY_DIR}\"")
target_link_libraries(anvil PUBLIC CUDA::cudart_static ${CMAKE_DL_LIBS})
