// Reference op implementations: straight loops in double precision, written to mirror the
// PyTorch expressions in transformers' modeling files rather than to be fast.
#include "ops/reference.h"

#include <cmath>
#include <vector>

namespace anvil::ops::reference {
namespace {

std::vector<double> load(const Tensor& t) {
  std::vector<float> f = t.to_f32_vector();
  return {f.begin(), f.end()};
}

void store(const Tensor& t, const std::vector<double>& v) {
  std::vector<float> f(v.begin(), v.end());
  Tensor host = Tensor::from_f32(f, t.shape()).to(t.dtype());
  const_cast<Tensor&>(t).copy_from(host);
}

}  // namespace

void embedding(const EmbeddingArgs& a) {
  const auto ids = a.ids.to_i64_vector();
  const auto table = load(a.table);
  const int64_t h = a.table.size(1);
  std::vector<double> out(ids.size() * h);
  for (size_t n = 0; n < ids.size(); ++n) {
    for (int64_t j = 0; j < h; ++j) out[n * h + j] = table[ids[n] * h + j] * a.scale;
  }
  store(a.out, out);
}

void rms_norm(const RmsNormArgs& a) {
  const auto x = load(a.x), w = load(a.weight);
  const int64_t n = a.x.size(0), d = a.x.size(1);
  std::vector<double> out(x.size());
  for (int64_t i = 0; i < n; ++i) {
    double ss = 0;
    for (int64_t j = 0; j < d; ++j) ss += x[i * d + j] * x[i * d + j];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(d) + a.eps);
    for (int64_t j = 0; j < d; ++j) out[i * d + j] = x[i * d + j] * inv * w[j];
  }
  store(a.out, out);
}

void linear(const LinearArgs& a) {
  const auto x = load(a.x), w = load(a.weight);
  const std::vector<double> b = a.bias.defined() ? load(a.bias) : std::vector<double>();
  const int64_t n = a.x.size(0), k = a.x.size(1), o = a.weight.size(0);
  std::vector<double> out(n * o);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < o; ++j) {
      double s = b.empty() ? 0.0 : b[j];
      for (int64_t t = 0; t < k; ++t) s += x[i * k + t] * w[j * k + t];
      out[i * o + j] = s;
    }
  }
  store(a.out, out);
}

void rope(const RopeArgs& a) {
  auto x = load(a.x);
  const auto pos = a.positions.to_f32_vector();
  const auto inv = a.inv_freq.to_f32_vector();
  const int64_t n = a.x.size(0), heads = a.x.size(1), d = a.x.size(2), half = d / 2;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t i = 0; i < half; ++i) {
      const float angle = pos[t] * inv[i];  // float32 product, as transformers computes it
      const double scale = inv[i] == 0.0f ? 1.0 : a.scaling;  // 0: a pair that does not rotate
      const double c = std::cos(static_cast<double>(angle)) * scale;
      const double s = std::sin(static_cast<double>(angle)) * scale;
      for (int64_t h = 0; h < heads; ++h) {
        double* v = &x[(t * heads + h) * d];
        const double x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c - x2 * s;
        v[i + half] = x2 * c + x1 * s;
      }
    }
  }
  store(a.x, x);
}

void swiglu(const SwigluArgs& a) {
  const auto g = load(a.gate), u = load(a.up);
  std::vector<double> out(g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    const double x = g[i];
    const double act =
        a.act == GluActivation::silu
            ? x / (1.0 + std::exp(-x))
            : 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    out[i] = act * u[i];
  }
  store(a.out, out);
}

void softcap(const SoftcapArgs& a) {
  auto x = load(a.x);
  for (double& v : x) v = std::tanh(v / a.cap) * a.cap;
  store(a.x, x);
}

void scale(const ScaleArgs& a) {
  auto x = load(a.x);
  for (double& v : x) v *= a.factor;
  store(a.x, x);
}

void add(const AddArgs& a) {
  const auto x = load(a.a), y = load(a.b);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] + y[i];
  store(a.out, out);
}

void store_kv(const StoreKvArgs& a) {
  const Tensor dst = a.cache.narrow(2, a.start, a.src.size(1));
  const_cast<Tensor&>(dst).copy_from(a.src.transpose(1, 2));
}

void attention(const AttentionArgs& a) {
  const auto q = load(a.q), k = load(a.k_cache), v = load(a.v_cache);
  const auto mask = a.key_mask.to_i64_vector();
  const int64_t batch = a.q.size(0), seq = a.q.size(1), heads = a.q.size(2), d = a.q.size(3);
  const int64_t kv_heads = a.k_cache.size(1), cap = a.k_cache.size(2), total = a.past + seq;
  const int64_t group = heads / kv_heads;
  std::vector<double> out(q.size(), 0.0);
  std::vector<double> p(total);
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t s = 0; s < seq; ++s) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t kh = h / group;
        const double* qv = &q[((b * seq + s) * heads + h) * d];
        double mx = -INFINITY;
        for (int64_t t = 0; t < total; ++t) {
          p[t] = -INFINITY;
          if (t > a.past + s || t < first_visible_key(a.past + s, a.window) ||
              mask[b * total + t] == 0) {
            continue;
          }
          const double* kv = &k[((b * kv_heads + kh) * cap + t) * d];
          double dot = 0;
          for (int64_t j = 0; j < d; ++j) dot += qv[j] * kv[j];
          p[t] = dot * a.scale;
          if (a.softcap > 0) p[t] = std::tanh(p[t] / a.softcap) * a.softcap;
          mx = std::max(mx, p[t]);
        }
        if (mx == -INFINITY) continue;  // no visible key: zeros
        double sum = 0;
        for (int64_t t = 0; t < total; ++t) {
          p[t] = p[t] == -INFINITY ? 0.0 : std::exp(p[t] - mx);
          sum += p[t];
        }
        double* o = &out[((b * seq + s) * heads + h) * d];
        for (int64_t t = 0; t < total; ++t) {
          if (p[t] == 0.0) continue;
          const double* vv = &v[((b * kv_heads + kh) * cap + t) * d];
          for (int64_t j = 0; j < d; ++j) o[j] += p[t] / sum * vv[j];
        }
      }
    }
  }
  store(a.out, out);
}

}  // namespace anvil::ops::reference
