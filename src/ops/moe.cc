// Sparse mixture-of-experts MLPs in the device-neutral ops: the row gather and weighted scatter
// front ends, and the composed MoE block the decoder's layers call (Qwen2/3-MoE, Mixtral,
// OLMoE, as their transformers modules compute it). The router's picks are made by the device's
// moe_experts kernel where it has one for the step's rows, else on the host from the logits
// read back (a step then syncs with its device once a layer).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "anvil/dtype.h"
#include "anvil/error.h"
#include "core/kernels.h"
#include "ops/op_checks.h"
#include "ops/op_profile.h"
#include "ops/ops.h"

namespace anvil::ops {
namespace {

void expect_index(const char* op, const Tensor& index, int64_t rows) {
  expect_rank(op, "index", index, 1);
  expect_dtype(op, "index", index, DType::i32);
  expect_contiguous(op, "index", index);
  if (index.size(0) != rows) {
    fail(op, "index has " + std::to_string(index.size(0)) + " entries for " + std::to_string(rows) +
                 " rows");
  }
}

Tensor upload_rows(const std::vector<int32_t>& rows, Device device) {
  Tensor host = Tensor::empty({static_cast<int64_t>(rows.size())}, DType::i32);
  std::copy(rows.begin(), rows.end(), host.data<int32_t>());
  return host.to(device);
}

// The router's picks for each token (Qwen3MoeTopKRouter, MixtralTopKRouter): the softmax of the
// logits in float32, the top_k largest (ties to the lower expert), renormalised over them with
// norm_topk, rounded to the activations' dtype with weights_in_act_dtype. Returned per expert:
// its tokens (ascending) and their weights.
struct Picks {
  std::vector<std::vector<int32_t>> rows;
  std::vector<std::vector<float>> weights;
};

Picks route(const std::vector<float>& logits, int64_t tokens, int64_t experts, const MoeTensors& m,
            DType act) {
  Picks p;
  p.rows.resize(static_cast<size_t>(experts));
  p.weights.resize(static_cast<size_t>(experts));
  std::vector<float> prob(static_cast<size_t>(experts));
  std::vector<int64_t> order(static_cast<size_t>(experts));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* l = logits.data() + t * experts;
    const float top = *std::max_element(l, l + experts);
    float sum = 0.0f;
    for (int64_t e = 0; e < experts; ++e) sum += prob[e] = std::exp(l[e] - top);
    for (float& v : prob) v /= sum;
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(
        order.begin(), order.begin() + m.top_k, order.end(),
        [&](int64_t a, int64_t b) { return prob[a] > prob[b] || (prob[a] == prob[b] && a < b); });
    float picked = 0.0f;
    for (int64_t j = 0; j < m.top_k; ++j) picked += prob[order[j]];
    for (int64_t j = 0; j < m.top_k; ++j) {
      const int64_t e = order[j];
      float w = m.norm_topk ? prob[e] / picked : prob[e];
      if (m.weights_in_act_dtype) w = round_to_dtype(w, act);
      p.rows[e].push_back(static_cast<int32_t>(t));
      p.weights[e].push_back(w);
    }
  }
  return p;
}

// One gated-MLP expert over the rows `in` (gate / up / down), into y.
void expert_mlp(GluActivation act, const Tensor& in, const Tensor& gate, const Tensor& up,
                const Tensor& down, const Tensor& y) {
  const int64_t rows = in.size(0), width = gate.size(0);
  const Tensor g = Tensor::empty({rows, width}, in.dtype(), in.device());
  const Tensor u = Tensor::empty({rows, width}, in.dtype(), in.device());
  linear_swiglu({in, gate, Tensor(), up, Tensor(), g, u, Tensor(), 0.0f, Tensor(), act});
  linear(g, down, Tensor(), y);
}

}  // namespace

void gather_rows(const Tensor& x, const Tensor& index, const Tensor& out) {
  OpTimer timer([&] { return "gather_rows " + shape_str(out.shape()); });
  expect_rank(kGatherRows, "x", x, 2);
  expect_index(kGatherRows, index, out.defined() ? out.size(0) : 0);
  expect_shape(kGatherRows, "out", out, {index.size(0), x.size(1)});
  expect_dtype(kGatherRows, "out", out, x.dtype());
  expect_contiguous(kGatherRows, "x", x);
  expect_contiguous(kGatherRows, "out", out);
  expect_same_device(kGatherRows, x, index);
  expect_same_device(kGatherRows, x, out);
  get_kernel<GatherRowsArgs>(kGatherRows, x.device().type, x.dtype(), x.dtype())({x, index, out});
}

void scatter_add_rows(const Tensor& y, const Tensor& index, const Tensor& weight,
                      const Tensor& out) {
  OpTimer timer([&] { return "scatter_add_rows " + shape_str(y.shape()); });
  expect_rank(kScatterAddRows, "y", y, 2);
  expect_rank(kScatterAddRows, "out", out, 2);
  expect_index(kScatterAddRows, index, y.size(0));
  expect_shape(kScatterAddRows, "weight", weight, {y.size(0)});
  expect_dtype(kScatterAddRows, "weight", weight, DType::f32);
  expect_dtype(kScatterAddRows, "out", out, y.dtype());
  if (out.size(1) != y.size(1)) {
    fail(kScatterAddRows,
         "y has shape " + shape_str(y.shape()) + " but out has shape " + shape_str(out.shape()));
  }
  expect_contiguous(kScatterAddRows, "y", y);
  expect_contiguous(kScatterAddRows, "out", out);
  expect_same_device(kScatterAddRows, y, index);
  expect_same_device(kScatterAddRows, y, weight);
  expect_same_device(kScatterAddRows, y, out);
  get_kernel<ScatterAddRowsArgs>(kScatterAddRows, y.device().type, y.dtype(),
                                 y.dtype())({y, index, weight, out});
}

bool moe_experts_on_device(DeviceType device, DType act, DType weight, int64_t rows,
                           int64_t experts, int64_t top_k, int64_t hidden, int64_t width) {
  return hidden > 0 && hidden % 8 == 0 && width > 0 && width % 8 == 0 && rows >= 1 &&
         rows <= kMoeDeviceMaxRows && experts >= 1 && experts <= kMoeDeviceMaxExperts &&
         top_k >= 1 && top_k <= kMoeDeviceMaxTopK && top_k <= experts &&
         find_kernel_raw(kMoeExperts, device, act, weight) != nullptr;
}

void moe_experts(const MoeExpertsArgs& a) {
  OpTimer timer([&] { return "moe_experts " + shape_str(a.in.shape()); });
  if (!a.moe) fail(kMoeExperts, "no MoE tensors");
  const MoeTensors& m = *a.moe;
  expect_rank(kMoeExperts, "in", a.in, 2);
  expect_contiguous(kMoeExperts, "in", a.in);
  const int64_t n = a.in.size(0), h = a.in.size(1), experts = m.router.size(0);
  const DType act = a.in.dtype();
  const Device device = a.in.device();
  if (m.top_k < 1 || m.top_k > experts) {
    fail(kMoeExperts,
         "top_k " + std::to_string(m.top_k) + " of " + std::to_string(experts) + " experts");
  }
  if (static_cast<int64_t>(m.gate.size()) != experts ||
      static_cast<int64_t>(m.up.size()) != experts ||
      static_cast<int64_t>(m.down.size()) != experts) {
    fail(kMoeExperts, "the router has " + std::to_string(experts) + " experts but there are " +
                          std::to_string(m.gate.size()) + " / " + std::to_string(m.up.size()) +
                          " / " + std::to_string(m.down.size()) + " gate / up / down weights");
  }
  // An activation-shaped argument: its shape, the activations' dtype, contiguous, on in's device.
  const auto expect_activations = [&](const char* name, const Tensor& t, const Shape& shape) {
    expect_shape(kMoeExperts, name, t, shape);
    expect_dtype(kMoeExperts, name, t, act);
    expect_contiguous(kMoeExperts, name, t);
    expect_same_device(kMoeExperts, a.in, t);
  };
  expect_activations("logits", a.logits, {n, experts});
  expect_activations("out", a.out, {n, h});
  if (a.shared.defined()) expect_activations("shared", a.shared, {n, h});
  if (a.residual.defined()) expect_activations("residual", a.residual, {n, h});
  if (a.shared_logit.defined()) {
    if (!a.shared.defined()) fail(kMoeExperts, "a shared expert's gate logit without its output");
    expect_activations("shared_logit", a.shared_logit, {n, 1});
  }
  const int64_t width = m.gate[0].size(0);
  const DType weight = m.gate[0].dtype();
  if (moe_experts_on_device(device.type, act, weight, n, experts, m.top_k, h, width)) {
    // The kernel reads whichever experts the router picks: every one is checked here (once a
    // recorded step, which replays without this). The host's path checks the picked ones in
    // their products.
    for (size_t e = 0; e < m.gate.size(); ++e) {
      const std::pair<const Tensor*, Shape> weights[] = {
          {&m.gate[e], {width, h}}, {&m.up[e], {width, h}}, {&m.down[e], {h, width}}};
      for (const auto& [w, shape] : weights) {
        expect_shape(kMoeExperts, "expert weight", *w, shape);
        expect_dtype(kMoeExperts, "expert weight", *w, weight);
        expect_contiguous(kMoeExperts, "expert weight", *w);
        expect_same_device(kMoeExperts, a.in, *w);
      }
    }
    const int64_t picks = n * m.top_k;
    expect_activations("rows", a.rows, {picks, h});
    expect_activations("hidden", a.hidden, {picks, width});
    expect_activations("y", a.y, {picks, h});
    expect_shape(kMoeExperts, "plan", a.plan, {moe_plan_words(n, experts, m.top_k)});
    expect_dtype(kMoeExperts, "plan", a.plan, DType::i32);
    expect_same_device(kMoeExperts, a.in, a.plan);
    get_kernel<MoeExpertsArgs>(kMoeExperts, device.type, act, weight)(a);
    return;
  }
  // The picks on the host: the logits read back (a sync with the device).
  const Picks picks = route(a.logits.to(Device::cpu()).to_f32_vector(), n, experts, m, act);
  // The experts' sum as transformers' index_add_ builds it: zeros, then each expert's weighted
  // rows in expert order, in the activations' dtype.
  Tensor out = a.out;
  out.copy_from(Tensor::zeros({n, h}, act));
  for (int64_t e = 0; e < experts; ++e) {
    const std::vector<int32_t>& rows = picks.rows[static_cast<size_t>(e)];
    if (rows.empty()) continue;
    const auto count = static_cast<int64_t>(rows.size());
    const Tensor index = upload_rows(rows, device);
    const Tensor gathered = Tensor::empty({count, h}, act, device);
    gather_rows(a.in, index, gathered);
    const Tensor y = Tensor::empty({count, h}, act, device);
    expert_mlp(a.act, gathered, m.gate[static_cast<size_t>(e)], m.up[static_cast<size_t>(e)],
               m.down[static_cast<size_t>(e)], y);
    scatter_add_rows(y, index,
                     Tensor::from_f32(picks.weights[static_cast<size_t>(e)], {count}).to(device),
                     a.out);
  }
  if (a.shared.defined()) {
    std::vector<float> w(static_cast<size_t>(n), 1.0f);
    if (a.shared_logit.defined()) {
      w = a.shared_logit.to(Device::cpu()).to_f32_vector();
      for (float& v : w) v = round_to_dtype(1.0f / (1.0f + std::exp(-v)), act);
    }
    std::vector<int32_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    scatter_add_rows(a.shared, upload_rows(all, device), Tensor::from_f32(w, {n}).to(device),
                     a.out);
  }
  if (a.residual_scale != 1.0f) scale(a.out, a.residual_scale);
  if (a.residual.defined()) add(a.residual, a.out, a.residual);
}

void composed_moe_mlp(const DecodeLayersArgs& a, const DecoderLayerTensors& L) {
  const MoeTensors& m = *L.moe;
  const Tensor& x = a.x;
  if (L.mlp_out_norm.defined()) {  // no MoE architecture normalises its MLP's output
    throw Error(
        "decode_layers: a mixture-of-experts layer with an MLP output norm is not "
        "implemented");
  }
  const int64_t n = x.size(0), h = x.size(1), experts = m.router.size(0);
  const DType act = x.dtype();
  const Device device = x.device();
  // The step's scratch where the decoder gave it (a recorded step must allocate nothing),
  // else buffers of this call.
  const auto buffer = [&](const Tensor& given, const Shape& shape, DType dtype) {
    return given.defined() ? given : Tensor::empty(shape, dtype, device);
  };
  const Tensor in = L.post_norm.defined() ? a.normed : x;
  const MoeScratch& s = a.moe;
  MoeExpertsArgs e{.in = in,
                   .logits = buffer(s.logits, {n, experts}, act),
                   .moe = &m,
                   .act = a.act,
                   .out = buffer(s.sum, {n, h}, act),
                   .residual = x,
                   .residual_scale = a.residual_scale};
  // The post-attention norm, the router and Qwen2-MoE's shared-expert gate logit as one group
  // (one launch where a device fuses it), the normalised rows kept for the experts.
  LinearGroupArgs router{.x = x,
                         .weights = {m.router},
                         .biases = {},
                         .outs = {e.logits},
                         .count = 1,
                         .norm_weight = L.post_norm,
                         .eps = a.eps,
                         .normed = a.normed,
                         .keep_normed = true};
  if (m.shared_gate.defined() && m.shared_expert_gate.defined()) {
    e.shared_logit = buffer(s.shared_logit, {n, 1}, act);
    router.weights[1] = m.shared_expert_gate;
    router.outs[1] = e.shared_logit;
    router.count = 2;
  }
  linear_group(router);
  // The shared expert: Qwen2-MoE's gated by sigmoid(x . g), GraniteMoeShared's not.
  if (m.shared_gate.defined()) {
    const int64_t width = m.shared_gate.size(0);
    const Tensor g = buffer(s.shared_gate, {n, width}, act);
    const Tensor u = buffer(s.shared_up, {n, width}, act);
    e.shared = buffer(s.shared_y, {n, h}, act);
    linear_swiglu({in, m.shared_gate, Tensor(), m.shared_up, Tensor(), g, u, Tensor(), 0.0f,
                   Tensor(), a.act});
    linear(g, m.shared_down, Tensor(), e.shared);
  }
  const int64_t width = m.gate[0].size(0);
  if (moe_experts_on_device(device.type, act, m.gate[0].dtype(), n, experts, m.top_k, h, width)) {
    const int64_t picks = n * m.top_k;
    e.rows = buffer(s.rows, {picks, h}, act);
    e.hidden = buffer(s.hidden, {picks, width}, act);
    e.y = buffer(s.y, {picks, h}, act);
    e.plan = buffer(s.plan, {moe_plan_words(n, experts, m.top_k)}, DType::i32);
  }
  moe_experts(e);  // with the residual add (Granite's multiplier first)
}

}  // namespace anvil::ops
