// linear on CUDA: the decode GEMV for a few rows, cuBLASLt (float32 accumulation, TF32 off) for
// the rest. cuBLASLt plans (layouts, descriptor, chosen algorithm) are made once per shape and
// kept, so a prefill of many layers asks the heuristic once per distinct shape.
#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "anvil/error.h"
#include "backends/cuda/batched_gemm.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/gemv.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

int alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  int a = 256;
  while (a > 1 && v % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

// (device, dtype, n, k, o, bias, alignments of x, w, out, bias)
using PlanKey = std::tuple<int, DType, int64_t, int64_t, int64_t, bool, int, int, int, int>;

struct Plan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

Plan make_plan(Context& ctx, const PlanKey& key) {
  const auto [dev, dtype, n, k, o, has_bias, ax, aw, aout, abias] = key;
  const cudaDataType_t t = lt_type(dtype, "linear");
  Plan p;
  ANVIL_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans = CUBLAS_OP_T, no_trans = CUBLAS_OP_N;
  ANVIL_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans));
  ANVIL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &no_trans,
                                                    sizeof no_trans));
  if (has_bias) {
    const cublasLtEpilogue_t epi = CUBLASLT_EPILOGUE_BIAS;
    ANVIL_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
    const cudaDataType_t bt = t;
    ANVIL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                      &bt, sizeof bt));
  }
  // Column-major view of row-major tensors: out^T [o, n] = W [o, k] . x^T [k, n].
  ANVIL_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&p.a, t, static_cast<uint64_t>(k), static_cast<uint64_t>(o), k));
  ANVIL_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&p.b, t, static_cast<uint64_t>(k), static_cast<uint64_t>(n), k));
  ANVIL_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&p.c, t, static_cast<uint64_t>(o), static_cast<uint64_t>(n), o));
  cublasLtMatmulPreference_t pref = nullptr;
  ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t ws = ctx.workspace_bytes;
  ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  const uint32_t al[4] = {static_cast<uint32_t>(aw), static_cast<uint32_t>(ax),
                          static_cast<uint32_t>(aout), static_cast<uint32_t>(abias)};
  ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al[0], sizeof al[0]));
  ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al[1], sizeof al[1]));
  ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al[2], sizeof al[2]));
  ANVIL_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al[2], sizeof al[2]));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(ctx.lt, p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    throw Error("linear: cuBLASLt has no algorithm for " + std::string(dtype_name(dtype)) + " [" +
                std::to_string(n) + ", " + std::to_string(k) + "] x [" + std::to_string(o) + ", " +
                std::to_string(k) + "]^T");
  }
  p.algo = result.algo;
  return p;
}

const Plan& plan_for(Context& ctx, const PlanKey& key) {
  static std::mutex mu;
  static std::map<PlanKey, Plan> plans;  // kept for the process: descriptors are small
  std::lock_guard<std::mutex> lock(mu);
  auto it = plans.find(key);
  if (it == plans.end()) it = plans.emplace(key, make_plan(ctx, key)).first;
  return it->second;
}

void linear(const ops::LinearArgs& a) {
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  if (n == 0 || o == 0) return;
  if (a.bias.defined() && a.bias.dtype() != a.out.dtype()) {
    throw Error("linear: on cuda the bias must have the activations' dtype (" +
                std::string(dtype_name(a.out.dtype())) + "), got " +
                std::string(dtype_name(a.bias.dtype())));
  }
  Context& ctx = context(a.x.device());
  const void* bias = a.bias.defined() ? a.bias.raw() : nullptr;
  const void* w = a.weight.raw();
  if (gemv_fits(a.x.dtype(), a.x.raw(), &w, 1, static_cast<int>(n), static_cast<int>(k))) {
    GemvSegments seg;
    seg.w[0] = w;
    seg.bias[0] = bias;
    seg.out[0] = a.out.raw();
    seg.rows[0] = static_cast<int>(o);
    seg.count = 1;
    gemv(a.x.dtype(), a.x.raw(), seg, static_cast<int>(n), static_cast<int>(k), ctx.sm_count,
         ctx.stream);
    return;
  }
  const PlanKey key{ctx.ordinal,
                    a.x.dtype(),
                    n,
                    k,
                    o,
                    bias != nullptr,
                    alignment(a.x.raw()),
                    alignment(a.weight.raw()),
                    alignment(a.out.raw()),
                    bias ? alignment(bias) : 256};
  const Plan& p = plan_for(ctx, key);
  if (bias) {
    ANVIL_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                      &bias, sizeof bias));
  }
  const float alpha = 1.0f, beta = 0.0f;
  ANVIL_CUBLAS_CHECK(cublasLtMatmul(ctx.lt, p.desc, &alpha, a.weight.raw(), p.a, a.x.raw(), p.b,
                                    &beta, a.out.raw(), p.c, a.out.raw(), p.c, &p.algo,
                                    ctx.workspace, ctx.workspace_bytes, ctx.stream));
}

// q, k and v in one launch when the GEMV applies, else one product each.
void linear_group(const ops::LinearGroupArgs& a) {
  const int64_t n = a.x.size(0), k = a.x.size(1);
  const void* ws[4] = {};
  for (int i = 0; i < a.count; ++i) ws[i] = a.weights[i].raw();
  int checked = a.count;
  if (a.norm_weight.defined()) ws[checked++] = a.norm_weight.raw();
  if (!gemv_fits(a.x.dtype(), a.x.raw(), ws, checked, static_cast<int>(n), static_cast<int>(k))) {
    ops::composed_linear_group(a);
    return;
  }
  GemvSegments seg;
  for (int i = 0; i < a.count; ++i) {
    seg.w[i] = ws[i];
    seg.bias[i] = a.biases[i].defined() ? a.biases[i].raw() : nullptr;
    seg.out[i] = a.outs[i].raw();
    seg.rows[i] = static_cast<int>(a.weights[i].size(0));
  }
  seg.count = a.count;
  seg.norm_w = a.norm_weight.defined() ? a.norm_weight.raw() : nullptr;
  seg.eps = a.eps;
  if (a.keep_normed && a.norm_weight.defined()) seg.normed = a.normed.raw();
  const Context& ctx = context(a.x.device());
  gemv(a.x.dtype(), a.x.raw(), seg, static_cast<int>(n), static_cast<int>(k), ctx.sm_count,
       ctx.stream);
}

// gate, up and SwiGLU (or GeGLU) in one launch when the GEMV applies, else cuBLASLt twice and
// the activation.
void linear_swiglu(const ops::LinearSwigluArgs& a) {
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.gate.size(0);
  const void* ws[3] = {a.gate.raw(), a.up.raw(),
                       a.norm_weight.defined() ? a.norm_weight.raw() : a.gate.raw()};
  if (!gemv_fits(a.x.dtype(), a.x.raw(), ws, 3, static_cast<int>(n), static_cast<int>(k))) {
    ops::composed_linear_swiglu(a);
    return;
  }
  gemv_swiglu(a.x.dtype(), a.x.raw(), ws[0], a.gate_bias.defined() ? a.gate_bias.raw() : nullptr,
              ws[1], a.up_bias.defined() ? a.up_bias.raw() : nullptr, a.out.raw(),
              static_cast<int>(n), static_cast<int>(k), static_cast<int>(o),
              a.norm_weight.defined() ? a.norm_weight.raw() : nullptr, a.eps,
              a.act == ops::GluActivation::gelu_tanh, context(a.x.device()).sm_count,
              context(a.x.device()).stream);
}

// The output projection with its residual add (and Granite's multiplier) in the GEMV's
// epilogue; composed otherwise.
void linear_add(const ops::LinearAddArgs& a) {
  const int64_t n = a.x.size(0), k = a.x.size(1);
  const void* w = a.weight.raw();
  if (!gemv_fits(a.x.dtype(), a.x.raw(), &w, 1, static_cast<int>(n), static_cast<int>(k))) {
    linear({a.x, a.weight, a.bias, a.scratch});
    if (a.scale != 1.0f) ops::scale(a.scratch, a.scale);
    ops::add(a.residual, a.scratch, a.residual);
    return;
  }
  GemvSegments seg;
  seg.w[0] = w;
  seg.bias[0] = a.bias.defined() ? a.bias.raw() : nullptr;
  seg.out[0] = a.residual.raw();
  seg.rows[0] = static_cast<int>(a.weight.size(0));
  seg.count = 1;
  seg.accumulate = true;
  seg.out_scale = a.scale;
  const Context& ctx = context(a.x.device());
  gemv(a.x.dtype(), a.x.raw(), seg, static_cast<int>(n), static_cast<int>(k), ctx.sm_count,
       ctx.stream);
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_linear() {
  for (DType act : cuda::kFloatTypes) {
    register_kernel<ops::LinearArgs>(ops::kLinear, DeviceType::cuda, act, act, &cuda::linear);
    register_kernel<ops::LinearGroupArgs>(ops::kLinearGroup, DeviceType::cuda, act, act,
                                          &cuda::linear_group);
    register_kernel<ops::LinearSwigluArgs>(ops::kLinearSwiglu, DeviceType::cuda, act, act,
                                           &cuda::linear_swiglu);
    register_kernel<ops::LinearSwigluArgs>(ops::kLinearSwigluGeluTanh, DeviceType::cuda, act, act,
                                           &cuda::linear_swiglu);
    register_kernel<ops::LinearAddArgs>(ops::kLinearAdd, DeviceType::cuda, act, act,
                                        &cuda::linear_add);
    register_kernel<ops::LinearAddArgs>(ops::kLinearScaleAdd, DeviceType::cuda, act, act,
                                        &cuda::linear_add);
  }
}

}  // namespace anvil
