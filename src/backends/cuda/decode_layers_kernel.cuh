// The one-launch decode kernel itself (decode_layers.cu): a block's walk through every layer's
// five phases, its rows' epilogues (biases, residual adds, SwiGLU / GeGLU) and the phases'
// hand-offs. Included by decode_layers.cu only.
#pragma once

#include "backends/cuda/decode_layers_attention.cuh"
#include "backends/cuda/decode_layers_staging.cuh"
#include "backends/cuda/decode_layers_stream.cuh"

namespace anvil::cuda {
namespace {

// ---- The kernel ------------------------------------------------------------------------

template <class T>
__device__ __forceinline__ float bias_at(const void* bias, int row) {
  return bias ? to_float(static_cast<const T*>(bias)[row]) : 0.0f;
}

// What the thread owning row i of the block's slices keeps in registers: the residual's row
// (the o and down slices are the same rows of the hidden size) and the layer's biases of its
// rows, loaded a layer ahead so no epilogue waits on memory.
struct RowState {
  float resid = 0.0f, b_qkv = 0.0f, b_o = 0.0f, b_gate = 0.0f, b_up = 0.0f, b_down = 0.0f;
};

template <class T>
__device__ void load_row_biases(const Params& p, const Shared& sh, const LayerPointers& L,
                                RowState& st) {
  const int t = static_cast<int>(threadIdx.x);
  const int nq = p.heads * p.dim, nk = p.kv_heads * p.dim;
  int r = sh.slices[2 * kQkv] + t;
  if (r < sh.slices[2 * kQkv + 1]) {
    st.b_qkv = r < nq ? bias_at<T>(L.bq, r)
                      : (r < nq + nk ? bias_at<T>(L.bk, r - nq) : bias_at<T>(L.bv, r - nq - nk));
  }
  r = sh.slices[2 * kOut] + t;
  if (r < sh.slices[2 * kOut + 1]) {
    st.b_o = bias_at<T>(L.bo, r);
    st.b_down = bias_at<T>(L.bd, r);
  }
  r = sh.slices[2 * kGateUp] + t;
  if (r < sh.slices[2 * kGateUp + 1]) {
    st.b_gate = bias_at<T>(L.bg, r);
    st.b_up = bias_at<T>(L.bu, r);
  }
}

__device__ __forceinline__ void mark_staged(const Params& p, Pipeline& pl) {
  if (p.timeline && threadIdx.x == 0) pl.staged = global_ns();
}

// The grid barrier ending a phase, with the profile's three numbers when one is kept.
__device__ __forceinline__ void end_phase(const Params& p, Pipeline& pl, int layer, int phase,
                                          bool barrier) {
  unsigned long long* at = nullptr;
  if (p.timeline && threadIdx.x == 0) {
    at =
        p.timeline + (static_cast<long long>(layer) * 5 + phase) * kStamps * gridDim.x + blockIdx.x;
    const unsigned long long now = global_ns();
    at[kDone * gridDim.x] = now;
    at[kWaited * gridDim.x] = pl.waited;
    // A phase without staging or chunks (attention) counts as all work after its release.
    at[kStaged * gridDim.x] = pl.staged ? pl.staged : now;
    at[kFirstReady * gridDim.x] = pl.first_ready ? pl.first_ready : now;
    at[kLastSummed * gridDim.x] = pl.last_summed ? pl.last_summed : now;
    pl.waited = pl.staged = pl.first_ready = pl.last_summed = 0;
  }
  if (barrier) grid_barrier(reinterpret_cast<unsigned long long*>(p.sync), gridDim.x, kThreads);
  if (at) at[kReleased * gridDim.x] = global_ns();
}

// kFlags: phases hand over through the mailboxes (flags mode) instead of grid barriers; a
// kernel of its own, so that each mode gets its own register allocation. kProfile: the kernel
// that ANVIL_CUDA_DECODE_PROFILE runs, with the attention items' stamps. kWide: head sizes up
// to 256, GeGLU, softcapped scores, and the output norms' staging where Params::out_norms
// (Gemma's layers; in the other kernels that staging made them spill registers, and the rest
// cost them 1% of decode). kOlmo (with kWide): OLMo 2's layers, without input norms and with
// whole-projection q/k norms (in Gemma's kernel that code cost Gemma 3 1B 6% of decode).
template <class T, bool kFlags, bool kProfile, bool kWide, bool kOlmo>
__global__ void __launch_bounds__(kBlockThreads, 1)
    decode_layers_kernel(const __grid_constant__ Params p) {
  static_assert(kWide || !kOlmo, "OLMo 2's layers need the wide kernel's output norms");
  extern __shared__ __align__(128) char smem[];
  const Shared sh = carve<kWide>(p, smem);
  const bool out_norms = kWide && p.out_norms;
  const bool plain = kOlmo && p.plain_input;
  Pipeline pl;
  const long long past = p.past_dev ? *p.past_dev : p.past_host;
  const int splits = active_splits(p, past);
  const int items = p.heads * splits;
  compute_slices(p, items, sh.slices);
  if (threadIdx.x == 0) {
    for (int s = 0; s < p.slots; ++s) {
      mbarrier_init(&sh.bars[s]);
      mbarrier_init(&sh.empty[s]);
    }
    mbarrier_init_fence();
    if (kFlags) *sh.flag_base = launch_flag_base(p);
  }
  __syncthreads();
  if (threadIdx.x >= kThreads) {
    produce<T>(p, sh);
    return;
  }
  T* x = static_cast<T*>(p.x);
  const int nq = p.heads * p.dim, nk = p.kv_heads * p.dim;
  const int item0 = first_item(p, items);
  RowState st;
  if (sh.slices[2 * kOut] + static_cast<int>(threadIdx.x) < sh.slices[2 * kOut + 1]) {
    st.resid = to_float(x[sh.slices[2 * kOut] + threadIdx.x]);
  }
  load_row_biases<T>(p, sh, p.layer[0], st);
  copy_norm(sh, p.layer[0].input_norm, p.hidden);
  // Each row's epilogue; it returns the row's value as stored (what flags mode sends). Flags
  // mode still stores every phase's plain outputs, which only barrier mode reads: without them
  // it measured 0.3% slower (docs/perf.md, fifteenth session).
  const auto qkv_row = [&](int row, float s, float) {
    T* out = static_cast<T*>(row < nq ? p.q : (row < nq + nk ? p.k : p.v));
    const T value = from_float<T>(s + st.b_qkv);
    out[row < nq ? row : (row < nq + nk ? row - nq : row - nq - nk)] = value;
    return to_float(value);
  };
  // The product rounded, then (Granite) scaled and rounded again as the scale op does, then
  // added to the residual.
  const auto add_residual = [&](int row, float s, float bias) {
    float out = to_float(from_float<T>(s + bias));
    if (p.residual_scale != 1.0f) out = to_float(from_float<T>(out * p.residual_scale));
    const T sum = from_float<T>(st.resid + out);
    st.resid = to_float(sum);
    x[row] = sum;
    return st.resid;
  };
  // Output norms: the product (rounded, with its bias) goes out as y; the next staging adds it.
  const auto put_y = [&](int row, float s, float bias) {
    const T value = from_float<T>(s + bias);
    static_cast<T*>(p.y)[row] = value;
    return to_float(value);
  };
  const auto o_row = [&](int row, float s, float) {
    return out_norms ? put_y(row, s, st.b_o) : add_residual(row, s, st.b_o);
  };
  const auto down_row = [&](int row, float s, float) {
    return out_norms ? put_y(row, s, st.b_down) : add_residual(row, s, st.b_down);
  };
  const auto swiglu_row = [&](int row, float g, float u) {
    const float gv = to_float(from_float<T>(g + st.b_gate));
    const float uv = to_float(from_float<T>(u + st.b_up));
    const T value = from_float<T>((kWide && p.gelu ? gated<true>(gv) : gated<false>(gv)) * uv);
    static_cast<T*>(p.act)[row] = value;
    return to_float(value);
  };
  constexpr bool mail = kFlags;
  const unsigned base = mail ? *sh.flag_base : 0u;
  // A block with no rows in a phase stages nothing for it: in flags mode nothing waits for
  // its reads, so a word it would read may already carry a later phase's flag.
  const auto has_rows = [&](int phase) { return sh.slices[2 * phase + 1] > sh.slices[2 * phase]; };
  for (int l = 0; l < p.layers; ++l) {
    const LayerPointers& L = p.layer[l];
    const unsigned lf = base + 5u * static_cast<unsigned>(l);  // flags mode: lf + phase
    prefetch_kv<T>(p, L, past, splits);
    // The first layer's input is the previous kernel's x; later ones the last down's words
    // (output norms: the residual after attention and the MLP's output, added here).
    if (out_norms && l > 0 && has_rows(kQkv)) {
      stage_residual<T>(p, sh, static_cast<const T*>(p.x2), mail ? p.mail_x2 : nullptr, lf - 3,
                        mail ? p.mail_y : nullptr, lf - 1, x, mail ? p.mail_x : nullptr, lf - 1,
                        sh.slices[2 * kPhases], sh.slices[2 * kPhases + 1], true, plain);
    } else if (has_rows(kQkv)) {
      stage_normed<T>(p, sh, x, p.hidden, mail && l > 0 ? p.mail_x : nullptr, lf - 1, plain);
    } else {
      async_copy_wait();  // the norm's copy: the next one goes to the same place
    }
    mark_staged(p, pl);
    consume_phase<T>(p, pl, sh, kQkv, qkv_row, mail ? p.mail_qkv : nullptr, lf);
    end_phase(p, pl, l, 0, !mail);
    for (int it = item0; it < items; it += gridDim.x) {
      attention_item<T, kFlags, kProfile, kWide, kOlmo>(
          p, L, it / splits, it % splits, splits, past, sh, lf,
          kProfile && it == item0 ? item_stamps(p, l) : nullptr);
    }
    end_phase(p, pl, l, 1, !mail);
    if (has_rows(kOut) && splits == 1) {
      stage_plain<T>(p, sh, static_cast<const T*>(p.attn), p.heads * p.dim,
                     mail ? p.mail_attn : nullptr, lf + 1);
    } else if (has_rows(kOut)) {
      stage_attention<T, kFlags>(p, sh, splits, lf + 1);
    }
    mark_staged(p, pl);
    MailWord* const residual_mail = out_norms ? p.mail_y : p.mail_x;
    consume_phase<T>(p, pl, sh, kOut, o_row, mail ? residual_mail : nullptr, lf + 2);
    copy_norm(sh, L.post_norm, p.hidden);
    if (out_norms) copy_norm_to(output_norm(p, sh), L.attn_out_norm, p.hidden);
    end_phase(p, pl, l, 2, !mail);
    if (out_norms) {  // every block has gate/up rows (unfit_reason): all of them stage
      stage_residual<T>(p, sh, x, mail && l > 0 ? p.mail_x : nullptr, lf - 1,
                        mail ? p.mail_y : nullptr, lf + 2, static_cast<T*>(p.x2),
                        mail ? p.mail_x2 : nullptr, lf + 2, sh.slices[2 * kOut],
                        sh.slices[2 * kOut + 1], true, plain);
    } else if (has_rows(kGateUp)) {
      stage_normed<T>(p, sh, x, p.hidden, mail ? p.mail_x : nullptr, lf + 2, plain);
    } else {
      async_copy_wait();
    }
    mark_staged(p, pl);
    consume_phase<T>(p, pl, sh, kGateUp, swiglu_row, mail ? p.mail_act : nullptr, lf + 3);
    end_phase(p, pl, l, 3, !mail);
    if (has_rows(kDown)) {
      stage_plain<T>(p, sh, static_cast<const T*>(p.act), p.inter, mail ? p.mail_act : nullptr,
                     lf + 3);
    }
    mark_staged(p, pl);
    consume_phase<T>(p, pl, sh, kDown, down_row, mail ? residual_mail : nullptr, lf + 4);
    if (l + 1 < p.layers) {
      copy_norm(sh, p.layer[l + 1].input_norm, p.hidden);
      load_row_biases<T>(p, sh, p.layer[l + 1], st);
    }
    if (out_norms) copy_norm_to(output_norm(p, sh), L.mlp_out_norm, p.hidden);
    end_phase(p, pl, l, 4, !mail && (l + 1 < p.layers || out_norms));
  }
  // Output norms: the last MLP output, added by the blocks that own the residual's rows.
  if (out_norms && has_rows(kDown)) {
    const unsigned lf = base + 5u * static_cast<unsigned>(p.layers - 1);
    stage_residual<T>(p, sh, static_cast<const T*>(p.x2), mail ? p.mail_x2 : nullptr, lf + 2,
                      mail ? p.mail_y : nullptr, lf + 4, x, nullptr, 0, sh.slices[2 * kDown],
                      sh.slices[2 * kDown + 1], false, plain);
  } else if (out_norms) {
    async_copy_wait();
  }
}

}  // namespace
}  // namespace anvil::cuda
