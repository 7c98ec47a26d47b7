# The OpenCL backend (opencl:N, and xpu:N for Intel GPUs): built when the OpenCL headers and ICD
# loader are found (Debian: opencl-headers, ocl-icd-opencl-dev); kernels are OpenCL C embedded in
# the binary and built at run time for each device.
target_sources(anvil PRIVATE
  ${CMAKE_SOURCE_DIR}/src/backends/opencl/opencl_runtime.cc
  ${CMAKE_SOURCE_DIR}/src/backends/opencl/opencl_sources.cc
  ${CMAKE_SOURCE_DIR}/src/backends/opencl/opencl_backend.cc
  ${CMAKE_SOURCE_DIR}/src/backends/opencl/opencl_ops.cc
  ${CMAKE_SOURCE_DIR}/src/backends/opencl/command_buffer.cc
  ${CMAKE_SOURCE_DIR}/src/backends/opencl/profile.cc
  ${CMAKE_SOURCE_DIR}/src/backends/opencl/range_allocator.cc
)
target_compile_definitions(anvil PRIVATE ANVIL_HAVE_OPENCL)
target_link_libraries(anvil PUBLIC OpenCL::OpenCL)
