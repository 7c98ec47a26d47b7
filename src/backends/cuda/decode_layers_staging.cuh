// The one-launch decode kernel's activation staging (decode_layers.cu): a phase's input vector
// into shared memory, normalised as the separate norm kernels round it, with the output norms'
// residual add (Gemma, OLMo 2) and plain copies. Included by decode_layers.cu only.
#pragma once

#include "backends/cuda/decode_layers_params.cuh"
#include "backends/cuda/decode_layers_stream.cuh"

namespace anvil::cuda {
namespace {

// ---- Activation staging -----------------------------------------------------------------

// Starts copying a norm's weight (n values) into shared memory, each thread the vectors it will
// use in stage_normed, before the grid barrier that precedes the norm, so the copy's latency
// hides behind the wait. Asynchronous copies hold no registers across the barrier (vectors
// held in registers there were spilled, and a spill waits for its load).
__device__ void copy_norm_to(void* dst, const void* weight, int n) {
  for (int c = threadIdx.x; c < n / 8; c += kThreads) {
    async_copy_16(static_cast<uint4*>(dst) + c, static_cast<const uint4*>(weight) + c);
  }
  async_copy_commit();
}
__device__ void copy_norm(const Shared& sh, const void* weight, int n) {
  copy_norm_to(sh.norm, weight, n);
}

// xs = v * scale * the norm's weight (sh.norm), rounded as the separate norm kernel rounds;
// vec(i, c) is this thread's i-th vector of v (c its index: threadIdx.x + i * kThreads).
template <class T, class Vec>
__device__ __forceinline__ void write_normed(const Shared& sh, int vecs, float scale,
                                             const Vec& vec) {
  uint4* xs = static_cast<uint4*>(sh.xs);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (c >= vecs) break;
    float f[8], wf[8];
    widen8<T>(vec(i, c), f);
    widen8<T>(static_cast<const uint4*>(sh.norm)[c], wf);
    uint4 packed;
    T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      out[j] = from_float<T>(wf[j] * to_float(from_float<T>(f[j] * scale)));
    xs[c] = packed;
  }
  consumers_sync();
}

// Four vectors of eight values a thread (vector threadIdx.x + i * kThreads), from the mailbox
// once flagged `flag` when one is given, else from src.
template <class T>
__device__ __forceinline__ void load_vectors(const Params& p, const T* src, const MailWord* mail,
                                             unsigned flag, int vecs, uint4 (&raw)[4]) {
  if (mail) {
    mail_take_vectors<4>(mail, static_cast<int>(threadIdx.x), kThreads, vecs, flag, p.poll_ns, raw);
    return;
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    raw[i] = c < vecs ? __ldcg(reinterpret_cast<const uint4*>(src) + c) : make_uint4(0, 0, 0, 0);
  }
}

// xs = rms_norm(x) * weight over n values, rounded as the separate norm kernel rounds; x from
// the mailbox once flagged `flag` when one is given. `plain`: xs = x (a layer without input
// norms), the same for every thread.
template <class T>
__device__ void stage_normed(const Params& p, const Shared& sh, const T* x, int n,
                             const MailWord* mail, unsigned flag, bool plain) {
  const int vecs = n / 8;
  uint4 raw[4];
  load_vectors<T>(p, x, mail, flag, vecs, raw);
  if (plain) {  // no norm (OLMo 2): x as it is
    uint4* xs = static_cast<uint4*>(sh.xs);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(threadIdx.x) + i * kThreads;
      if (c < vecs) xs[c] = raw[i];
    }
    async_copy_wait();  // the copy of the norm's stand-in lands before the next one is issued
    consumers_sync();
    return;
  }
  float ss = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float f[8];
    widen8<T>(raw[i], f);
#pragma unroll
    for (int j = 0; j < 8; ++j) ss += f[j] * f[j];
  }
  const float scale = rsqrtf(block_sum(ss, sh.reduce) / static_cast<float>(n) + p.eps);
  async_copy_wait();  // this thread's vectors of the weight (copy_norm) have landed
  write_normed<T>(sh, vecs, scale, [&](int i, int) { return raw[i]; });
}

// Where a block output passes through an output norm: x_new = x + rms_norm(y) * w (w copied
// ahead to output_norm), rounded as the separate rms_norm_add kernel rounds, over the hidden
// size; x and y from their mailboxes (flags xf, yf) or plain. Rows [pub_begin, pub_end) of
// x_new go to dst (and dst_mail, flagged df); then, where `stage`, xs = rms_norm(x_new) * the
// next norm's weight (sh.norm), as stage_normed stages (or, `plain`, xs = x_new). `stage` and
// `plain` are the same for every thread.
template <class T>
__device__ void stage_residual(const Params& p, const Shared& sh, const T* x,
                               const MailWord* x_mail, unsigned xf, const MailWord* y_mail,
                               unsigned yf, T* dst, MailWord* dst_mail, unsigned df, int pub_begin,
                               int pub_end, bool stage, bool plain) {
  const int n = p.hidden, vecs = n / 8;
  uint4* xs = static_cast<uint4*>(sh.xs);
  // y passes through xs (each thread its own vectors, so no barrier): held in registers
  // beside x across the block sum, it made the kernel spill.
  float ss = 0.0f;
  {
    uint4 yr[4];
    load_vectors<T>(p, static_cast<const T*>(p.y), y_mail, yf, vecs, yr);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int c = static_cast<int>(threadIdx.x) + i * kThreads;
      float f[8];
      widen8<T>(yr[i], f);
#pragma unroll
      for (int j = 0; j < 8; ++j) ss += f[j] * f[j];
      if (c < vecs) xs[c] = yr[i];
    }
  }
  uint4 xr[4];
  load_vectors<T>(p, x, x_mail, xf, vecs, xr);
  const float r = rsqrtf(block_sum(ss, sh.reduce) / static_cast<float>(n) + p.eps);
  async_copy_wait();  // both norms' weights (copy_norm_to) have landed
  float ss2 = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int c = static_cast<int>(threadIdx.x) + i * kThreads;
    if (c >= vecs) break;
    float xf8[8], yf8[8], wf[8];
    widen8<T>(xr[i], xf8);
    widen8<T>(xs[c], yf8);
    widen8<T>(static_cast<const uint4*>(output_norm(p, sh))[c], wf);
    uint4 packed;
    T* out = reinterpret_cast<T*>(&packed);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const T normed =
          from_float<T>(__fmul_rn(wf[j], to_float(from_float<T>(__fmul_rn(yf8[j], r)))));
      out[j] = from_float<T>(__fadd_rn(xf8[j], to_float(normed)));
      const float v = to_float(out[j]);
      ss2 += v * v;
    }
    xs[c] = packed;
  }
  consumers_sync();
  const T* xn = static_cast<const T*>(sh.xs);
  for (int j = pub_begin / 2 + static_cast<int>(threadIdx.x); j < pub_end / 2; j += kThreads) {
    const T a = xn[2 * j], b = xn[2 * j + 1];
    dst[2 * j] = a;
    dst[2 * j + 1] = b;
    if (dst_mail) mail_put(dst_mail + j, df, pack_pair<T>(to_float(a), to_float(b)));
  }
  consumers_sync();             // xs is overwritten below
  if (!stage || plain) return;  // plain (OLMo 2): the next phase takes x_new as it is, in xs
  const float scale = rsqrtf(block_sum(ss2, sh.reduce) / static_cast<float>(n) + p.eps);
  write_normed<T>(sh, vecs, scale, [&](int, int c) { return xs[c]; });
}

// xs = src over n values; from the mailbox once flagged `flag` when one is given.
template <class T>
__device__ void stage_plain(const Params& p, const Shared& sh, const T* src, int n,
                            const MailWord* mail, unsigned flag) {
  uint4* xs = static_cast<uint4*>(sh.xs);
  const int vecs = n / 8;
  if (mail) {
    constexpr int kPass = 4;
    for (int c0 = threadIdx.x; c0 < vecs; c0 += kPass * kThreads) {
      uint4 v[kPass];
      mail_take_vectors<kPass>(mail, c0, kThreads, vecs, flag, p.poll_ns, v);
#pragma unroll
      for (int i = 0; i < kPass; ++i) {
        if (c0 + i * kThreads < vecs) xs[c0 + i * kThreads] = v[i];
      }
    }
  } else {
    for (int c = threadIdx.x; c < vecs; c += kThreads) {
      xs[c] = __ldcg(reinterpret_cast<const uint4*>(src) + c);
    }
  }
  consumers_sync();
}

}  // namespace
}  // namespace anvil::cuda
