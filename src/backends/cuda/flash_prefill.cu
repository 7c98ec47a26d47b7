// Flash attention for prefill (bf16/f16, head_dim 64 or 128) on the tensor cores, after
// FlashAttention-2. A block of four warps takes 64 queries of one head; each warp keeps its 16
// query rows (as mma operands), their scores, running max and sum, and their output
// accumulators in registers, and walks the causal key range in 64-key tiles (under a sliding
// window, from the tile holding the first key its first query sees). cp.async
// double-buffers the K/V tiles into shared memory, their rows swizzled so that ldmatrix reads
// them without bank conflicts. Nothing of size S x T is materialised: each K/V byte is read
// once per 64 queries, and the scores never leave the registers.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdlib>
#include <type_traits>

#include "backends/cuda/async_copy.cuh"
#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_types.cuh"
#include "backends/cuda/flash_prefill.h"
#include "backends/cuda/launch.cuh"
#include "backends/cuda/mma.cuh"

namespace anvil::cuda {
namespace {

constexpr int kRows = 64;  // queries per block, 16 per warp
constexpr int kKeys = 64;  // keys per tile
constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;

struct FlashGeometry {
  int seq, heads, kv_heads, group, mask_width;
  long long cap, past;
  long long window;  // sliding window (ops::AttentionArgs::window), 0 for none
  float scale_log2;  // the softmax scale times log2(e): the kernel exponentiates with exp2
  float scale;       // the softmax scale, and the logit softcap (0: none) it is applied under
  float softcap;
};

template <int D>
constexpr size_t flash_smem_bytes(size_t esize) {
  // Q, two K and two V tiles, and the key mask of the two tiles.
  return 5 * static_cast<size_t>(kRows) * D * esize + 2 * kKeys * sizeof(int);
}

// Element offset of 16-byte chunk `c` of row `r` in a [rows][D] half-precision tile whose
// chunks are XOR-swizzled by the row's low three bits: the eight rows an ldmatrix phase reads
// then fall in eight different bank groups.
template <int D>
__device__ __forceinline__ int swizzled(int r, int c) {
  return r * D + ((c ^ (r & 7)) << 3);
}

__device__ __forceinline__ void load_matrix_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}
__device__ __forceinline__ void load_matrix_x4_transposed(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(p)));
}

// Register layout (PTX's m16n8k16): lane = 4 * group + quad. An accumulator tile holds rows
// `group` and `group + 8`, columns 2 * quad and 2 * quad + 1 of its 8; two adjacent score
// tiles are exactly the A operand of the next product, so P goes from scores to mma without
// shared memory.
template <class T, int D>
__global__ void __launch_bounds__(kThreads)
    flash_prefill_kernel(const T* __restrict__ q, const T* __restrict__ kc,
                         const T* __restrict__ vc, const int* __restrict__ mask,
                         T* __restrict__ out, FlashGeometry g) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  extern __shared__ __align__(128) unsigned char smem_raw[];
  T* qs = reinterpret_cast<T*>(smem_raw);
  T* ks = qs + kRows * D;  // [2][kKeys][D]
  T* vs = ks + 2 * kKeys * D;
  int* ms = reinterpret_cast<int*>(vs + 2 * kKeys * D);  // [2][kKeys]

  // The last query blocks walk the most key tiles: start them first.
  const int s0 = (gridDim.x - 1 - blockIdx.x) * kRows, h = blockIdx.y, b = blockIdx.z;
  const int kh = h / g.group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int group = lane / 4, quad = lane % 4;
  const long long keys = g.past + g.seq;
  const T* qb = q + (static_cast<long long>(b) * g.seq * g.heads + h) * D;
  const T* kb = kc + (static_cast<long long>(b) * g.kv_heads + kh) * g.cap * D;
  const T* vb = vc + (static_cast<long long>(b) * g.kv_heads + kh) * g.cap * D;
  const int* mrow = mask + static_cast<long long>(b) * g.mask_width;
  const long long key_limit = keys < g.mask_width ? keys : g.mask_width;

  const int last_s = (s0 + kRows < g.seq ? s0 + kRows : g.seq) - 1;
  const int tiles = static_cast<int>((g.past + last_s + kKeys) / kKeys);
  // The first key any of the block's queries sees (its first query's), and its tile.
  const int first_tile = static_cast<int>(first_visible_key(g.past + s0, g.window) / kKeys);

  const auto load_rows = [&](T* dst, const T* src, long long stride, long long r0,
                             long long valid) {
    for (int i = threadIdx.x; i < kRows * kChunks; i += kThreads) {
      const int r = i / kChunks, c = i % kChunks;
      const bool ok = r0 + r < valid;
      copy_async16(dst + swizzled<D>(r, c), ok ? src + (r0 + r) * stride + c * 8 : src, ok);
    }
  };
  const auto load_tile = [&](int tile, int buf) {
    const long long t0 = static_cast<long long>(tile) * kKeys;
    load_rows(ks + buf * kKeys * D, kb, D, t0, keys);
    load_rows(vs + buf * kKeys * D, vb, D, t0, keys);
    if (threadIdx.x < kKeys) {
      const long long t = t0 + threadIdx.x;
      ms[buf * kKeys + threadIdx.x] = t < key_limit ? mrow[t] : 0;
    }
  };

  pdl_wait();
  load_rows(qs, qb, static_cast<long long>(g.heads) * D, s0, g.seq);
  load_tile(first_tile, 0);
  copy_async_commit();

  unsigned qf[D / 16][4];
  float o[D / 8][4];
#pragma unroll
  for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.0f, 0.0f};
  // This lane's two query rows and the last key each may see (causal).
  const int qa = s0 + warp * 16 + group;
  const long long limit[2] = {g.past + qa, g.past + qa + 8};
  const long long first[2] = {first_visible_key(limit[0], g.window),
                              first_visible_key(limit[1], g.window)};

  for (int tile = first_tile; tile < tiles; ++tile) {
    const int buf = (tile - first_tile) & 1;
    if (tile + 1 < tiles) load_tile(tile + 1, buf ^ 1);
    copy_async_commit();  // possibly empty: keeps one group per tile
    copy_async_wait<1>();
    __syncthreads();
    if (tile == first_tile) {
#pragma unroll
      for (int kk = 0; kk < D / 16; ++kk) {
        load_matrix_x4(qf[kk], qs + swizzled<D>(warp * 16 + (lane & 15), 2 * kk + (lane >> 4)));
      }
    }
    const T* kt = ks + buf * kKeys * D;
    const T* vt = vs + buf * kKeys * D;
    const int* mt = ms + buf * kKeys;

    // S = Q K^T for this warp's 16 rows and the tile's 64 keys.
    float s[kKeys / 8][4];
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
      for (int np = 0; np < kKeys / 16; ++np) {
        unsigned bk[4];
        const int key = np * 16 + (lane & 7) + ((lane >> 4) << 3);
        load_matrix_x4(bk, kt + swizzled<D>(key, 2 * kk + ((lane >> 3) & 1)));
        mma_16x8x16<T>(s[2 * np], qf[kk], bk[0], bk[1]);
        mma_16x8x16<T>(s[2 * np + 1], qf[kk], bk[2], bk[3]);
      }
    }

    // Causal and padding mask, scale, and the online softmax (rows shared by a lane quad).
    const long long t0 = static_cast<long long>(tile) * kKeys;
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = n * 8 + 2 * quad + (e & 1);
        const bool seen = t0 + col <= limit[e >> 1] && t0 + col >= first[e >> 1] && mt[col] != 0;
        const float scaled = g.softcap > 0.0f
                                 ? soft_capped(s[n][e] * g.scale, g.softcap) * 1.4426950408889634f
                                 : s[n][e] * g.scale_log2;
        s[n][e] = seen ? scaled : -INFINITY;
        tile_max[e >> 1] = fmaxf(tile_max[e >> 1], s[n][e]);
      }
    }
    float base[2], corr[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float m_new = fmaxf(row_max[r], tile_max[r]);
      // A row that has seen no key keeps max -inf: exponentiate against 0 so its
      // probabilities are 0 rather than NaN.
      base[r] = m_new == -INFINITY ? 0.0f : m_new;
      corr[r] = exp2f(row_max[r] - base[r]);
      row_max[r] = m_new;
      row_sum[r] *= corr[r];
    }
#pragma unroll
    for (int n = 0; n < kKeys / 8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[n][e] = exp2f(s[n][e] - base[e >> 1]);
        row_sum[e >> 1] += s[n][e];
      }
    }
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      o[n][0] *= corr[0];
      o[n][1] *= corr[0];
      o[n][2] *= corr[1];
      o[n][3] *= corr[1];
    }

    // O += P V, P straight from the score registers.
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      const unsigned pa[4] = {pack_pair<T>(s[2 * kk][0], s[2 * kk][1]),
                              pack_pair<T>(s[2 * kk][2], s[2 * kk][3]),
                              pack_pair<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                              pack_pair<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int dp = 0; dp < D / 16; ++dp) {
        unsigned bv[4];
        const int key = kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3);
        load_matrix_x4_transposed(bv, vt + swizzled<D>(key, 2 * dp + (lane >> 4)));
        mma_16x8x16<T>(o[2 * dp], pa, bv[0], bv[1]);
        mma_16x8x16<T>(o[2 * dp + 1], pa, bv[2], bv[3]);
      }
    }
    __syncthreads();  // the next iteration's loads overwrite the buffer read here
  }
  copy_async_wait<0>();

  // out = O / l (a row that saw no key has l = 0 and gets zeros).
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 1);
    row_sum[r] += __shfl_xor_sync(0xffffffffu, row_sum[r], 2);
    const int s = qa + 8 * r;
    if (s >= g.seq) continue;
    const float inv = row_sum[r] > 0.0f ? 1.0f / row_sum[r] : 0.0f;
    T* orow = out + ((static_cast<long long>(b) * g.seq + s) * g.heads + h) * D;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
      *reinterpret_cast<unsigned*>(orow + n * 8 + 2 * quad) =
          pack_pair<T>(o[n][2 * r] * inv, o[n][2 * r + 1] * inv);
    }
  }
}

template <class T, int D>
void run(const ops::AttentionArgs& a, const FlashGeometry& g, int batch) {
  const size_t smem = flash_smem_bytes<D>(sizeof(T));
  // The attribute applies to the current device: make the tensors' device current first.
  const cudaStream_t stream = stream_of(a.q.device());
  ANVIL_CUDA_CHECK(cudaFuncSetAttribute(flash_prefill_kernel<T, D>,
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(smem)));
  const dim3 grid(static_cast<unsigned>((g.seq + kRows - 1) / kRows),
                  static_cast<unsigned>(g.heads), static_cast<unsigned>(batch));
  launch(flash_prefill_kernel<T, D>, grid, kThreads, smem, stream, a.q.data<T>(),
         a.k_cache.data<T>(), a.v_cache.data<T>(), a.key_mask.data<int>(), a.out.data<T>(), g);
  ANVIL_CUDA_CHECK_LAUNCH();
}

}  // namespace

bool flash_prefill(const ops::AttentionArgs& a) {
  static const bool off = std::getenv("ANVIL_CUDA_NO_FLASH") != nullptr;
  const DType t = a.q.dtype();
  const int dim = static_cast<int>(a.q.size(3));
  if (off || a.past_on_device.defined() || (t != DType::bf16 && t != DType::f16) ||
      (dim != 64 && dim != 128)) {
    return false;
  }
  // GPUs with less shared memory per block than a 64 x 128 tile set needs take the other path.
  int optin = 0;
  ANVIL_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                          context(a.q.device()).ordinal));
  const size_t esize = dtype_size(t);
  const size_t need = dim == 64 ? flash_smem_bytes<64>(esize) : flash_smem_bytes<128>(esize);
  if (static_cast<size_t>(optin) < need) return false;
  FlashGeometry g{};
  g.seq = static_cast<int>(a.q.size(1));
  g.heads = static_cast<int>(a.q.size(2));
  g.kv_heads = static_cast<int>(a.k_cache.size(1));
  g.group = g.heads / g.kv_heads;
  g.mask_width = static_cast<int>(a.key_mask.size(1));
  g.cap = a.k_cache.size(2);
  g.past = a.past;
  g.window = a.window;
  g.scale_log2 = a.scale * 1.4426950408889634f;
  g.scale = a.scale;
  g.softcap = a.softcap;
  const int batch = static_cast<int>(a.q.size(0));
  if (t == DType::bf16) {
    dim == 64 ? run<__nv_bfloat16, 64>(a, g, batch) : run<__nv_bfloat16, 128>(a, g, batch);
  } else {
    dim == 64 ? run<__half, 64>(a, g, batch) : run<__half, 128>(a, g, batch);
  }
  return true;
}

}  // namespace anvil::cuda
