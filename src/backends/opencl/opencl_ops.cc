// The ops on OpenCL devices: each launcher turns tensors into (buffer, offset) arguments and
// enqueues one kernel of opencl_sources.cc on the device's in-order queue.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "anvil/error.h"
#include "backends/opencl/command_buffer.h"
#include "backends/opencl/opencl_backend.h"
#include "backends/opencl/opencl_runtime.h"
#include "backends/opencl/profile.h"
#include "core/kernels.h"
#include "ops/ops.h"

namespace anvil::opencl {
namespace {

constexpr size_t kGroup = 128;  // work-group size of the reducing kernels (a power of two)
constexpr long long kFeaturesPerGroup = kGroup / 32;       // linear_rows: a team of 32 per feature
constexpr size_t kTeamLocal = 4 * kGroup * sizeof(float);  // the team sums of four rows
constexpr long long kMaxTeamRows = 4;                      // rows the team kernels take
constexpr long long kSplitColumns = 2048;  // linear_rows splits rows at least this long
// rope_attention's work-group: with one work-group per query head, 256 work-items walk the keys
// in half the round trips of 128 (+3% decode on the H200; 512 did not launch there).
constexpr size_t kAttentionGroup = 256;

// Work-groups of a team kernel: one per kFeaturesPerGroup features.
long long feature_groups(long long features) {
  return (features + kFeaturesPerGroup - 1) / kFeaturesPerGroup;
}

// Work-items of a fused team kernel: at most eight work-groups per compute unit, which then walk
// the remaining features, so the norm each computes at its start is computed a few times per
// compute unit rather than once per four features. (The plain product is not capped: PoCL runs
// a work-group loop around barriers more slowly.)
size_t capped_team_items(Device device, long long features) {
  const long long cap = 8LL * devices()[static_cast<size_t>(record_index(device))].compute_units;
  return static_cast<size_t>(std::min(feature_groups(features), cap)) * kGroup;
}

const Tensor& placeholder(Device device) {
  static std::map<int, Tensor> tensors;
  Tensor& t = tensors[static_cast<int>(device.type) * 1024 + device.ordinal()];
  if (!t.defined()) t = Tensor::zeros({4}, DType::i32, device);
  return t;
}

// The build options of a launch's program: the weights' storage type and how many buffer
// arguments the kernels take (built once, not per launch).
const std::string& build_options(DType w, bool many_buffers) {
  static const std::string options[3][2] = {{"-DW_F32 -DMEMS=2", "-DW_F32 -DMEMS=16"},
                                            {"-DW_BF16 -DMEMS=2", "-DW_BF16 -DMEMS=16"},
                                            {"-DW_F16 -DMEMS=2", "-DW_F16 -DMEMS=16"}};
  switch (w) {
    case DType::f32:
      return options[0][many_buffers];
    case DType::bf16:
      return options[1][many_buffers];
    case DType::f16:
      return options[2][many_buffers];
    default:
      throw Error("opencl: weights of dtype " + std::string(dtype_name(w)) + " are not supported");
  }
}

// A kernel launch: the arguments are gathered in order, then set and enqueued by run(). Each
// tensor becomes a tagged offset (its buffer's index among the launch's distinct buffers in the
// top four bits, opencl_sources.cc); the distinct buffers go first, as MEM_PARAMS: two of them
// in the usual build, sixteen in a second build for a launch whose tensors span more pools.
class Launch {
 public:
  Launch(Device device, const char* name, DType weights = DType::f32)
      : device_(device), name_(name), weights_(weights) {
    if (profiling()) start_ = std::chrono::steady_clock::now();
  }

  Launch& tensor(const Tensor& t) {
    const Location loc = locate(t.raw());
    size_t slot = 0;
    while (slot < mems_.size() && mems_[slot] != loc.mem) ++slot;
    if (slot == mems_.size()) {
      if (mems_.size() == kMaxMems) {
        throw Error(std::string("internal error: OpenCL kernel ") + name_ +
                    " given tensors in more than " + std::to_string(kMaxMems) + " buffers");
      }
      mems_.push_back(loc.mem);
    }
    return u64((static_cast<cl_ulong>(slot) << 60) | loc.offset);
  }
  // An optional tensor: offset 0 of the first buffer (never read) when undefined.
  Launch& maybe(const Tensor& t) { return t.defined() ? tensor(t) : u64(0); }
  Launch& i32(long long v) {
    const cl_int x = static_cast<cl_int>(v);
    return value(&x, sizeof x);
  }
  Launch& i64(long long v) {
    const cl_long x = v;
    return value(&x, sizeof x);
  }
  Launch& f32(float v) {
    const cl_float x = v;
    return value(&x, sizeof x);
  }
  Launch& local(size_t bytes) {
    args_.push_back({bytes, true, {}});
    return *this;
  }

  void run(size_t global0, size_t local0, size_t global1 = 1, size_t local1 = 1) {
    if (global0 == 0 || global1 == 0) return;
    const size_t g[2] = {(global0 + local0 - 1) / local0 * local0,
                         (global1 + local1 - 1) / local1 * local1};
    const size_t l[2] = {local0, local1};
    const bool many = mems_.size() > 2;
    cl_kernel k = kernel(device_, name_, build_options(weights_, many));
    Queue& q = queue(device_);
    if (recording(q)) k = kernel_for_recording(q, k);
    const size_t mem_params = many ? kMaxMems : 2;
    if (mems_.empty()) mems_.push_back(placeholder_mem());
    for (size_t i = 0; i < mem_params; ++i) {
      const cl_mem m = mems_[std::min(i, mems_.size() - 1)];
      set(k, static_cast<cl_uint>(i), sizeof m, &m);
    }
    for (size_t i = 0; i < args_.size(); ++i) {
      const Arg& a = args_[i];
      set(k, static_cast<cl_uint>(mem_params + i), a.size, a.local ? nullptr : a.bytes);
    }
    if (recording(q)) {
      record_launch(q, k, g, l);
      return;
    }
    cl_event event = nullptr;
    const auto enqueue_start =
        profiling() ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    cl_event gate = gate_for_launch(q);
    check(clEnqueueNDRangeKernel(q.queue, k, 2, nullptr, g, l, gate ? 1 : 0, gate ? &gate : nullptr,
                                 profiling() ? &event : nullptr),
          name_);
    if (event) {
      const auto end = std::chrono::steady_clock::now();
      const std::chrono::duration<double> host = end - start_, enqueue = end - enqueue_start;
      profile_launch(name_, event, host.count(), enqueue.count());
    }
  }

 private:
  static constexpr size_t kMaxMems = 16;
  struct Arg {
    size_t size;
    bool local;  // local memory of `size` bytes, no value
    unsigned char bytes[8];
  };
  Launch& u64(cl_ulong v) { return value(&v, sizeof v); }
  Launch& value(const void* v, size_t size) {
    Arg a{size, false, {}};
    std::memcpy(a.bytes, v, size);
    args_.push_back(a);
    return *this;
  }
  void set(cl_kernel k, cl_uint index, size_t size, const void* value) {
    check(clSetKernelArg(k, index, size, value), name_);
  }
  // A buffer for a launch with no tensor argument (each launch has at least one; defensive).
  cl_mem placeholder_mem() { return locate(placeholder(device_).raw()).mem; }

  Device device_;
  const char* name_;
  DType weights_;
  std::vector<cl_mem> mems_;
  std::vector<Arg> args_;
  std::chrono::steady_clock::time_point start_;
};

void embedding(const ops::EmbeddingArgs& a) {
  const long long hidden = a.table.size(1), rows = a.ids.numel();
  Launch(a.out.device(), "embedding", a.table.dtype())
      .tensor(a.ids)
      .tensor(a.table)
      .tensor(a.out)
      .i64(hidden)
      .f32(a.scale)
      .run(static_cast<size_t>(hidden), 64, static_cast<size_t>(rows), 1);
}

void rms_norm(const ops::RmsNormArgs& a) {
  Launch(a.x.device(), "rms_norm", a.weight.dtype())
      .tensor(a.x)
      .tensor(a.weight)
      .tensor(a.out)
      .i32(a.x.size(1))
      .f32(a.eps)
      .local(kGroup * sizeof(float))
      .run(static_cast<size_t>(a.x.size(0)) * kGroup, kGroup);
}

// out (= or +=) x @ weight^T + bias.
void product(const ops::LinearArgs& a, bool accumulate) {
  const long long n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  if (a.bias.defined() && a.bias.dtype() != a.weight.dtype()) {
    throw Error("linear: on opencl the bias must have the weight's dtype (" +
                std::string(dtype_name(a.weight.dtype())) + "), got " +
                std::string(dtype_name(a.bias.dtype())));
  }
  const bool rows = n <= kMaxTeamRows;
  Launch l(a.x.device(), rows ? "linear_rows" : "linear_tiled", a.weight.dtype());
  l.tensor(a.x)
      .tensor(a.weight)
      .maybe(a.bias)
      .i32(a.bias.defined())
      .tensor(a.out)
      .i32(n)
      .i32(k)
      .i32(o)
      .i32(accumulate);
  if (rows) {
    // Long rows: a team per quarter of each row (all four teams of a work-group on one feature).
    const long long split = k >= kSplitColumns ? kFeaturesPerGroup : 1;
    l.i32(split)
        .local(kTeamLocal)
        .run(static_cast<size_t>(feature_groups(o * split)) * kGroup, kGroup);
  } else {
    l.run(static_cast<size_t>(o), 16, static_cast<size_t>(n), 16);
  }
}

void linear(const ops::LinearArgs& a) {
  product(a, false);
}

// The output projection with its residual add: the product is added into the residual.
void linear_add(const ops::LinearAddArgs& a) {
  product({a.x, a.weight, a.bias, a.residual}, true);
}

// How a fused kernel reads the norm weight: 0 none, 1 float32, 2 stored as the weights.
int norm_mode(const Tensor& norm_weight) {
  if (!norm_weight.defined()) return 0;
  return norm_weight.dtype() == DType::f32 ? 1 : 2;
}

// Biases of a fused product come as float32 or as the weights' type (ops.cc allows both);
// they must agree with each other.
int biases_f32(std::initializer_list<const Tensor*> biases, const char* op) {
  int f32 = -1;
  for (const Tensor* b : biases) {
    if (!b->defined()) continue;
    const int is = b->dtype() == DType::f32;
    if (f32 >= 0 && f32 != is) throw Error(std::string(op) + ": biases of mixed dtypes on opencl");
    f32 = is;
  }
  return f32 == 1;
}

// The fused products pay where each launch costs the host several microseconds (GPU drivers,
// no graph replay in OpenCL); on CPU devices the composed ops measured faster (PoCL here, default
// model f32 decode 10.2-10.6 tok/s composed against 8.3-9.0 fused), so they run composed there.
// ANVIL_OPENCL_FUSED=1 or 0 forces either way (the tests force 1 on PoCL).
bool fused_products(Device device) {
  static const char* env = std::getenv("ANVIL_OPENCL_FUSED");
  if (env && *env) return env[0] == '1';
  return devices()[static_cast<size_t>(record_index(device))].gpu;
}

// q, k and v (with the input norm) in one launch for decode rows; composed above four rows.
void linear_group(const ops::LinearGroupArgs& a) {
  const long long n = a.x.size(0), k = a.x.size(1);
  const DType w = a.weights[0].dtype();
  // The fused kernel does not store the normalised rows: a caller that keeps them runs composed.
  if (n > kMaxTeamRows || !fused_products(a.x.device()) ||
      (a.keep_normed && norm_mode(a.norm_weight) != 0) ||
      (norm_mode(a.norm_weight) == 2 && a.norm_weight.dtype() != w)) {
    ops::composed_linear_group(a);
    return;
  }
  Launch l(a.x.device(), "linear_group_rows", w);
  l.tensor(a.x);
  for (int i = 0; i < 3; ++i) l.maybe(i < a.count ? a.weights[i] : Tensor());
  int mask = 0;
  for (int i = 0; i < 3; ++i) {
    const bool has = i < a.count && a.biases[i].defined();
    mask |= has ? 1 << i : 0;
    l.maybe(has ? a.biases[i] : Tensor());
  }
  for (int i = 0; i < 3; ++i) l.maybe(i < a.count ? a.outs[i] : Tensor());
  long long total = 0;
  for (int i = 0; i < 3; ++i) {
    const long long o = i < a.count ? a.weights[i].size(0) : 0;
    total += o;
    l.i32(o);
  }
  l.i32(mask)
      .i32(biases_f32({&a.biases[0], &a.biases[1], &a.biases[2]}, "linear_group"))
      .maybe(a.norm_weight)
      .i32(norm_mode(a.norm_weight))
      .f32(a.eps)
      .i32(n)
      .i32(k)
      .local(kTeamLocal)
      .run(capped_team_items(a.x.device(), total), kGroup);
}

// gate, up and SwiGLU (with the norm) in one launch for decode rows; composed above four rows.
void linear_swiglu(const ops::LinearSwigluArgs& a) {
  const long long n = a.x.size(0), k = a.x.size(1), o = a.gate.size(0);
  const DType w = a.gate.dtype();
  if (n > kMaxTeamRows || !fused_products(a.x.device()) ||
      (norm_mode(a.norm_weight) == 2 && a.norm_weight.dtype() != w)) {
    ops::composed_linear_swiglu(a);
    return;
  }
  Launch(a.x.device(), "linear_swiglu_rows", w)
      .tensor(a.x)
      .tensor(a.gate)
      .tensor(a.up)
      .maybe(a.gate_bias)
      .maybe(a.up_bias)
      .i32((a.gate_bias.defined() ? 1 : 0) | (a.up_bias.defined() ? 2 : 0))
      .i32(biases_f32({&a.gate_bias, &a.up_bias}, "linear_swiglu"))
      .tensor(a.out)
      .maybe(a.norm_weight)
      .i32(norm_mode(a.norm_weight))
      .f32(a.eps)
      .i32(n)
      .i32(k)
      .i32(o)
      .local(kTeamLocal)
      .run(capped_team_items(a.x.device(), o), kGroup);
}

void rope_store(const ops::RopeStoreArgs& a) {
  const long long tokens = a.q.size(0), heads = a.q.size(1), dim = a.q.size(2);
  const long long kv_heads = a.k.size(2);
  if (dim > 256) {
    throw Error("rope_store: head_dim " + std::to_string(dim) + " exceeds the OpenCL kernel's 256");
  }
  const bool norm = a.q_norm.defined();
  Launch(a.q.device(), "rope_store", norm ? a.q_norm.dtype() : DType::f32)
      .tensor(a.q)
      .tensor(a.k)
      .tensor(a.v)
      .maybe(a.q_norm)
      .maybe(a.k_norm)
      .i32(norm)
      .f32(a.eps)
      .tensor(a.positions)
      .tensor(a.inv_freq)
      .f32(a.scaling)
      .tensor(a.k_cache)
      .tensor(a.v_cache)
      .i32(a.k.size(1))
      .i32(heads)
      .i32(kv_heads)
      .i32(dim)
      .i64(a.k_cache.size(2))
      .i64(a.start)
      .maybe(a.start_on_device)
      .i32(a.start_on_device.defined())
      .local(kGroup * sizeof(float))
      .run(static_cast<size_t>(heads + kv_heads) * kGroup, kGroup, static_cast<size_t>(tokens), 1);
}

void rope(const ops::RopeArgs& a) {
  const long long tokens = a.x.size(0), heads = a.x.size(1), half = a.x.size(2) / 2;
  Launch(a.x.device(), "rope")
      .tensor(a.x)
      .tensor(a.positions)
      .tensor(a.inv_freq)
      .i64(tokens)
      .i32(heads)
      .i32(half)
      .f32(a.scaling)
      .run(static_cast<size_t>(tokens * heads * half), 64);
}

// out = f(a, b) elementwise, one work-item per element.
void elementwise(const char* kernel_name, const Tensor& a, const Tensor& b, const Tensor& out) {
  Launch(out.device(), kernel_name)
      .tensor(a)
      .tensor(b)
      .tensor(out)
      .i64(out.numel())
      .run(static_cast<size_t>(out.numel()), 64);
}

void swiglu(const ops::SwigluArgs& a) {
  elementwise(a.act == ops::GluActivation::gelu_tanh ? "geglu" : "swiglu", a.gate, a.up, a.out);
}

void scale(const ops::ScaleArgs& a) {
  Launch(a.x.device(), "scale")
      .tensor(a.x)
      .i64(a.x.numel())
      .f32(a.factor)
      .run(static_cast<size_t>(a.x.numel()), 64);
}

void softcap(const ops::SoftcapArgs& a) {
  Launch(a.x.device(), "softcap")
      .tensor(a.x)
      .i64(a.x.numel())
      .f32(a.cap)
      .run(static_cast<size_t>(a.x.numel()), 64);
}
void add(const ops::AddArgs& a) {
  elementwise("add", a.a, a.b, a.out);
}

void gather_rows(const ops::GatherRowsArgs& a) {
  const int64_t m = a.index.size(0), d = a.x.size(1);
  Launch(a.x.device(), "gather_rows")
      .tensor(a.x)
      .tensor(a.index)
      .tensor(a.out)
      .i64(m)
      .i32(static_cast<int>(d))
      .i64(a.x.size(0))
      .run(static_cast<size_t>(m * d), 64);
}

void scatter_add_rows(const ops::ScatterAddRowsArgs& a) {
  const int64_t m = a.y.size(0), d = a.y.size(1);
  Launch(a.y.device(), "scatter_add_rows")
      .tensor(a.y)
      .tensor(a.index)
      .tensor(a.weight)
      .tensor(a.out)
      .i64(m)
      .i32(static_cast<int>(d))
      .i64(a.out.size(0))
      .run(static_cast<size_t>(m * d), 64);
}

void store_kv(const ops::StoreKvArgs& a) {
  Launch(a.src.device(), "store_kv")
      .tensor(a.src)
      .tensor(a.cache)
      .i64(a.src.numel())
      .i32(a.src.size(1))
      .i32(a.src.size(2))
      .i32(a.src.size(3))
      .i64(a.cache.size(2))
      .i64(a.start)
      .maybe(a.start_on_device)
      .i32(a.start_on_device.defined())
      .run(static_cast<size_t>(a.src.numel()), 64);
}

// Scratch memory of the kernels (attention's score rows, argmax's partial results): one buffer
// per device and use, grown when a call needs more. The queue is in order, so a later call may
// reuse it.
const Tensor& scratch(Device device, const char* use, DType dtype, long long elements) {
  static std::map<std::pair<int, std::string>, Tensor> buffers;
  Tensor& t = buffers[{static_cast<int>(device.type) * 1024 + device.ordinal(), use}];
  if (!t.defined() || t.numel() < elements) t = Tensor::empty({elements}, dtype, device);
  return t;
}

void attention(const ops::AttentionArgs& a) {
  const long long batch = a.q.size(0), seq = a.q.size(1), heads = a.q.size(2);
  // Replayed steps read the past length on the device: size the scores for the whole cache.
  const long long keys = a.past_on_device.defined() ? a.k_cache.size(2) : a.past + seq;
  const long long items = batch * seq * heads;
  if (items == 0) return;
  if (a.q.size(3) > 256) {
    throw Error("attention: head_dim " + std::to_string(a.q.size(3)) +
                " exceeds the OpenCL kernel's 256");
  }
  // One row of scores per query, in device memory (a prefill of S tokens holds S x keys floats
  // per head); the buffer is kept and grown, not allocated per call.
  const Tensor& scores = scratch(a.q.device(), "attention scores", DType::f32, items * keys);
  Launch(a.q.device(), "attention")
      .tensor(a.q)
      .tensor(a.k_cache)
      .tensor(a.v_cache)
      .tensor(a.key_mask)
      .tensor(a.out)
      .tensor(scores)
      .i32(seq)
      .i32(heads)
      .i32(a.k_cache.size(1))
      .i32(a.q.size(3))
      .i64(a.k_cache.size(2))
      .i64(a.past)
      .i32(a.key_mask.size(1))
      .i64(keys)
      .f32(a.scale)
      .maybe(a.past_on_device)
      .i32(a.past_on_device.defined())
      .i64(a.window)
      .f32(a.softcap)
      .local((5 * kGroup + 256) * sizeof(float))  // reductions, value partials, q (dim <= 256)
      .run(static_cast<size_t>(items) * kGroup, kGroup);
}

// rope_store and attention in one launch for one decode token per row, on the devices that take
// the fused products (a launch fewer per layer where each launch costs the host ~10 us); other
// shapes and devices run the two ops.
void rope_attention(const ops::RopeAttentionArgs& a) {
  const ops::RopeStoreArgs& r = a.rope;
  const ops::AttentionArgs& t = a.attention;
  const long long batch = t.q.size(0), seq = t.q.size(1), heads = t.q.size(2), dim = t.q.size(3);
  // ANVIL_OPENCL_NO_ROPE_ATTENTION=1 keeps the two launches (for measuring one against the other).
  static const bool off = std::getenv("ANVIL_OPENCL_NO_ROPE_ATTENTION") != nullptr;
  if (off || seq != 1 || dim > 256 || !fused_products(t.q.device())) {
    ops::composed_rope_attention(a);
    return;
  }
  const long long keys = t.past_on_device.defined() ? t.k_cache.size(2) : t.past + seq;
  const long long items = batch * heads;
  const Tensor& scores = scratch(t.q.device(), "attention scores", DType::f32, items * keys);
  const bool norm = r.q_norm.defined();
  Launch(t.q.device(), "rope_attention", norm ? r.q_norm.dtype() : DType::f32)
      .tensor(r.q)
      .tensor(r.k)
      .tensor(r.v)
      .maybe(r.q_norm)
      .maybe(r.k_norm)
      .i32(norm)
      .f32(r.eps)
      .tensor(r.positions)
      .tensor(r.inv_freq)
      .f32(r.scaling)
      .tensor(r.k_cache)
      .tensor(r.v_cache)
      .tensor(t.key_mask)
      .tensor(t.out)
      .tensor(scores)
      .i32(heads)
      .i32(t.k_cache.size(1))
      .i32(dim)
      .i64(t.k_cache.size(2))
      .i64(t.past)
      .i32(t.key_mask.size(1))
      .i64(keys)
      .f32(t.scale)
      .maybe(t.past_on_device)
      .i32(t.past_on_device.defined())
      .i64(t.window)
      .f32(t.softcap)
      .local(5 * kAttentionGroup * sizeof(float))
      .run(static_cast<size_t>(items) * kAttentionGroup, kAttentionGroup);
}

void argmax(const ops::ArgmaxArgs& a) {
  constexpr long long kSpan = 2048;  // columns per work-group of the first pass
  const long long rows = a.x.size(0), cols = a.x.size(1);
  const long long parts = std::max<long long>(1, (cols + kSpan - 1) / kSpan);
  const Tensor& values = scratch(a.x.device(), "argmax values", DType::f32, rows * parts);
  const Tensor& indices = scratch(a.x.device(), "argmax indices", DType::i64, rows * parts);
  Launch(a.x.device(), "argmax_parts")
      .tensor(a.x)
      .tensor(values)
      .tensor(indices)
      .i64(cols)
      .i64(kSpan)
      .local(kGroup * sizeof(float))
      .local(kGroup * sizeof(cl_long))
      .run(static_cast<size_t>(parts) * kGroup, kGroup, static_cast<size_t>(rows), 1);
  Launch(a.x.device(), "argmax_final")
      .tensor(values)
      .tensor(indices)
      .tensor(a.out)
      .i32(parts)
      .local(kGroup * sizeof(float))
      .local(kGroup * sizeof(cl_long))
      .run(static_cast<size_t>(rows) * kGroup, kGroup);
}

void repetition_penalty(const ops::RepetitionPenaltyArgs& a) {
  const long long rows = a.logits.size(0), m = a.ids.size(1);
  if (rows == 0 || m == 0) return;
  constexpr long long kItems = 64;
  Launch(a.logits.device(), "repetition_penalty")
      .tensor(a.logits)
      .tensor(a.ids)
      .i64(rows)
      .i64(a.logits.size(1))
      .i64(m)
      .f32(a.penalty)
      .run(static_cast<size_t>((m + kItems - 1) / kItems * kItems), kItems,
           static_cast<size_t>(rows), 1);
}

void write_mask_column(const ops::MaskColumnArgs& a) {
  Launch(a.mask.device(), "mask_column")
      .tensor(a.mask)
      .tensor(a.values)
      .tensor(a.index)
      .i64(a.mask.size(0))
      .i64(a.mask.size(1))
      .run(static_cast<size_t>(a.mask.size(0)), 64);
}

}  // namespace
}  // namespace anvil::opencl

namespace anvil {

void register_opencl_kernels() {
  using namespace opencl;
  for (DeviceType dev : {DeviceType::opencl, DeviceType::xpu}) {
    for (DType w : {DType::f32, DType::bf16, DType::f16}) {
      register_kernel<ops::EmbeddingArgs>(ops::kEmbedding, dev, DType::f32, w, &embedding);
      register_kernel<ops::RmsNormArgs>(ops::kRmsNorm, dev, DType::f32, w, &rms_norm);
      register_kernel<ops::LinearArgs>(ops::kLinear, dev, DType::f32, w, &linear);
    }
    register_kernel<ops::RopeArgs>(ops::kRope, dev, DType::f32, DType::f32, &rope);
    register_kernel<ops::SwigluArgs>(ops::kSwiglu, dev, DType::f32, DType::f32, &swiglu);
    register_kernel<ops::SwigluArgs>(ops::kGluGeluTanh, dev, DType::f32, DType::f32, &swiglu);
    register_kernel<ops::SoftcapArgs>(ops::kSoftcap, dev, DType::f32, DType::f32, &softcap);
    register_kernel<ops::ScaleArgs>(ops::kScale, dev, DType::f32, DType::f32, &scale);
    register_kernel<ops::AddArgs>(ops::kAdd, dev, DType::f32, DType::f32, &add);
    register_kernel<ops::GatherRowsArgs>(ops::kGatherRows, dev, DType::f32, DType::f32,
                                         &gather_rows);
    register_kernel<ops::ScatterAddRowsArgs>(ops::kScatterAddRows, dev, DType::f32, DType::f32,
                                             &scatter_add_rows);
    register_kernel<ops::StoreKvArgs>(ops::kStoreKv, dev, DType::f32, DType::f32, &store_kv);
    register_kernel<ops::AttentionArgs>(ops::kAttention, dev, DType::f32, DType::f32, &attention);
    register_kernel<ops::AttentionArgs>(ops::kAttentionSoftcap, dev, DType::f32, DType::f32,
                                        &attention);
    register_kernel<ops::ArgmaxArgs>(ops::kArgmax, dev, DType::f32, DType::f32, &argmax);
    register_kernel<ops::RepetitionPenaltyArgs>(ops::kRepetitionPenalty, dev, DType::f32,
                                                DType::f32, &repetition_penalty);
    for (DType w : {DType::f32, DType::bf16, DType::f16}) {
      register_kernel<ops::LinearAddArgs>(ops::kLinearAdd, dev, DType::f32, w, &linear_add);
      register_kernel<ops::RopeStoreArgs>(ops::kRopeStore, dev, DType::f32, w, &rope_store);
      register_kernel<ops::RopeAttentionArgs>(ops::kRopeAttention, dev, DType::f32, w,
                                              &rope_attention);
      register_kernel<ops::LinearGroupArgs>(ops::kLinearGroup, dev, DType::f32, w, &linear_group);
      register_kernel<ops::LinearSwigluArgs>(ops::kLinearSwiglu, dev, DType::f32, w,
                                             &linear_swiglu);
    }
    register_kernel<ops::MaskColumnArgs>(ops::kMaskColumn, dev, DType::i32, DType::i32,
                                         &write_mask_column);
  }
}

}  // namespace anvil
