// The routed experts of a mixture-of-experts MLP over a few rows, with the router's picks made
// on the GPU (ops::moe_experts): a routing kernel (softmax, top-k, the picked rows gathered in
// expert order), the experts' gate/up and down products (a grid row per picked expert, whose
// weights are read once for all the rows that picked it) and the weighted sum in expert order.
// Nothing goes through the host, so a decode step with MoE layers is recorded as a graph like a
// dense one. One token (batch-1 decode) takes two launches: gate/up with the routing done in
// every block, then down with the weighted sum.
#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <type_traits>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/gemv_rows.cuh"
#include "backends/cuda/launch.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

constexpr int kMaxExperts = static_cast<int>(ops::kMoeDeviceMaxExperts);
constexpr int kMaxTopK = static_cast<int>(ops::kMoeDeviceMaxTopK);
constexpr int kMaxRows = static_cast<int>(ops::kMoeDeviceMaxRows);
constexpr int kRouteThreads = 32 * kMaxRows;  // a warp a row
constexpr int kProductWarps = 8;              // a weight row a warp
constexpr int kMaxRowsPerPass = 4;            // activation rows a product pass takes
static_assert(kMaxExperts % 32 == 0);

// The experts' weights as kernel parameters (a few KB, which CUDA 12.1+ allows on Volta and
// newer: no table to keep on the device).
struct GateUpWeights {
  const void* gate[kMaxExperts];
  const void* up[kMaxExperts];
};
struct DownWeights {
  const void* down[kMaxExperts];
};

// The plan the routing kernel leaves for the others, in 32-bit words (ops::moe_plan_words):
// [0] the picked experts' count S; for slot s < S its expert, first row and row count; per row
// (the picks in expert order, rows of one expert by ascending token) its weight's bits; per
// token its k rows by ascending expert.
struct Plan {
  int experts, picks;
  template <class P>
  __device__ P* slot_expert(P* p) const {
    return p + 1;
  }
  template <class P>
  __device__ P* slot_first(P* p) const {
    return p + 1 + experts;
  }
  template <class P>
  __device__ P* slot_count(P* p) const {
    return p + 1 + 2 * experts;
  }
  template <class P>
  __device__ P* row_weight(P* p) const {
    return p + 1 + 3 * experts;
  }
  template <class P>
  __device__ P* token_rows(P* p) const {
    return p + 1 + 3 * experts + picks;
  }
};

// One warp routes one token: the softmax of its logits in float32, the top_k largest in
// descending order (ties to the lower expert), renormalised and rounded as the host's picks
// are. Lane j < top_k leaves pick j in pick[j] / weight[j] (shared memory; the warp is in step
// afterwards). Each probability's place is counted against all the others at once (a shuffle
// per expert, no dependence between them) rather than found by top_k rounds of warp arg-max,
// whose reductions were a chain of ~1 us on the decode step's path.
template <class T>
__device__ __forceinline__ void route_token(const T* __restrict__ l, int experts, int top_k,
                                            bool norm_topk, bool round_weights, int* pick,
                                            float* weight) {
  constexpr int kPerLane = kMaxExperts / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  float p[kPerLane];
  float top = -FLT_MAX;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    p[i] = e < experts ? to_float(l[e]) : -FLT_MAX;
    top = fmaxf(top, p[i]);
  }
  top = warp_max(top);
  float sum = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    if (lane + 32 * i < experts) {
      p[i] = expf(p[i] - top);
      sum += p[i];
    }
  }
  sum = warp_sum(sum);
  // Probabilities are >= 0, so the -1 of the lanes past the experts is never picked.
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) p[i] = lane + 32 * i < experts ? p[i] / sum : -1.0f;
  int rank[kPerLane];  // how many experts come before each of the lane's
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) rank[i] = 0;
#pragma unroll
  for (int i2 = 0; i2 < kPerLane; ++i2) {
    if (32 * i2 >= experts) break;
    for (int src = 0; src < 32; ++src) {
      const float q = __shfl_sync(0xffffffffu, p[i2], src);
      const int f = src + 32 * i2;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i) {
        if (32 * i >= experts) break;
        const int e = lane + 32 * i;
        rank[i] += q > p[i] || (q == p[i] && f < e);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kPerLane; ++i) {
    const int e = lane + 32 * i;
    if (e < experts && rank[i] < top_k) {
      pick[rank[i]] = e;
      weight[rank[i]] = p[i];
    }
  }
  __syncwarp();
  float picked = 0.0f;  // in pick order, as the host sums them
  for (int j = 0; j < top_k; ++j) picked += weight[j];
  __syncwarp();
  if (lane < top_k) {
    float w = weight[lane];
    if (norm_topk) w /= picked;
    if (round_weights) w = to_float(from_float<T>(w));
    weight[lane] = w;
  }
  __syncwarp();
}

// One block: warp t routes token t (the softmax of its logits in float32, the top_k largest,
// renormalised and rounded as the host's picks are); then the picked experts get slots in
// ascending order and the picks rows in expert order, and each pick's input row is copied to
// its row of `rows`.
template <class T>
__global__ void __launch_bounds__(kRouteThreads)
    moe_route_kernel(const T* __restrict__ logits, const T* __restrict__ in, T* __restrict__ rows,
                     int* __restrict__ plan, int n, int experts, int top_k, int hidden,
                     bool norm_topk, bool round_weights) {
  __shared__ int pick[kMaxRows * kMaxTopK];
  __shared__ float pick_weight[kMaxRows * kMaxTopK];
  __shared__ int pick_row[kMaxRows * kMaxTopK];
  __shared__ int count[kMaxExperts], first[kMaxExperts];
  const Plan pl{experts, n * top_k};
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  for (int e = static_cast<int>(threadIdx.x); e < experts; e += blockDim.x) count[e] = 0;
  pdl_wait();
  __syncthreads();
  if (warp < n) {
    route_token<T>(logits + static_cast<long long>(warp) * experts, experts, top_k, norm_topk,
                   round_weights, pick + warp * top_k, pick_weight + warp * top_k);
    if (lane < top_k) atomicAdd(&count[pick[warp * top_k + lane]], 1);
  }
  __syncthreads();
  if (warp == 0) {  // slots and first rows: a scan over the experts, a run of them a lane
    const int per = (experts + 31) / 32, b = min(lane * per, experts), end = min(b + per, experts);
    int used = 0, taken = 0;
    for (int e = b; e < end; ++e) {
      used += count[e] > 0;
      taken += count[e];
    }
    int slot = used, row = taken;  // inclusive scans, made exclusive below
    for (int o = 1; o < 32; o <<= 1) {
      const int s = __shfl_up_sync(0xffffffffu, slot, o), r = __shfl_up_sync(0xffffffffu, row, o);
      if (lane >= o) {
        slot += s;
        row += r;
      }
    }
    if (lane == 31) plan[0] = slot;
    slot -= used;
    row -= taken;
    for (int e = b; e < end; ++e) {
      first[e] = row;
      if (count[e] == 0) continue;
      pl.slot_expert(plan)[slot] = e;
      pl.slot_first(plan)[slot] = row;
      pl.slot_count(plan)[slot] = count[e];
      ++slot;
      row += count[e];
    }
  }
  __syncthreads();
  for (int i = static_cast<int>(threadIdx.x); i < pl.picks; i += blockDim.x) {
    const int t = i / top_k, e = pick[i];
    int rank = 0;  // the tokens before t that picked e
    for (int q = 0; q < t * top_k; ++q) rank += pick[q] == e;
    int order = 0;  // this pick's place among the token's, by expert
    for (int j = 0; j < top_k; ++j) order += pick[t * top_k + j] < e;
    const int row = first[e] + rank;
    pick_row[i] = row;
    pl.row_weight(plan)[row] = __float_as_int(pick_weight[i]);
    pl.token_rows(plan)[t * top_k + order] = row;
  }
  __syncthreads();
  const int vecs = hidden / Vec<T>::kN;
  for (int i = static_cast<int>(threadIdx.x); i < pl.picks * vecs; i += blockDim.x) {
    const int p = i / vecs, c = i % vecs, t = p / top_k;
    reinterpret_cast<uint4*>(rows + static_cast<long long>(pick_row[p]) * hidden)[c] =
        __ldg(reinterpret_cast<const uint4*>(in + static_cast<long long>(t) * hidden) + c);
  }
}

// The slot of this block (grid row) and its expert, first row and row count; false for a slot
// past the picked experts.
struct Slot {
  int expert, first, count;
};
__device__ __forceinline__ bool slot_of_block(const int* plan, int experts, Slot& s) {
  const int slot = static_cast<int>(blockIdx.y);
  if (slot >= plan[0]) return false;
  const Plan pl{experts, 0};
  s.expert = pl.slot_expert(plan)[slot];
  s.first = pl.slot_first(plan)[slot];
  s.count = pl.slot_count(plan)[slot];
  return true;
}

// Row `row` of gate and up times R rows of x, act(g) * u into hidden, each product rounded
// first (as gemv_swiglu writes them).
template <class T, int R, bool Gelu>
__device__ __forceinline__ void gate_up_pass(const uint4* const (&w)[2], const T* x, int hidden,
                                             T* out, int width, int row) {
  float acc[2][R], scale[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    scale[r] = 1.0f;
    acc[0][r] = acc[1][r] = 0.0f;
  }
  dot_rows<T, R, 2, false>(x, w, hidden, 0, hidden / Vec<T>::kN, nullptr, scale, acc);
  if (threadIdx.x % 32 != 0) return;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float g = to_float(from_float<T>(acc[0][r])), u = to_float(from_float<T>(acc[1][r]));
    out[static_cast<long long>(r) * width + row] = from_float<T>(gated<Gelu>(g) * u);
  }
}

template <class T, int R>
__device__ __forceinline__ void down_pass(const uint4* const (&w)[1], const T* x, int width, T* out,
                                          int hidden, int row) {
  float acc[1][R], scale[R];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    scale[r] = 1.0f;
    acc[0][r] = 0.0f;
  }
  dot_rows<T, R, 1, false>(x, w, width, 0, width / Vec<T>::kN, nullptr, scale, acc);
  if (threadIdx.x % 32 != 0) return;
#pragma unroll
  for (int r = 0; r < R; ++r)
    out[static_cast<long long>(r) * hidden + row] = from_float<T>(acc[0][r]);
}

// The slot's rows in passes of up to kMaxRowsPerPass, each pass's count a template argument.
template <class F>
__device__ __forceinline__ void by_passes(int count, F&& f) {
  for (int r0 = 0; r0 < count; r0 += kMaxRowsPerPass) {
    const int left = count - r0;
    if (left >= 4) {
      f(r0, std::integral_constant<int, 4>{});
    } else if (left == 3) {
      f(r0, std::integral_constant<int, 3>{});
    } else if (left == 2) {
      f(r0, std::integral_constant<int, 2>{});
    } else {
      f(r0, std::integral_constant<int, 1>{});
    }
  }
}

// Grid: (width / kProductWarps, slots); a warp takes one row of the slot's expert's gate and up
// for all the slot's rows.
template <class T, bool Gelu>
__global__ void __launch_bounds__(kProductWarps * 32)
    moe_gate_up_kernel(const __grid_constant__ GateUpWeights w, const T* __restrict__ rows,
                       const int* __restrict__ plan, T* __restrict__ hidden_out, int hidden,
                       int width, int experts) {
  pdl_wait();
  Slot s;
  if (!slot_of_block(plan, experts, s)) return;
  const int row = static_cast<int>(blockIdx.x) * kProductWarps + static_cast<int>(threadIdx.x / 32);
  if (row >= width) return;
  const long long at = static_cast<long long>(row) * hidden;
  const uint4* const wr[2] = {
      reinterpret_cast<const uint4*>(static_cast<const T*>(w.gate[s.expert]) + at),
      reinterpret_cast<const uint4*>(static_cast<const T*>(w.up[s.expert]) + at)};
  by_passes(s.count, [&](int r0, auto r) {
    const long long first = s.first + r0;
    gate_up_pass<T, decltype(r)::value, Gelu>(wr, rows + first * hidden, hidden,
                                              hidden_out + first * width, width, row);
  });
}

// One token (a batch-1 decode step): every block routes the token itself (route_token: the
// routing kernel's order and roundings) and takes gate/up rows of its slot's expert, the slots
// being the picks by ascending expert; block (0, 0) leaves the plan for the down-and-combine
// launch. The routing kernel's launch, with its wait and its copy of the input row, is gone.
// Grid: (width / kProductWarps, top_k).
template <class T, bool Gelu>
__global__ void __launch_bounds__(kProductWarps * 32)
    moe_route_gate_up_kernel(const __grid_constant__ GateUpWeights w, const T* __restrict__ logits,
                             const T* __restrict__ in, int* __restrict__ plan,
                             T* __restrict__ hidden_out, int hidden, int width, int experts,
                             int top_k, bool norm_topk, bool round_weights) {
  __shared__ int pick[kMaxTopK];
  __shared__ float weight[kMaxTopK];
  __shared__ int by_expert[kMaxTopK];  // slot s: the index in pick of the s-th smallest expert
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  pdl_wait();
  if (warp == 0) {
    route_token<T>(logits, experts, top_k, norm_topk, round_weights, pick, weight);
    if (lane < top_k) {
      int order = 0;
      for (int j = 0; j < top_k; ++j) order += pick[j] < pick[lane];
      by_expert[order] = lane;
    }
  }
  __syncthreads();
  const int slot = static_cast<int>(blockIdx.y);
  if (blockIdx.x == 0 && slot == 0 && static_cast<int>(threadIdx.x) < top_k) {
    const Plan pl{experts, top_k};
    const int s = static_cast<int>(threadIdx.x), j = by_expert[s];
    if (s == 0) plan[0] = top_k;
    pl.slot_expert(plan)[s] = pick[j];
    pl.slot_first(plan)[s] = s;
    pl.slot_count(plan)[s] = 1;
    pl.row_weight(plan)[s] = __float_as_int(weight[j]);
    pl.token_rows(plan)[s] = s;
  }
  const int row = static_cast<int>(blockIdx.x) * kProductWarps + warp;
  if (slot >= top_k || row >= width) return;
  const int expert = pick[by_expert[slot]];
  const long long at = static_cast<long long>(row) * hidden;
  const uint4* const wr[2] = {
      reinterpret_cast<const uint4*>(static_cast<const T*>(w.gate[expert]) + at),
      reinterpret_cast<const uint4*>(static_cast<const T*>(w.up[expert]) + at)};
  gate_up_pass<T, 1, Gelu>(wr, in, hidden, hidden_out + static_cast<long long>(slot) * width, width,
                           row);
}

// Grid: (hidden / kProductWarps, slots); a warp takes one row of the slot's expert's down.
template <class T>
__global__ void __launch_bounds__(kProductWarps * 32)
    moe_down_kernel(const __grid_constant__ DownWeights w, const T* __restrict__ hidden_in,
                    const int* __restrict__ plan, T* __restrict__ y, int hidden, int width,
                    int experts) {
  pdl_wait();
  Slot s;
  if (!slot_of_block(plan, experts, s)) return;
  const int row = static_cast<int>(blockIdx.x) * kProductWarps + static_cast<int>(threadIdx.x / 32);
  if (row >= hidden) return;
  const uint4* const wr[1] = {reinterpret_cast<const uint4*>(
      static_cast<const T*>(w.down[s.expert]) + static_cast<long long>(row) * width)};
  by_passes(s.count, [&](int r0, auto r) {
    const long long first = s.first + r0;
    down_pass<T, decltype(r)::value>(wr, hidden_in + first * width, width, y + first * hidden,
                                     hidden, row);
  });
}

// The rest of the combine for value i of token t, after the experts' weighted sum `acc`: the
// shared expert's output, gated where it has a logit, residual_scale, the store and the
// residual add, each rounded as the ops one by one are.
template <class T>
__device__ __forceinline__ void finish_combine(float acc, long long i, int t,
                                               const T* __restrict__ shared,
                                               const T* __restrict__ shared_logit,
                                               T* __restrict__ out, T* __restrict__ residual,
                                               float residual_scale) {
  if (shared) {
    float w = 1.0f;
    if (shared_logit) w = to_float(from_float<T>(1.0f / (1.0f + expf(-to_float(shared_logit[t])))));
    acc = to_float(from_float<T>(acc + to_float(from_float<T>(to_float(shared[i]) * w))));
  }
  if (residual_scale != 1.0f) acc = to_float(from_float<T>(acc * residual_scale));
  out[i] = from_float<T>(acc);
  if (residual) residual[i] = from_float<T>(to_float(residual[i]) + acc);
}

// out[t] = zeros, + round(y[row] * w[row]) rounded for each of t's rows by ascending expert,
// then + round(shared[t] * round(sigmoid(shared_logit[t]))) (1 without a logit): torch's
// index_add_ of each expert's weighted rows, then the shared expert's; then times
// residual_scale (rounded, as ops::scale) where it is not 1, and added into residual (rounded,
// as ops::add) where given. A thread's rows and weights are all loaded before the ordered sum:
// one after another they were a chain of dependent loads as long as the whole kernel.
template <class T>
__global__ void moe_combine_kernel(const T* __restrict__ y, const int* __restrict__ plan,
                                   const T* __restrict__ shared, const T* __restrict__ shared_logit,
                                   T* __restrict__ out, T* __restrict__ residual,
                                   float residual_scale, int n, int hidden, int experts,
                                   int top_k) {
  pdl_wait();
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(n) * hidden) return;
  const int t = static_cast<int>(i / hidden), c = static_cast<int>(i % hidden);
  const Plan pl{experts, n * top_k};
  int row[kMaxTopK];
#pragma unroll
  for (int j = 0; j < kMaxTopK; ++j) row[j] = j < top_k ? pl.token_rows(plan)[t * top_k + j] : 0;
  float yv[kMaxTopK], wv[kMaxTopK];
#pragma unroll
  for (int j = 0; j < kMaxTopK; ++j) {
    if (j >= top_k) continue;
    wv[j] = __int_as_float(pl.row_weight(plan)[row[j]]);
    yv[j] = to_float(y[static_cast<long long>(row[j]) * hidden + c]);
  }
  float acc = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxTopK; ++j) {
    if (j < top_k) acc = to_float(from_float<T>(acc + to_float(from_float<T>(yv[j] * wv[j]))));
  }
  finish_combine<T>(acc, i, t, shared, shared_logit, out, residual, residual_scale);
}

// One token (a batch-1 decode step): down's products and the combine in one launch. A warp owns
// hidden value c: the picked experts' down rows c, by ascending expert (the plan's slots, one
// row each), each dotted with its pick's hidden row in dot_rows' order, so each y is the
// separate kernel's to the bit, all of them in flight at once; then the combine's ordered sum.
// The y rows stay in registers and the combine's launch and its wait are gone. K bounds top_k.
template <class T, int K>
__global__ void __launch_bounds__(kProductWarps * 32)
    moe_down_combine_kernel(const __grid_constant__ DownWeights w, const T* __restrict__ hidden_in,
                            const int* __restrict__ plan, const T* __restrict__ shared,
                            const T* __restrict__ shared_logit, T* __restrict__ out,
                            T* __restrict__ residual, float residual_scale, int hidden, int width,
                            int experts, int top_k) {
  constexpr int V = Vec<T>::kN;
  pdl_wait();
  const int c = static_cast<int>(blockIdx.x) * kProductWarps + static_cast<int>(threadIdx.x / 32);
  if (c >= hidden) return;
  const int lane = static_cast<int>(threadIdx.x % 32), chunks = width / V;
  const Plan pl{experts, top_k};
  const uint64_t policy = weight_stream_policy();
  const uint4* wr[K];
  const uint4* xr[K];
  float acc[K];
#pragma unroll
  for (int j = 0; j < K; ++j) {
    acc[j] = 0.0f;
    const int slot = j < top_k ? j : 0;
    const T* down = static_cast<const T*>(w.down[pl.slot_expert(plan)[slot]]);
    wr[j] = reinterpret_cast<const uint4*>(down + static_cast<long long>(c) * width);
    xr[j] = reinterpret_cast<const uint4*>(
        hidden_in + static_cast<long long>(pl.slot_first(plan)[slot]) * width);
  }
  for (int ch = lane; ch < chunks; ch += 32) {
    uint4 wv[K], xv[K];
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (j < top_k) {
        wv[j] = load_weight(wr[j] + ch, policy);
        xv[j] = __ldg(xr[j] + ch);
      }
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (j >= top_k) continue;
      float wf[V], xf[V];
      widen<T>(wv[j], wf);
      widen<T>(xv[j], xf);
#pragma unroll
      for (int i = 0; i < V; ++i) acc[j] = fmaf(wf[i], xf[i], acc[j]);
    }
  }
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (j >= top_k) continue;
    const float y = to_float(from_float<T>(warp_sum(acc[j])));
    const float weight = __int_as_float(pl.row_weight(plan)[pl.slot_first(plan)[j]]);
    sum = to_float(from_float<T>(sum + to_float(from_float<T>(y * weight))));
  }
  if (lane == 0) finish_combine<T>(sum, c, 0, shared, shared_logit, out, residual, residual_scale);
}

void moe_experts(const ops::MoeExpertsArgs& a) {
  const ops::MoeTensors& m = *a.moe;
  const int n = static_cast<int>(a.in.size(0)), hidden = static_cast<int>(a.in.size(1));
  const int experts = static_cast<int>(m.router.size(0)), top_k = static_cast<int>(m.top_k);
  const int width = static_cast<int>(m.gate[0].size(0));
  GateUpWeights gate_up{};
  DownWeights down{};
  for (int e = 0; e < experts; ++e) {
    gate_up.gate[e] = m.gate[static_cast<size_t>(e)].raw();
    gate_up.up[e] = m.up[static_cast<size_t>(e)].raw();
    down.down[e] = m.down[static_cast<size_t>(e)].raw();
  }
  const cudaStream_t stream = stream_of(a.in.device());
  const unsigned slots = static_cast<unsigned>(std::min(experts, n * top_k));
  dispatch_float(a.in.dtype(), "moe_experts", [&](auto t) {
    using T = decltype(t);
    int* plan = a.plan.data<int>();
    if (n == 1) {  // one token: the routing in every gate/up block, down and combine as one
      const auto kernel = a.act == ops::GluActivation::gelu_tanh
                              ? moe_route_gate_up_kernel<T, true>
                              : moe_route_gate_up_kernel<T, false>;
      launch(kernel, dim3((width + kProductWarps - 1) / kProductWarps, slots), kProductWarps * 32,
             0, stream, gate_up, static_cast<const T*>(a.logits.data<T>()),
             static_cast<const T*>(a.in.data<T>()), plan, a.hidden.data<T>(), hidden, width,
             experts, top_k, m.norm_topk, m.weights_in_act_dtype);
    } else {
      launch(moe_route_kernel<T>, 1, kRouteThreads, 0, stream, a.logits.data<T>(), a.in.data<T>(),
             a.rows.data<T>(), plan, n, experts, top_k, hidden, m.norm_topk,
             m.weights_in_act_dtype);
      const dim3 gate_up_grid((width + kProductWarps - 1) / kProductWarps, slots);
      const auto gate_up_kernel = a.act == ops::GluActivation::gelu_tanh
                                      ? moe_gate_up_kernel<T, true>
                                      : moe_gate_up_kernel<T, false>;
      launch(gate_up_kernel, gate_up_grid, kProductWarps * 32, 0, stream, gate_up,
             static_cast<const T*>(a.rows.data<T>()), static_cast<const int*>(plan),
             a.hidden.data<T>(), hidden, width, experts);
    }
    const T* shared = a.shared.defined() ? a.shared.data<T>() : nullptr;
    const T* shared_logit = a.shared_logit.defined() ? a.shared_logit.data<T>() : nullptr;
    T* residual = a.residual.defined() ? a.residual.data<T>() : nullptr;
    if (n == 1) {  // one token: down and the combine as one launch
      const auto kernel =
          top_k <= 8 ? moe_down_combine_kernel<T, 8> : moe_down_combine_kernel<T, kMaxTopK>;
      launch(kernel, (hidden + kProductWarps - 1) / kProductWarps, kProductWarps * 32, 0, stream,
             down, static_cast<const T*>(a.hidden.data<T>()), static_cast<const int*>(plan), shared,
             shared_logit, a.out.data<T>(), residual, a.residual_scale, hidden, width, experts,
             top_k);
      return;
    }
    const dim3 down_grid((hidden + kProductWarps - 1) / kProductWarps, slots);
    launch(moe_down_kernel<T>, down_grid, kProductWarps * 32, 0, stream, down,
           static_cast<const T*>(a.hidden.data<T>()), static_cast<const int*>(plan), a.y.data<T>(),
           hidden, width, experts);
    const long long values = static_cast<long long>(n) * hidden;
    launch(moe_combine_kernel<T>, blocks_for(values, 256), 256, 0, stream,
           static_cast<const T*>(a.y.data<T>()), static_cast<const int*>(plan), shared,
           shared_logit, a.out.data<T>(), residual, a.residual_scale, n, hidden, experts, top_k);
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_moe() {
  for (DType act : cuda::kFloatTypes) {
    register_kernel<ops::MoeExpertsArgs>(ops::kMoeExperts, DeviceType::cuda, act, act,
                                         &cuda::moe_experts);
  }
}

}  // namespace anvil
