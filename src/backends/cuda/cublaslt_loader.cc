// The cuBLASLt functions anvil calls, defined here with the header's signatures and forwarded to
// the library opened at run time (see cublaslt_loader.h); the call sites are unchanged.
#include "backends/cuda/cublaslt_loader.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace anvil::cuda {
namespace {

void* g_library = nullptr;
std::string g_error;

#define ANVIL_CUBLASLT_FUNCTIONS(X)       \
  X(cublasLtCreate)                       \
  X(cublasLtGetStatusString)              \
  X(cublasLtMatmul)                       \
  X(cublasLtMatmulAlgoGetHeuristic)       \
  X(cublasLtMatmulDescCreate)             \
  X(cublasLtMatmulDescSetAttribute)       \
  X(cublasLtMatmulPreferenceCreate)       \
  X(cublasLtMatmulPreferenceDestroy)      \
  X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatrixLayoutCreate)           \
  X(cublasLtMatrixLayoutSetAttribute)

struct Functions {
#define ANVIL_DECLARE(name) decltype(&::name) name = nullptr;
  ANVIL_CUBLASLT_FUNCTIONS(ANVIL_DECLARE)
#undef ANVIL_DECLARE
};
Functions g_fn;

void open_library() {
  const char* candidates[] = {ANVIL_CUBLASLT_SONAME, ANVIL_CUBLASLT_DIR "/" ANVIL_CUBLASLT_SONAME};
  for (const char* path : candidates) {
    g_library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (g_library) break;
    if (g_error.empty()) g_error = dlerror();
  }
  if (!g_library) {
    g_error = std::string("cannot load " ANVIL_CUBLASLT_SONAME " (cuBLASLt: CUDA's toolkit or ") +
              "the nvidia-cublas wheel, on LD_LIBRARY_PATH): " + g_error;
    return;
  }
  g_error.clear();
#define ANVIL_RESOLVE(name)                                                 \
  g_fn.name = reinterpret_cast<decltype(&::name)>(dlsym(g_library, #name)); \
  if (!g_fn.name && g_error.empty()) {                                      \
    g_error = ANVIL_CUBLASLT_SONAME " lacks " #name;                        \
  }
  ANVIL_CUBLASLT_FUNCTIONS(ANVIL_RESOLVE)
#undef ANVIL_RESOLVE
}

}  // namespace

bool load_cublaslt(std::string* why) {
  static std::once_flag once;
  std::call_once(once, open_library);
  if (!g_error.empty() && why) *why = g_error;
  return g_error.empty();
}

}  // namespace anvil::cuda

// The forwarding definitions. Only reached through the CUDA backend, which is made only after
// load_cublaslt() succeeded.
#define ANVIL_FN anvil::cuda::g_fn

extern "C" {

cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* handle) {
  return ANVIL_FN.cublasLtCreate(handle);
}

const char* CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) {
  return ANVIL_FN.cublasLtGetStatusString ? ANVIL_FN.cublasLtGetStatusString(status)
                                          : "cuBLASLt not loaded";
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                           const void* alpha, const void* a,
                                           cublasLtMatrixLayout_t a_desc, const void* b,
                                           cublasLtMatrixLayout_t b_desc, const void* beta,
                                           const void* c, cublasLtMatrixLayout_t c_desc, void* d,
                                           cublasLtMatrixLayout_t d_desc,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspace_bytes, cudaStream_t stream) {
  return ANVIL_FN.cublasLtMatmul(handle, desc, alpha, a, a_desc, b, b_desc, beta, c, c_desc, d,
                                 d_desc, algo, workspace, workspace_bytes, stream);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a_desc,
    cublasLtMatrixLayout_t b_desc, cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
    cublasLtMatmulPreference_t preference, int requested, cublasLtMatmulHeuristicResult_t results[],
    int* returned) {
  return ANVIL_FN.cublasLtMatmulAlgoGetHeuristic(handle, desc, a_desc, b_desc, c_desc, d_desc,
                                                 preference, requested, results, returned);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc,
                                                     cublasComputeType_t compute,
                                                     cudaDataType_t scale) {
  return ANVIL_FN.cublasLtMatmulDescCreate(desc, compute, scale);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                                           cublasLtMatmulDescAttributes_t attr,
                                                           const void* buf, size_t bytes) {
  return ANVIL_FN.cublasLtMatmulDescSetAttribute(desc, attr, buf, bytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  return ANVIL_FN.cublasLtMatmulPreferenceCreate(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return ANVIL_FN.cublasLtMatmulPreferenceDestroy(pref);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t bytes) {
  return ANVIL_FN.cublasLtMatmulPreferenceSetAttribute(pref, attr, buf, bytes);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout,
                                                       cudaDataType type, uint64_t rows,
                                                       uint64_t cols, int64_t ld) {
  return ANVIL_FN.cublasLtMatrixLayoutCreate(layout, type, rows, cols, ld);
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                             cublasLtMatrixLayoutAttribute_t attr,
                                                             const void* buf, size_t bytes) {
  return ANVIL_FN.cublasLtMatrixLayoutSetAttribute(layout, attr, buf, bytes);
}

}  // extern "C"
