// Elementwise CUDA kernels: embedding gather, residual add, SwiGLU / GeGLU, dtype casts, logit
// softcapping, scaling, the mask column write of graph replay, and the mixture-of-experts row
// gather and weighted scatter-add.
#include <cstdint>

#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/launch.cuh"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::cuda {
namespace {

constexpr int kThreads = 256;

template <class A, class W>
__global__ void embedding_kernel(const long long* ids, const W* table, A* out, long long rows,
                                 long long hidden, float scale) {
  pdl_wait();
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= rows * hidden) return;
  const long long r = i / hidden, c = i % hidden;
  out[i] = from_float<A>(to_float(table[ids[r] * hidden + c]) * scale);
}

struct AddOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct SwigluOp {  // SiLU(gate) * up
  __device__ float operator()(float g, float u) const { return g / (1.0f + __expf(-g)) * u; }
};
// GELU's tanh approximation (gate) * up, written as g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3))
// (the same function; the CPU's kernels take this form too).
struct GegluOp {
  __device__ float operator()(float g, float u) const {
    const float a = g * (1.5957691216057308f + 1.5957691216057308f * 0.044715f * g * g);
    return g / (1.0f + __expf(-a)) * u;
  }
};

__global__ void softcap_kernel(float* x, long long n, float cap) {
  pdl_wait();
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = tanhf(x[i] / cap) * cap;
}

// out[i] = op(a[i], b[i]), V elements per thread. With V > 1 every pointer is 16-byte aligned
// and a thread moves 16 bytes per operand: one element per thread (2-byte loads for bf16) ran
// prefill's SwiGLU and residual adds at a third of the memory bandwidth. out may be a or b.
template <class T, int V, class Op>
__global__ void binary_kernel(const T* a, const T* b, T* out, long long n, Op op) {
  pdl_wait();
  const long long i = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) * V;
  if (i >= n) return;
  if (V > 1 && i + V <= n) {
    alignas(16) T va[V], vb[V], vo[V];
    *reinterpret_cast<uint4*>(va) = *reinterpret_cast<const uint4*>(a + i);
    *reinterpret_cast<uint4*>(vb) = *reinterpret_cast<const uint4*>(b + i);
#pragma unroll
    for (int j = 0; j < V; ++j) vo[j] = from_float<T>(op(to_float(va[j]), to_float(vb[j])));
    *reinterpret_cast<uint4*>(out + i) = *reinterpret_cast<const uint4*>(vo);
    return;
  }
  for (long long j = i; j < n && j < i + V; ++j) {
    out[j] = from_float<T>(op(to_float(a[j]), to_float(b[j])));
  }
}

template <class T, class Op>
void launch_binary(const T* a, const T* b, T* out, long long n, Op op, cudaStream_t stream) {
  constexpr int V = 16 / sizeof(T);
  const auto address = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  if ((address(a) | address(b) | address(out)) % 16 == 0) {
    launch(binary_kernel<T, V, Op>, blocks_for((n + V - 1) / V, kThreads), kThreads, 0, stream, a,
           b, out, n, op);
  } else {
    launch(binary_kernel<T, 1, Op>, blocks_for(n, kThreads), kThreads, 0, stream, a, b, out, n, op);
  }
  ANVIL_CUDA_CHECK_LAUNCH();
}

template <class D, class S>
__global__ void cast_kernel(const S* src, D* out, long long n) {
  pdl_wait();
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = from_float<D>(to_float(src[i]));
}

__global__ void mask_column_kernel(int* mask, const int* values, const int* index, long long rows,
                                   long long width) {
  pdl_wait();
  const long long r = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  const int col = *index;
  if (r < rows && col >= 0 && col < width) mask[r * width + col] = values[r];
}

template <class T>
__global__ void scale_kernel(T* x, long long n, float factor) {
  pdl_wait();
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = from_float<T>(to_float(x[i]) * factor);
}

// Mixture-of-experts rows: one thread per value. The indices come from the host's routing and
// the front end checks them; a row outside [0, n) is skipped rather than read or written.
template <class T>
__global__ void gather_rows_kernel(const T* x, const int* index, T* out, long long m, long long d,
                                   long long n) {
  pdl_wait();
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= m * d) return;
  const long long r = index[i / d];
  if (r >= 0 && r < n) out[i] = x[r * d + i % d];
}

// out[index[i]] += round(w[i] * y[i]), rounded again after the sum (torch's index_add_ of the
// product cast to out's dtype). Distinct indices: no two threads write one value.
template <class T>
__global__ void scatter_add_rows_kernel(const T* y, const int* index, const float* w, T* out,
                                        long long m, long long d, long long n) {
  pdl_wait();
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= m * d) return;
  const long long row = i / d, r = index[row];
  if (r < 0 || r >= n) return;
  T& o = out[r * d + i % d];
  o = from_float<T>(to_float(o) + to_float(from_float<T>(to_float(y[i]) * w[row])));
}

void scale(const ops::ScaleArgs& a) {
  const long long n = a.x.numel();
  if (n == 0) return;
  dispatch_float(a.x.dtype(), "scale", [&](auto t) {
    using T = decltype(t);
    launch(scale_kernel<T>, blocks_for(n, kThreads), kThreads, 0, stream_of(a.x.device()),
           a.x.data<T>(), n, a.factor);
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void gather_rows(const ops::GatherRowsArgs& a) {
  const long long m = a.index.size(0), d = a.x.size(1), n = m * d;
  if (n == 0) return;
  dispatch_float(a.x.dtype(), "gather_rows", [&](auto t) {
    using T = decltype(t);
    launch(gather_rows_kernel<T>, blocks_for(n, kThreads), kThreads, 0, stream_of(a.x.device()),
           a.x.data<T>(), a.index.data<int>(), a.out.data<T>(), m, d, a.x.size(0));
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void scatter_add_rows(const ops::ScatterAddRowsArgs& a) {
  const long long m = a.y.size(0), d = a.y.size(1), n = m * d;
  if (n == 0) return;
  dispatch_float(a.y.dtype(), "scatter_add_rows", [&](auto t) {
    using T = decltype(t);
    launch(scatter_add_rows_kernel<T>, blocks_for(n, kThreads), kThreads, 0,
           stream_of(a.y.device()), a.y.data<T>(), a.index.data<int>(), a.weight.data<float>(),
           a.out.data<T>(), m, d, a.out.size(0));
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void embedding(const ops::EmbeddingArgs& a) {
  const long long rows = a.ids.numel(), hidden = a.table.size(1), n = rows * hidden;
  if (n == 0) return;
  dispatch_float(a.out.dtype(), "embedding", [&](auto act) {
    dispatch_float(a.table.dtype(), "embedding", [&](auto w) {
      using A = decltype(act);
      using W = decltype(w);
      launch(embedding_kernel<A, W>, blocks_for(n, kThreads), kThreads, 0,
             stream_of(a.out.device()), a.ids.data<long long>(), a.table.data<W>(), a.out.data<A>(),
             rows, hidden, a.scale);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void add(const ops::AddArgs& a) {
  const long long n = a.out.numel();
  if (n == 0) return;
  dispatch_float(a.out.dtype(), "add", [&](auto t) {
    using T = decltype(t);
    launch_binary(a.a.data<T>(), a.b.data<T>(), a.out.data<T>(), n, AddOp{},
                  stream_of(a.out.device()));
  });
}

void swiglu(const ops::SwigluArgs& a) {
  const long long n = a.out.numel();
  if (n == 0) return;
  dispatch_float(a.out.dtype(), "swiglu", [&](auto t) {
    using T = decltype(t);
    if (a.act == ops::GluActivation::gelu_tanh) {
      launch_binary(a.gate.data<T>(), a.up.data<T>(), a.out.data<T>(), n, GegluOp{},
                    stream_of(a.out.device()));
    } else {
      launch_binary(a.gate.data<T>(), a.up.data<T>(), a.out.data<T>(), n, SwigluOp{},
                    stream_of(a.out.device()));
    }
  });
}

void softcap(const ops::SoftcapArgs& a) {
  const long long n = a.x.numel();
  if (n == 0) return;
  launch(softcap_kernel, blocks_for(n, kThreads), kThreads, 0, stream_of(a.x.device()),
         a.x.data<float>(), n, a.cap);
  ANVIL_CUDA_CHECK_LAUNCH();
}

void cast(const ops::CastArgs& a) {
  const long long n = a.out.numel();
  if (n == 0) return;
  dispatch_float(a.out.dtype(), "cast", [&](auto d) {
    dispatch_float(a.src.dtype(), "cast", [&](auto s) {
      using D = decltype(d);
      using S = decltype(s);
      launch(cast_kernel<D, S>, blocks_for(n, kThreads), kThreads, 0, stream_of(a.out.device()),
             a.src.data<S>(), a.out.data<D>(), n);
    });
  });
  ANVIL_CUDA_CHECK_LAUNCH();
}

void write_mask_column(const ops::MaskColumnArgs& a) {
  const long long rows = a.mask.size(0);
  launch(mask_column_kernel, blocks_for(rows, kThreads), kThreads, 0, stream_of(a.mask.device()),
         a.mask.data<int>(), a.values.data<int>(), a.index.data<int>(), rows, a.mask.size(1));
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace
}  // namespace anvil::cuda

namespace anvil {

void register_cuda_elementwise() {
  using namespace cuda;
  for (DType act : kFloatTypes) {
    for (DType other : kFloatTypes) {
      register_kernel<ops::EmbeddingArgs>(ops::kEmbedding, DeviceType::cuda, act, other,
                                          &embedding);
      register_kernel<ops::CastArgs>(ops::kCast, DeviceType::cuda, act, other, &cast);
    }
    register_kernel<ops::AddArgs>(ops::kAdd, DeviceType::cuda, act, act, &add);
    register_kernel<ops::SwigluArgs>(ops::kSwiglu, DeviceType::cuda, act, act, &swiglu);
    register_kernel<ops::SwigluArgs>(ops::kGluGeluTanh, DeviceType::cuda, act, act, &swiglu);
    register_kernel<ops::ScaleArgs>(ops::kScale, DeviceType::cuda, act, act, &scale);
    register_kernel<ops::GatherRowsArgs>(ops::kGatherRows, DeviceType::cuda, act, act,
                                         &gather_rows);
    register_kernel<ops::ScatterAddRowsArgs>(ops::kScatterAddRows, DeviceType::cuda, act, act,
                                             &scatter_add_rows);
  }
  register_kernel<ops::SoftcapArgs>(ops::kSoftcap, DeviceType::cuda, DType::f32, DType::f32,
                                    &softcap);
  register_kernel<ops::MaskColumnArgs>(ops::kMaskColumn, DeviceType::cuda, DType::i32, DType::i32,
                                       &write_mask_column);
}

}  // namespace anvil
