// Batched cuBLASLt products with cached plans (descriptor, layouts, heuristic's algorithm).
#include "backends/cuda/batched_gemm.h"

#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "anvil/error.h"
#include "backends/cuda/cuda_check.h"

namespace anvil::cuda {
namespace {

using View = std::tuple<DType, int64_t, int64_t, int64_t, int64_t>;
using Key = std::tuple<int, bool, View, View, View, int>;

View as_tuple(const MatrixView& m) {
  return {m.dtype, m.rows, m.cols, m.ld, m.stride};
}

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

cublasLtMatrixLayout_t layout(const MatrixView& m, int batch) {
  cublasLtMatrixLayout_t l = nullptr;
  ANVIL_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, lt_type(m.dtype, "attention"),
                                                static_cast<uint64_t>(m.rows),
                                                static_cast<uint64_t>(m.cols), m.ld));
  ANVIL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                                      sizeof batch));
  const int64_t stride = m.stride;
  ANVIL_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
      l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return l;
}

Plan make_plan(Context& ctx, bool trans_a, const MatrixView& a, const MatrixView& b,
               const MatrixView& c, int batch) {
  Plan p;
  ANVIL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
  ANVIL_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  ANVIL_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  p.a = layout(a, batch);
  p.b = layout(b, batch);
  p.c = layout(c, batch);
  cublasLtMatmulPreference_t pref = nullptr;
  ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = ctx.workspace_bytes;
  ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  // Operands start at head offsets inside larger tensors: 16-byte alignment is all that is sure.
  const uint32_t align = 16;
  for (auto attr :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align));
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(ctx.lt, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    throw Error("attention: cuBLASLt has no algorithm for a batched product of " +
                std::to_string(a.rows) + "x" + std::to_string(a.cols) + " and " +
                std::to_string(b.rows) + "x" + std::to_string(b.cols));
  }
  p.algo = result.algo;
  return p;
}

}  // namespace

cudaDataType_t lt_type(DType d, const char* op) {
  switch (d) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::f16:
      return CUDA_R_16F;
    default:
      throw Error(std::string(op) + ": dtype " + std::string(dtype_name(d)) +
                  " is not supported on cuda");
  }
}

void batched_gemm(Context& ctx, bool trans_a, const MatrixView& a, const void* pa,
                  const MatrixView& b, const void* pb, const MatrixView& c, void* pc, int batch,
                  float alpha) {
  static std::mutex mu;
  static std::map<Key, Plan> plans;
  const Key key{ctx.ordinal, trans_a, as_tuple(a), as_tuple(b), as_tuple(c), batch};
  const Plan* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = plans.find(key);
    if (it == plans.end()) it = plans.emplace(key, make_plan(ctx, trans_a, a, b, c, batch)).first;
    p = &it->second;
  }
  const float beta = 0.0f;
  ANVIL_CUBLAS_CHECK(cublasLtMatmul(ctx.lt, p->desc, &alpha, pa, p->a, pb, p->b, &beta, pc, p->c,
                                    pc, p->c, &p->algo, ctx.workspace, ctx.workspace_bytes,
                                    ctx.stream));
}

}  // namespace anvil::cuda
