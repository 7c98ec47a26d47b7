// The OpenCL C kernels. Activations are float32; weights are float32, bfloat16 or float16
// storage chosen by a define (W_F32, W_BF16, W_F16) and widened on load, so devices without
// half-precision arithmetic run every model. Buffers arrive as (buffer, byte offset) pairs.
#include "backends/opencl/opencl_sources.h"

namespace anvil::opencl {

const char* const kOpenClSource = R"CLC(
#if defined(W_BF16)
typedef ushort wstore;
inline float wload(__global const wstore* p, size_t i) {
  return as_float(((uint)p[i]) << 16);
}
// Four consecutive weights p[i..i+3] (element alignment is all vloadn asks).
inline float4 wload4(__global const wstore* p, size_t i) {
  return as_float4(convert_uint4(vload4(0, p + i)) << 16);
}
#elif defined(W_F16)
typedef half wstore;
inline float wload(__global const wstore* p, size_t i) {
  return vload_half(i, p);
}
inline float4 wload4(__global const wstore* p, size_t i) {
  return vload_half4(0, p + i);
}
#else
typedef float wstore;
inline float wload(__global const wstore* p, size_t i) {
  return p[i];
}
inline float4 wload4(__global const wstore* p, size_t i) {
  return vload4(0, p + i);
}
#endif

// Buffers: every tensor argument is a tagged offset, its top four bits the index of the buffer
// among the launch's MEM_PARAMS (NVIDIA's driver charges each buffer argument of a launch ~0.35 us
// of host and of device time: anvil's memory lives in a few large pools, and a launch passes one
// or two; a launch that touches more pools uses the build with MEMS=16).
#if MEMS == 2
#define MEM_PARAMS __global char *m0, __global char *m1
#define BASE(t) ((t) >> 60 ? m1 : m0)
#else
#define MEM_PARAMS                                                                               \
  __global char *m0, __global char *m1, __global char *m2, __global char *m3, __global char *m4, \
      __global char *m5, __global char *m6, __global char *m7, __global char *m8,                \
      __global char *m9, __global char *m10, __global char *m11, __global char *m12,             \
      __global char *m13, __global char *m14, __global char *m15
#define BASE(t) \
  pick_base((t) >> 60, m0, m1, m2, m3, m4, m5, m6, m7, m8, m9, m10, m11, m12, m13, m14, m15)
inline __global char* pick_base(ulong i, MEM_PARAMS) {
  switch (i) {
    case 0:
      return m0;
    case 1:
      return m1;
    case 2:
      return m2;
    case 3:
      return m3;
    case 4:
      return m4;
    case 5:
      return m5;
    case 6:
      return m6;
    case 7:
      return m7;
    case 8:
      return m8;
    case 9:
      return m9;
    case 10:
      return m10;
    case 11:
      return m11;
    case 12:
      return m12;
    case 13:
      return m13;
    case 14:
      return m14;
    default:
      return m15;
  }
}
#endif
#define PTR(t) (BASE(t) + ((t)&0x0FFFFFFFFFFFFFFFUL))
#define AT(type, t) ((__global type*)PTR(t))

// Work-group reductions. With subgroups (USE_SUBGROUPS, set where the device has them) each
// subgroup reduces in registers and only the subgroups' results meet in local memory; without,
// a tree over `n` = get_local_size(0) values in local memory. Every work-item must call them.
#if defined(NV_WARP_SHUFFLE)
// NVIDIA's OpenCL reports no subgroups, but its work-items run in warps of 32 consecutive local
// ids and its compiler takes inline PTX: warp shuffles do what sub_group_reduce does elsewhere.
// Local sizes are multiples of 32 wherever these are called.
inline float warp_xor(float v, int lane_mask) {
  float r;
  asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;"
               : "=f"(r)
               : "f"(v), "r"(lane_mask));
  return r;
}
inline float warp_sum(float v) {
  for (int m = 16; m > 0; m >>= 1) v += warp_xor(v, m);
  return v;
}
inline float warp_max(float v) {
  for (int m = 16; m > 0; m >>= 1) v = fmax(v, warp_xor(v, m));
  return v;
}

inline float group_sum(__local float* tmp, float v) {
  const int lid = get_local_id(0), warps = get_local_size(0) / 32;
  const float part = warp_sum(v);
  if (lid % 32 == 0) tmp[lid / 32] = part;
  barrier(CLK_LOCAL_MEM_FENCE);
  float r = 0.0f;
  for (int i = 0; i < warps; ++i) r += tmp[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

inline float group_max(__local float* tmp, float v) {
  const int lid = get_local_id(0), warps = get_local_size(0) / 32;
  const float part = warp_max(v);
  if (lid % 32 == 0) tmp[lid / 32] = part;
  barrier(CLK_LOCAL_MEM_FENCE);
  float r = -INFINITY;
  for (int i = 0; i < warps; ++i) r = fmax(r, tmp[i]);
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}
#elif defined(USE_SUBGROUPS)
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
inline float group_sum(__local float* tmp, float v) {
  const float part = sub_group_reduce_add(v);
  if (get_sub_group_local_id() == 0) tmp[get_sub_group_id()] = part;
  barrier(CLK_LOCAL_MEM_FENCE);
  float r = 0.0f;
  for (uint i = 0; i < get_num_sub_groups(); ++i) r += tmp[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

inline float group_max(__local float* tmp, float v) {
  const float part = sub_group_reduce_max(v);
  if (get_sub_group_local_id() == 0) tmp[get_sub_group_id()] = part;
  barrier(CLK_LOCAL_MEM_FENCE);
  float r = -INFINITY;
  for (uint i = 0; i < get_num_sub_groups(); ++i) r = fmax(r, tmp[i]);
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}
#else
inline float group_sum(__local float* tmp, float v) {
  const int lid = get_local_id(0), n = get_local_size(0);
  tmp[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = n / 2; s > 0; s >>= 1) {
    if (lid < s) tmp[lid] += tmp[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = tmp[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

inline float group_max(__local float* tmp, float v) {
  const int lid = get_local_id(0), n = get_local_size(0);
  tmp[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = n / 2; s > 0; s >>= 1) {
    if (lid < s) tmp[lid] = fmax(tmp[lid], tmp[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const float r = tmp[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return r;
}

#endif

__kernel void embedding(MEM_PARAMS, ulong ids_t, ulong table_t, ulong out_t, long hidden,
                        float scale) {
  const long i = get_global_id(0), r = get_global_id(1);
  if (i >= hidden) return;
  const long id = AT(const long, ids_t)[r];
  AT(float, out_t)[r * hidden + i] = wload(AT(const wstore, table_t), id * hidden + i) * scale;
}

// One work-group per row.
__kernel void rms_norm(MEM_PARAMS, ulong x_t, ulong w_t, ulong out_t, int dim, float eps,
                       __local float* tmp) {
  const long row = get_group_id(0);
  const int lid = get_local_id(0), n = get_local_size(0);
  __global const float* x = AT(const float, x_t) + row * dim;
  __global float* out = AT(float, out_t) + row * dim;
  __global const wstore* w = AT(const wstore, w_t);
  float ss = 0.0f;
  for (int i = lid; i < dim; i += n) ss += x[i] * x[i];
  const float r = rsqrt(group_sum(tmp, ss) / dim + eps);
  for (int i = lid; i < dim; i += n) out[i] = wload(w, i) * (x[i] * r);
}

// Decoding (up to four rows): a team of TEAM work-items per output feature, several features
// per work-group, each work-item reading four consecutive weights per load and every activation
// row against them; the team's sums meet in local memory. (One work-group per feature spent most
// of its time in a work-group-wide reduction per feature.)
#define TEAM 32
#ifndef ATTN_KEYS
#define ATTN_KEYS 16  // keys in flight per work-item in attention's value product (even)
#endif

// A norm weight or bias element stored as float32 (is_f32) or as the weights' type.
inline float either(__global const char* p, int is_f32, long i) {
  return is_f32 ? ((__global const float*)p)[i] : wload((__global const wstore*)p, i);
}

// scale[r] = 1/sqrt(mean(x_r^2) + eps) for each of the rows, computed as rms_norm does (same
// work-item split and reduction); the fused products multiply their sums by it.
inline void norm_scales(__global const float* x, int rows, int k, float eps, __local float* tmp,
                        float* scale) {
  const int lid = get_local_id(0), n = get_local_size(0);
  for (int r = 0; r < rows; ++r) {
    float ss = 0.0f;
    for (int i = lid; i < k; i += n) ss += x[(long)r * k + i] * x[(long)r * k + i];
    scale[r] = rsqrt(group_sum(tmp, ss) / k + eps);
  }
}

// acc[r] += this work-item's share of weight row w . activation row r over columns [begin, end)
// (begin a multiple of 4; k is the rows' length), the activations
// multiplied by the norm weight on the way when norm_mode is 1 (float32 norm weight) or 2
// (stored as the weights). The row's RMS scale is left out: the caller multiplies the sum by
// it, so the weights' loads start at once instead of after the norm's reduction.
inline void team_dot(__global const wstore* w, __global const float* x, int rows, int k, int begin,
                     int end, __global const char* nb, int norm_mode, float* acc) {
  const int lane = get_local_id(0) % TEAM;
  const int k4 = begin + (end - begin) / 4 * 4, stride = TEAM * 4;
  int i = begin + lane * 4;
  // Four loads of weights in flight per work-item before any is used: one at a time, a GPU's
  // few resident teams per compute unit kept too few bytes in flight to stream the weights.
  for (; i + 3 * stride < k4; i += 4 * stride) {
    float4 wv[4], nw[4];
    for (int u = 0; u < 4; ++u) wv[u] = wload4(w, i + u * stride);
    for (int u = 0; u < 4; ++u) {
      nw[u] = (float4)(1.0f);
      if (norm_mode == 1) nw[u] = vload4(0, (__global const float*)nb + i + u * stride);
      if (norm_mode == 2) nw[u] = wload4((__global const wstore*)nb, i + u * stride);
    }
    for (int r = 0; r < rows; ++r) {
      float sum = 0.0f;
      for (int u = 0; u < 4; ++u) {
        float4 xv = vload4(0, x + (long)r * k + i + u * stride);
        if (norm_mode) xv *= nw[u];
        sum += dot(wv[u], xv);
      }
      acc[r] += sum;
    }
  }
  for (; i < k4; i += stride) {
    const float4 wv = wload4(w, i);
    float4 nw = (float4)(1.0f);
    if (norm_mode == 1) nw = vload4(0, (__global const float*)nb + i);
    if (norm_mode == 2) nw = wload4((__global const wstore*)nb, i);
    for (int r = 0; r < rows; ++r) {
      float4 xv = vload4(0, x + (long)r * k + i);
      if (norm_mode) xv *= nw;
      acc[r] += dot(wv, xv);
    }
  }
  for (int j = k4 + lane; j < end; j += TEAM) {
    const float wv = wload(w, j);
    const float nw = norm_mode ? either(nb, norm_mode == 1, j) : 1.0f;
    for (int r = 0; r < rows; ++r) {
      const float xv = x[(long)r * k + j];
      acc[r] += wv * (norm_mode ? nw * xv : xv);
    }
  }
}

// team_dot of two weight rows (gate and up) against the same activations in one pass: each
// normalised activation is made once, and the loads of both rows are in flight together.
inline void team_dot2(__global const wstore* w0, __global const wstore* w1, __global const float* x,
                      int rows, int k, __global const char* nb, int norm_mode, float* acc0,
                      float* acc1) {
  const int lane = get_local_id(0) % TEAM;
  const int k4 = k / 4 * 4, stride = TEAM * 4;
  int i = lane * 4;
  for (; i + 3 * stride < k4; i += 4 * stride) {
    float4 a[4], b[4], nw[4];
    for (int u = 0; u < 4; ++u) {
      a[u] = wload4(w0, i + u * stride);
      b[u] = wload4(w1, i + u * stride);
    }
    for (int u = 0; u < 4; ++u) {
      nw[u] = (float4)(1.0f);
      if (norm_mode == 1) nw[u] = vload4(0, (__global const float*)nb + i + u * stride);
      if (norm_mode == 2) nw[u] = wload4((__global const wstore*)nb, i + u * stride);
    }
    for (int r = 0; r < rows; ++r) {
      float s0 = 0.0f, s1 = 0.0f;
      for (int u = 0; u < 4; ++u) {
        float4 xv = vload4(0, x + (long)r * k + i + u * stride);
        if (norm_mode) xv *= nw[u];
        s0 += dot(a[u], xv);
        s1 += dot(b[u], xv);
      }
      acc0[r] += s0;
      acc1[r] += s1;
    }
  }
  for (; i < k4; i += stride) {
    const float4 a = wload4(w0, i), b = wload4(w1, i);
    float4 nw = (float4)(1.0f);
    if (norm_mode == 1) nw = vload4(0, (__global const float*)nb + i);
    if (norm_mode == 2) nw = wload4((__global const wstore*)nb, i);
    for (int r = 0; r < rows; ++r) {
      float4 xv = vload4(0, x + (long)r * k + i);
      if (norm_mode) xv *= nw;
      acc0[r] += dot(a, xv);
      acc1[r] += dot(b, xv);
    }
  }
  for (int j = k4 + lane; j < k; j += TEAM) {
    const float a = wload(w0, j), b = wload(w1, j);
    const float nw = norm_mode ? either(nb, norm_mode == 1, j) : 1.0f;
    for (int r = 0; r < rows; ++r) {
      const float xv = x[(long)r * k + j];
      const float xn = norm_mode ? nw * xv : xv;
      acc0[r] += a * xn;
      acc1[r] += b * xn;
    }
  }
}

// Sums acc[0..rows) over each team's work-items through tmp (rows * n floats at `tmp`); the
// team's first work-item ends with the totals. Every work-item must call it.
inline void team_reduce(__local float* tmp, float* acc, int rows) {
#if defined(NV_WARP_SHUFFLE)
  // A team is a warp: its sums meet in registers, and every lane ends with the totals.
  for (int r = 0; r < rows; ++r) acc[r] = warp_sum(acc[r]);
  return;
#endif
  const int lid = get_local_id(0), n = get_local_size(0), lane = lid % TEAM;
  for (int r = 0; r < rows; ++r) tmp[r * n + lid] = acc[r];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = TEAM / 2; s > 0; s >>= 1) {
    if (lane < s) {
      for (int r = 0; r < rows; ++r) tmp[r * n + lid] += tmp[r * n + lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int r = 0; r < rows; ++r) acc[r] = tmp[r * n + lid];
  barrier(CLK_LOCAL_MEM_FENCE);  // tmp is reused
}

// out (= or, with `accumulate`, +=) x @ w^T + bias for up to four rows of x.
// `split` teams per output feature, each over a slice of the columns, when the rows are long (a
// down projection's 4,864 columns were ten dependent round trips to memory for one team).
__kernel void linear_rows(MEM_PARAMS, ulong x_t, ulong w_t, ulong b_t, int has_bias, ulong out_t,
                          int rows, int k, int o, int accumulate, int split, __local float* tmp) {
  const int lid = get_local_id(0), n = get_local_size(0);
  // One group of features per work-group, no loop: PoCL runs barriers inside a loop markedly
  // slower (the fused kernels below loop, to compute their norm once per work-group).
  const int team = lid / TEAM, part = team % split;
  const long col = (long)get_group_id(0) * (n / TEAM / split) + team / split;
  const bool active = col < o;
  const int chunk = (k / split + 3) / 4 * 4;
  const int begin = min(k, part * chunk), end = part == split - 1 ? k : min(k, begin + chunk);
  __global const float* x = AT(const float, x_t);
  float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  if (active) {
    team_dot(AT(const wstore, w_t) + col * k, x, rows, k, begin, end, PTR(b_t), 0, acc);
  }
  team_reduce(tmp, acc, rows);
  // The slices' sums meet in local memory (tmp is free again here).
  if (split > 1 && lid % TEAM == 0) {
    for (int r = 0; r < rows; ++r) tmp[team * 4 + r] = acc[r];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (split > 1 && part == 0) {
    for (int r = 0; r < rows; ++r) {
      for (int p = 1; p < split; ++p) acc[r] += tmp[(team + p) * 4 + r];
    }
  }
  if (active && part == 0 && lid % TEAM == 0) {
    const float bias = has_bias ? wload(AT(const wstore, b_t), col) : 0.0f;
    for (int r = 0; r < rows; ++r) {
      __global float* dst = AT(float, out_t) + (long)r * o + col;
      *dst = accumulate ? *dst + (acc[r] + bias) : acc[r] + bias;
    }
  }
}

// linear_group for up to four rows: the q, k and v products (segments of o0, o1, o2 features)
// of one input in one launch, the input RMS-normalised on the way when norm_mode is set. Bit
// `i` of bias_mask says segment i has a bias; bias_f32: biases are float32 (else weight type).
__kernel void linear_group_rows(MEM_PARAMS, ulong x_t, ulong w0_t, ulong w1_t, ulong w2_t,
                                ulong b0_t, ulong b1_t, ulong b2_t, ulong y0_t, ulong y1_t,
                                ulong y2_t, int o0, int o1, int o2, int bias_mask, int bias_f32,
                                ulong nw_t, int norm_mode, float eps, int rows, int k,
                                __local float* tmp) {
  const int lid = get_local_id(0), n = get_local_size(0);
  const long total = (long)o0 + o1 + o2, step = (long)get_num_groups(0) * (n / TEAM);
  __global const float* x = AT(const float, x_t);
  float scale[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  bool scaled = false;
  for (long f0 = (long)get_group_id(0) * (n / TEAM); f0 < total; f0 += step) {
    long row = f0 + lid / TEAM;
    const bool active = row < total;
    int seg = 0;
    if (row >= o0) {
      row -= o0;
      seg = 1;
      if (row >= o1) {
        row -= o1;
        seg = 2;
      }
    }
    const ulong w_t = seg == 0 ? w0_t : (seg == 1 ? w1_t : w2_t);
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (active)
      team_dot(AT(const wstore, w_t) + row * k, x, rows, k, 0, k, PTR(nw_t), norm_mode, acc);
    // The norm's scales once per work-group, after its first products are under way.
    if (norm_mode && !scaled) norm_scales(x, rows, k, eps, tmp, scale);
    scaled = true;
    team_reduce(tmp, acc, rows);
    if (active && lid % TEAM == 0) {
      const ulong b_t = seg == 0 ? b0_t : (seg == 1 ? b1_t : b2_t);
      const ulong y_t = seg == 0 ? y0_t : (seg == 1 ? y1_t : y2_t);
      const int o = seg == 0 ? o0 : (seg == 1 ? o1 : o2);
      const float bias = (bias_mask >> seg) & 1 ? either(PTR(b_t), bias_f32, row) : 0.0f;
      for (int r = 0; r < rows; ++r) AT(float, y_t)[(long)r * o + row] = acc[r] * scale[r] + bias;
    }
  }
}

// linear_swiglu for up to four rows: out = silu(x' @ gate^T + gate_bias) * (x' @ up^T + up_bias),
// x' the RMS-normalised input when norm_mode is set; each team takes one feature of both.
__kernel void linear_swiglu_rows(MEM_PARAMS, ulong x_t, ulong g_t, ulong u_t, ulong gb_t,
                                 ulong ub_t, int bias_mask, int bias_f32, ulong out_t, ulong nw_t,
                                 int norm_mode, float eps, int rows, int k, int o,
                                 __local float* tmp) {
  const int lid = get_local_id(0), n = get_local_size(0);
  const long step = (long)get_num_groups(0) * (n / TEAM);
  __global const float* x = AT(const float, x_t);
  float scale[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  bool scaled = false;
  for (long f0 = (long)get_group_id(0) * (n / TEAM); f0 < o; f0 += step) {
    const long col = f0 + lid / TEAM;
    const bool active = col < o;
    float g[4] = {0.0f, 0.0f, 0.0f, 0.0f}, u[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (active) {
      team_dot2(AT(const wstore, g_t) + col * k, AT(const wstore, u_t) + col * k, x, rows, k,
                PTR(nw_t), norm_mode, g, u);
    }
    if (norm_mode && !scaled) norm_scales(x, rows, k, eps, tmp, scale);  // as linear_group_rows
    scaled = true;
    team_reduce(tmp, g, rows);
    team_reduce(tmp, u, rows);
    if (active && lid % TEAM == 0) {
      const float gbias = bias_mask & 1 ? either(PTR(gb_t), bias_f32, col) : 0.0f;
      const float ubias = bias_mask & 2 ? either(PTR(ub_t), bias_f32, col) : 0.0f;
      for (int r = 0; r < rows; ++r) {
        const float gv = g[r] * scale[r] + gbias;
        AT(float, out_t)[(long)r * o + col] = gv / (1.0f + exp(-gv)) * (u[r] * scale[r] + ubias);
      }
    }
  }
}

// Many rows: 16 x 16 output tiles, both operands staged through local memory.
#define TILE 16
__kernel void linear_tiled(MEM_PARAMS, ulong x_t, ulong w_t, ulong b_t, int has_bias, ulong out_t,
                           int rows, int k, int o, int accumulate) {
  __local float xs[TILE][TILE + 1];
  __local float ws[TILE][TILE + 1];
  const int tc = get_local_id(0), tr = get_local_id(1);
  const int col = get_group_id(0) * TILE + tc, row = get_group_id(1) * TILE + tr;
  __global const float* x = AT(const float, x_t);
  __global const wstore* w = AT(const wstore, w_t);
  const int wrow = get_group_id(0) * TILE + tr;  // the weight row this thread stages
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    xs[tr][tc] = row < rows && k0 + tc < k ? x[(long)row * k + k0 + tc] : 0.0f;
    ws[tr][tc] = wrow < o && k0 + tc < k ? wload(w, (long)wrow * k + k0 + tc) : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = 0; i < TILE; ++i) acc += xs[tr][i] * ws[tc][i];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < rows && col < o) {
    const float bias = has_bias ? wload(AT(const wstore, b_t), col) : 0.0f;
    __global float* dst = AT(float, out_t) + (long)row * o + col;
    *dst = accumulate ? *dst + (acc + bias) : acc + bias;
  }
}

// One work-item per (token, head, i < half).
__kernel void rope(MEM_PARAMS, ulong x_t, ulong pos_t, ulong f_t, long tokens, int heads,
                   int half_dim, float scaling) {
  const long i = get_global_id(0);
  if (i >= tokens * heads * half_dim) return;
  const int j = i % half_dim;
  const long th = i / half_dim, n = th / heads;
  const float freq = AT(const float, f_t)[j];
  const float angle = (float)AT(const int, pos_t)[n] * freq;
  const float scale = freq == 0.0f ? 1.0f : scaling;  // 0: a pair that does not rotate
  float c;
  const float s = sincos(angle, &c) * scale;
  c *= scale;
  __global float* v = AT(float, x_t) + th * 2 * half_dim;
  const float a = v[j], b = v[j + half_dim];
  v[j] = a * c - b * s;
  v[j + half_dim] = b * c + a * s;
}

// One head's vector (dim <= 256) into `vals` in local memory, RMS-normalised with weight `w`
// when has_norm (Qwen3's q/k norm) and rotated by RoPE at position `pos`. Every work-item of the
// work-group must call it; tmp: get_local_size(0) floats.
inline void head_rope(__local float* vals, __global const float* src, int has_norm,
                      __global const wstore* w, float eps, float pos,
                      __global const float* inv_freq, float scaling, int dim, __local float* tmp) {
  const int lid = get_local_id(0), nt = get_local_size(0);
  float ss = 0.0f;
  for (int i = lid; i < dim; i += nt) {
    vals[i] = src[i];
    ss += vals[i] * vals[i];
  }
  ss = group_sum(tmp, ss);  // its barriers also publish vals[]
  if (has_norm) {
    const float r = rsqrt(ss / dim + eps);
    for (int i = lid; i < dim; i += nt) vals[i] = wload(w, i) * (vals[i] * r);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const int half_dim = dim / 2;
  float out[8];  // dim <= 256 with >= 32 threads
  int m = 0;
  for (int i = lid; i < dim; i += nt, ++m) {
    const int j = i < half_dim ? i : i - half_dim;
    float c;
    const float scale = inv_freq[j] == 0.0f ? 1.0f : scaling;  // 0: a pair that does not rotate
    const float sn = sincos(pos * inv_freq[j], &c) * scale;
    c *= scale;
    out[m] = i < half_dim ? vals[i] * c - vals[i + half_dim] * sn
                          : vals[i] * c + vals[i - half_dim] * sn;
  }
  barrier(CLK_LOCAL_MEM_FENCE);  // rotated in place: every read above comes first
  m = 0;
  for (int i = lid; i < dim; i += nt, ++m) vals[i] = out[m];
  barrier(CLK_LOCAL_MEM_FENCE);
}

// head_rope for a query head and the new key at once (the same angles), with the new value
// copied beside them: q, k and v are loaded together, so the work-group waits for memory once
// rather than once per vector. Ends with a barrier; tmp: get_local_size(0) floats.
inline void qk_rope(__local float* qs, __local float* ks, __local float* vs,
                    __global const float* q, __global const float* k, __global const float* v,
                    int has_norm, __global const wstore* qw, __global const wstore* kw, float eps,
                    float pos, __global const float* inv_freq, float scaling, int dim,
                    __local float* tmp) {
  const int lid = get_local_id(0), nt = get_local_size(0);
  float ssq = 0.0f, ssk = 0.0f;
  for (int i = lid; i < dim; i += nt) {
    const float qv = q[i], kv = k[i];
    qs[i] = qv;
    ks[i] = kv;
    vs[i] = v[i];
    ssq += qv * qv;
    ssk += kv * kv;
  }
  if (has_norm) {
    const float rq = rsqrt(group_sum(tmp, ssq) / dim + eps);
    const float rk = rsqrt(group_sum(tmp, ssk) / dim + eps);  // its barriers publish qs, ks
    for (int i = lid; i < dim; i += nt) {
      qs[i] = wload(qw, i) * (qs[i] * rq);
      ks[i] = wload(kw, i) * (ks[i] * rk);
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const int half_dim = dim / 2;
  float oq[8], ok[8];  // dim <= 256 with >= 32 threads
  int m = 0;
  for (int i = lid; i < dim; i += nt, ++m) {
    const int j = i < half_dim ? i : i - half_dim;
    float c;
    const float scale = inv_freq[j] == 0.0f ? 1.0f : scaling;  // 0: a pair that does not rotate
    const float sn = sincos(pos * inv_freq[j], &c) * scale;
    c *= scale;
    oq[m] = i < half_dim ? qs[i] * c - qs[i + half_dim] * sn : qs[i] * c + qs[i - half_dim] * sn;
    ok[m] = i < half_dim ? ks[i] * c - ks[i + half_dim] * sn : ks[i] * c + ks[i - half_dim] * sn;
  }
  barrier(CLK_LOCAL_MEM_FENCE);  // rotated in place: every read above comes first
  m = 0;
  for (int i = lid; i < dim; i += nt, ++m) {
    qs[i] = oq[m];
    ks[i] = ok[m];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

// A step's attention inputs in one launch: one work-group per (token, head) over q heads then kv
// heads: the optional per-head RMSNorm (Qwen3), RoPE, and for kv heads the cache writes of k and
// v at start + s (start from device memory when has_dev). head_dim <= 256.
__kernel void rope_store(MEM_PARAMS, ulong q_t, ulong k_t, ulong v_t, ulong qn_t, ulong kn_t,
                         int has_norm, float eps, ulong pos_t, ulong f_t, float scaling, ulong kc_t,
                         ulong vc_t, int seq, int heads, int kv_heads, int dim, long cap,
                         long start, ulong st_t, int has_dev, __local float* tmp) {
  __local float vals[256];
  const long n = get_group_id(1);
  const int head = get_group_id(0);
  const int lid = get_local_id(0), nt = get_local_size(0);
  const bool is_q = head < heads;
  const int h = is_q ? head : head - heads;
  __global const float* src = is_q ? AT(const float, q_t) + (n * heads + h) * dim
                                   : AT(const float, k_t) + (n * kv_heads + h) * dim;
  __global const wstore* w = is_q ? AT(const wstore, qn_t) : AT(const wstore, kn_t);
  head_rope(vals, src, has_norm, w, eps, (float)AT(const int, pos_t)[n], AT(const float, f_t),
            scaling, dim, tmp);
  if (has_dev) start = AT(const int, st_t)[0];
  const long b = n / seq, s = n % seq;
  __global float* dst = is_q ? AT(float, q_t) + (n * heads + h) * dim
                             : AT(float, kc_t) + ((b * kv_heads + h) * cap + start + s) * dim;
  for (int i = lid; i < dim; i += nt) dst[i] = vals[i];
  if (!is_q) {
    __global const float* vs = AT(const float, v_t) + (n * kv_heads + h) * dim;
    __global float* vd = AT(float, vc_t) + ((b * kv_heads + h) * cap + start + s) * dim;
    for (int i = lid; i < dim; i += nt) vd[i] = vs[i];
  }
}

__kernel void swiglu(MEM_PARAMS, ulong g_t, ulong u_t, ulong out_t, long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const float g = AT(const float, g_t)[i];
  AT(float, out_t)[i] = g / (1.0f + exp(-g)) * AT(const float, u_t)[i];
}

// GELU's tanh approximation (gate) * up, as g * sigmoid(2 sqrt(2/pi) (g + 0.044715 g^3)).
__kernel void geglu(MEM_PARAMS, ulong g_t, ulong u_t, ulong out_t, long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  const float g = AT(const float, g_t)[i];
  const float a = g * (1.5957691216057308f + 1.5957691216057308f * 0.044715f * g * g);
  AT(float, out_t)[i] = g / (1.0f + exp(-a)) * AT(const float, u_t)[i];
}

__kernel void scale(MEM_PARAMS, ulong x_t, long n, float factor) {
  const long i = get_global_id(0);
  if (i >= n) return;
  AT(float, x_t)[i] *= factor;
}

__kernel void softcap(MEM_PARAMS, ulong x_t, long n, float cap) {
  const long i = get_global_id(0);
  if (i >= n) return;
  __global float* x = AT(float, x_t);
  x[i] = tanh(x[i] / cap) * cap;
}

__kernel void add(MEM_PARAMS, ulong a_t, ulong b_t, ulong out_t, long n) {
  const long i = get_global_id(0);
  if (i >= n) return;
  AT(float, out_t)[i] = AT(const float, a_t)[i] + AT(const float, b_t)[i];
}

// Mixture-of-experts rows (ops::gather_rows / scatter_add_rows): one work-item per value; an
// index outside the n rows moves nothing (the host-side callers make them in range).
__kernel void gather_rows(MEM_PARAMS, ulong x_t, ulong idx_t, ulong out_t, long m, int d, long n) {
  const long i = get_global_id(0);
  if (i >= m * d) return;
  const long r = AT(const int, idx_t)[i / d];
  if (r < 0 || r >= n) return;
  AT(float, out_t)[i] = AT(const float, x_t)[r * d + i % d];
}

__kernel void scatter_add_rows(MEM_PARAMS, ulong y_t, ulong idx_t, ulong w_t, ulong out_t, long m,
                               int d, long n) {
  const long i = get_global_id(0);
  if (i >= m * d) return;
  const long r = AT(const int, idx_t)[i / d];
  if (r < 0 || r >= n) return;
  AT(float, out_t)[r * d + i % d] += AT(const float, y_t)[i] * AT(const float, w_t)[i / d];
}

// src [B, S, H, D] -> cache [B, H, cap, D] at start + s.
// The start position comes from device memory when has_dev (replayed steps), else from `start`.
__kernel void store_kv(MEM_PARAMS, ulong src_t, ulong c_t, long n, int seq, int heads, int dim,
                       long cap, long start, ulong st_t, int has_dev) {
  const long i = get_global_id(0);
  if (i >= n) return;
  if (has_dev) start = AT(const int, st_t)[0];
  const int d = i % dim;
  const int h = (i / dim) % heads;
  const long s = (i / ((long)dim * heads)) % seq;
  const long b = i / ((long)dim * heads * seq);
  AT(float, c_t)[((b * heads + h) * cap + start + s) * dim + d] = AT(const float, src_t)[i];
}

// The first key a query at cache index `at` sees under a sliding window (ops::first_visible_key).
inline long first_visible_key(long at, long window) {
  return window > 0 && at >= window ? at - window + 1 : 0;
}

// Attention of one query, q in local memory, over keys [first, limit] of one kv head (kc, vc: its
// cache rows): scores into `sc` (global scratch, keys read four floats at a time), the softmax,
// then the value product with the keys split across groups of work-items whose partial sums
// meet in local memory. With `newest`, the key and value at `limit` come from local memory
// (knew, vnew) instead of the cache. tmp: 5 get_local_size(0) floats.
inline void attend(__local const float* qs, __global const float* kc, __global const float* vc,
                   __global const int* mrow, __global float* sc, __global float* out, long first,
                   long limit, int dim, float scale, float softcap, int newest,
                   __local const float* knew, __local const float* vnew, __local float* tmp) {
  const int lid = get_local_id(0), n = get_local_size(0);
  __local float* part = tmp + n;  // [4 n / dim][dim] partial value sums
  const int dim4 = dim / 4 * 4;
  float m = -INFINITY;
  for (long t = first + lid; t <= limit; t += n) {
    float score = -INFINITY;
    if (mrow[t] != 0) {
      float dsum = 0.0f;
      if (newest && t == limit) {
        for (int d = 0; d < dim4; d += 4) dsum += dot(vload4(0, qs + d), vload4(0, knew + d));
        for (int d = dim4; d < dim; ++d) dsum += qs[d] * knew[d];
      } else {
        __global const float* kr = kc + t * dim;
        for (int d = 0; d < dim4; d += 4) dsum += dot(vload4(0, qs + d), vload4(0, kr + d));
        for (int d = dim4; d < dim; ++d) dsum += qs[d] * kr[d];
      }
      score = dsum * scale;
      if (softcap > 0.0f) score = tanh(score / softcap) * softcap;  // Gemma 2
    }
    sc[t] = score;
    m = fmax(m, score);
  }
  m = group_max(tmp, m);
  float l = 0.0f;
  for (long t = first + lid; t <= limit; t += n) {
    const float p = sc[t] == -INFINITY ? 0.0f : exp(sc[t] - m);
    sc[t] = p;
    l += p;
  }
  barrier(CLK_GLOBAL_MEM_FENCE);  // every work-item's probabilities before anyone reads them all
  l = group_sum(tmp, l);
  const float inv = l > 0.0f ? 1.0f / l : 0.0f;  // a query that sees no key gets zeros
  const long last = newest ? limit - 1 : limit;  // the last key read from the cache
  if (dim % 4 == 0 && 4 * n / dim >= 2) {
    // Each work-item takes four adjacent dimensions of every groups-th key, eight keys in
    // flight (the last batch predicated): the keys are walked by 4n / dim groups at once, and
    // each batch is one round trip to memory (with two keys at a time, a decode step over a few
    // hundred positions was a chain of ~25 dependent loads per work-item).
    const int groups = 4 * n / dim, cols = dim / 4;
    const int g = lid / cols, c = lid % cols;
    if (g < groups) {
      float4 acc0 = (float4)(0.0f), acc1 = (float4)(0.0f);
      for (long t0 = first + g; t0 <= last; t0 += ATTN_KEYS * groups) {
        float p[ATTN_KEYS];
        float4 vv[ATTN_KEYS];
#pragma unroll
        for (int u = 0; u < ATTN_KEYS; ++u) {
          const long t = t0 + u * groups;
          p[u] = t <= last ? sc[t] : 0.0f;
          vv[u] = t <= last ? vload4(c, vc + t * dim) : (float4)(0.0f);
        }
#pragma unroll
        for (int u = 0; u < ATTN_KEYS; u += 2) {
          acc0 += p[u] * vv[u];
          acc1 += p[u + 1] * vv[u + 1];
        }
      }
      if (newest && g == 0) acc0 += sc[limit] * vload4(c, vnew);
      vstore4(acc0 + acc1, c, part + g * dim);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = lid; e < dim; e += n) {
      float sum = 0.0f;
      for (int j = 0; j < groups; ++j) sum += part[j * dim + e];
      out[e] = sum * inv;
    }
  } else {
    for (int d = lid; d < dim; d += n) {
      float acc = 0.0f;
      for (long t = first; t <= last; ++t) acc += sc[t] * vc[t * dim + d];
      if (newest) acc += sc[limit] * vnew[d];
      out[d] = acc * inv;
    }
  }
}

// One work-group per (b, s, h) query; local memory 5 n + dim floats (attend's, then q).
__kernel void attention(MEM_PARAMS, ulong q_t, ulong k_t, ulong v_t, ulong m_t, ulong out_t,
                        ulong sc_t, int seq, int heads, int kv_heads, int dim, long cap, long past,
                        int mask_width, long keys, float scale, ulong p_t, int has_dev,
                        long window, float softcap, __local float* tmp) {
  if (has_dev) past = AT(const int, p_t)[0];
  const long item = get_group_id(0);  // (b * seq + s) * heads + h
  const int h = item % heads;
  const long bs = item / heads;
  const long s = bs % seq, b = bs / seq;
  const int kh = h / (heads / kv_heads);
  const int lid = get_local_id(0), n = get_local_size(0);
  __local float* qs = tmp + 5 * n;  // [dim]
  __global const float* q = AT(const float, q_t) + item * dim;
  const long base = (b * kv_heads + kh) * cap;
  for (int d = lid; d < dim; d += n) qs[d] = q[d];
  barrier(CLK_LOCAL_MEM_FENCE);
  attend(qs, AT(const float, k_t) + base * dim, AT(const float, v_t) + base * dim,
         AT(const int, m_t) + b * mask_width, AT(float, sc_t) + item * keys,
         AT(float, out_t) + item * dim, first_visible_key(past + s, window), past + s, dim, scale,
         softcap, 0, qs, qs, tmp);
}

// rope_store and attention of one decode token per row in one launch: one work-group per
// (b, h) q head rotates its q, and the new k of its kv head, in local memory and attends over
// the cached keys plus that new one (read from local memory: the cache write, by the first q
// head of each kv head, is not visible to the other work-groups within the launch).
__kernel void rope_attention(MEM_PARAMS, ulong q_t, ulong k_t, ulong v_t, ulong qn_t, ulong kn_t,
                             int has_norm, float eps, ulong pos_t, ulong f_t, float scaling,
                             ulong kc_t, ulong vc_t, ulong m_t, ulong out_t, ulong sc_t, int heads,
                             int kv_heads, int dim, long cap, long past, int mask_width, long keys,
                             float scale, ulong p_t, int has_dev, long window, float softcap,
                             __local float* tmp) {
  __local float qs[256], knew[256], vnew[256];
  if (has_dev) past = AT(const int, p_t)[0];
  const long item = get_group_id(0);  // b * heads + h
  const int h = item % heads;
  const long b = item / heads;
  const int group = heads / kv_heads, kh = h / group;
  const int lid = get_local_id(0), n = get_local_size(0);
  const float pos = (float)AT(const int, pos_t)[b];
  __global const float* freqs = AT(const float, f_t);
  qk_rope(qs, knew, vnew, AT(const float, q_t) + item * dim,
          AT(const float, k_t) + (b * kv_heads + kh) * dim,
          AT(const float, v_t) + (b * kv_heads + kh) * dim, has_norm, AT(const wstore, qn_t),
          AT(const wstore, kn_t), eps, pos, freqs, scaling, dim, tmp);
  const long base = (b * kv_heads + kh) * cap;
  __global float* kc = AT(float, kc_t) + base * dim;
  __global float* vc = AT(float, vc_t) + base * dim;
  if (h % group == 0) {
    for (int i = lid; i < dim; i += n) {
      kc[past * dim + i] = knew[i];
      vc[past * dim + i] = vnew[i];
    }
  }
  attend(qs, kc, vc, AT(const int, m_t) + b * mask_width, AT(float, sc_t) + item * keys,
         AT(float, out_t) + item * dim, first_visible_key(past, window), past, dim, scale, softcap,
         1, knew, vnew, tmp);
}

__kernel void mask_column(MEM_PARAMS, ulong m_t, ulong v_t, ulong i_t, long rows, long width) {
  const long r = get_global_id(0);
  const int col = AT(const int, i_t)[0];
  if (r < rows && col >= 0 && col < width) {
    AT(int, m_t)[r * width + col] = AT(const int, v_t)[r];
  }
}

// a / b rounded as IEEE division rounds it (the host's and torch's `/`): OpenCL lets a float
// `/` be 2.5 ulp off, and NVIDIA's driver is (also when the quotient is taken in double and
// rounded: its compiler narrows that back to the float division). So from the driver's
// quotient, steps of one ulp while a neighbour's residual a - q b (fma, exact near the
// quotient) is smaller: a quotient of two floats never lies halfway between two floats, so the
// one with the smallest residual is the rounded quotient. Inf and NaN stop at once.
inline float divide_rounded(float a, float b) {
  float q = a / b;
  for (int i = 0; i < 4; ++i) {
    const float r = fabs(fma(-q, b, a));
    const float up = nextafter(q, INFINITY), down = nextafter(q, -INFINITY);
    if (fabs(fma(-up, b, a)) < r) {
      q = up;
    } else if (fabs(fma(-down, b, a)) < r) {
      q = down;
    } else {
      break;
    }
  }
  return q;
}

// transformers' repetition penalty on each row's listed (distinct) ids, in place: a work-item
// per listed id; padding (-1) and ids outside the row are skipped.
__kernel void repetition_penalty(MEM_PARAMS, ulong x_t, ulong ids_t, long rows, long vocab,
                                 long m, float penalty) {
  const long j = get_global_id(0), r = get_global_id(1);
  if (j >= m || r >= rows) return;
  const long id = AT(const long, ids_t)[r * m + j];
  if (id < 0 || id >= vocab) return;
  __global float* s = AT(float, x_t) + r * vocab + id;
  *s = *s < 0.0f ? *s * penalty : divide_rounded(*s, penalty);
}

// Whether candidate (v, vi) beats (b, bi) under torch.argmax's rule: NaN beats any number, the
// larger value wins, ties go to the lower index; an index < 0 is no candidate.
inline bool argmax_beats(float v, long vi, float b, long bi) {
  if (vi < 0) return false;
  if (bi < 0) return true;
  if (isnan(v) || isnan(b)) return isnan(v) && (!isnan(b) || vi < bi);
  return v > b || (v == b && vi < bi);
}

// The work-group's best candidate, left in vals[0] / idx[0].
inline void argmax_group(__local float* vals, __local long* idx, float best, long bi) {
  const int lid = get_local_id(0), n = get_local_size(0);
  vals[lid] = best;
  idx[lid] = bi;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = n / 2; s > 0; s >>= 1) {
    if (lid < s && argmax_beats(vals[lid + s], idx[lid + s], vals[lid], idx[lid])) {
      vals[lid] = vals[lid + s];
      idx[lid] = idx[lid + s];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// Argmax in two passes, so that a 150k-column row is read by many work-groups: work-group
// (part, row) takes columns [part * span, (part + 1) * span) and leaves its candidate in
// (pv, pi)[row * parts + part]; argmax_final picks each row's winner among them.
__kernel void argmax_parts(MEM_PARAMS, ulong x_t, ulong pv_t, ulong pi_t, long cols, long span,
                           __local float* vals, __local long* idx) {
  const long part = get_group_id(0), row = get_group_id(1), parts = get_num_groups(0);
  const int lid = get_local_id(0), n = get_local_size(0);
  __global const float* x = AT(const float, x_t) + row * cols;
  const long end = min(cols, (part + 1) * span);
  float best = 0.0f;
  long bi = -1;
  for (long c = part * span + lid; c < end; c += n) {
    const float v = x[c];
    if (argmax_beats(v, c, best, bi)) {
      best = v;
      bi = c;
    }
  }
  argmax_group(vals, idx, best, bi);
  if (lid == 0) {
    AT(float, pv_t)[row * parts + part] = vals[0];
    AT(long, pi_t)[row * parts + part] = idx[0];
  }
}

__kernel void argmax_final(MEM_PARAMS, ulong pv_t, ulong pi_t, ulong out_t, int parts,
                           __local float* vals, __local long* idx) {
  const long row = get_group_id(0);
  const int lid = get_local_id(0), n = get_local_size(0);
  __global const float* pv = AT(const float, pv_t) + row * parts;
  __global const long* pi = AT(const long, pi_t) + row * parts;
  float best = 0.0f;
  long bi = -1;
  for (int j = lid; j < parts; j += n) {
    if (argmax_beats(pv[j], pi[j], best, bi)) {
      best = pv[j];
      bi = pi[j];
    }
  }
  argmax_group(vals, idx, best, bi);
  if (lid == 0) AT(long, out_t)[row] = idx[0];
}
)CLC";

}  // namespace anvil::opencl
