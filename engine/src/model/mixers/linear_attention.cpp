#include "model/mixers/linear_attention.h"
#include "kernels/parallel_gemm.h"

#include <cmath>
#include <limits>

#include "model/mixers/attention.h"

namespace hsm {
namespace {

// Causal mask [C, C]: true where j <= i.
torch::Tensor causal_mask(int64_t C, const torch::Device& device) {
  return torch::ones({C, C}, torch::TensorOptions().dtype(torch::kBool).device(device)).tril();
}

// taylor's kernel on already scaled q, k: 1 + s + s²/2 with s = q·kᵀ, causal. [.., C, C]
torch::Tensor taylor_weights(const torch::Tensor& q, const torch::Tensor& k) {
  auto s = torch::matmul(q, k.transpose(-2, -1));
  auto w = 1 + s + 0.5 * s * s;
  return w.masked_fill(causal_mask(q.size(-2), q.device()).logical_not(), 0.0);
}

// nonapprox's per-position score s_j = Σ SiLU(q_j) ⊙ k_j / √hd: [B, H, T].
torch::Tensor nonapprox_scores(const torch::Tensor& q, const torch::Tensor& k) {
  return (torch::silu(q) * k).sum(-1) / std::sqrt(static_cast<double>(q.size(-1)));
}

double taylor_scale(int64_t hd) { return std::pow(static_cast<double>(hd), -0.25); }

}  // namespace

torch::Tensor taylor_features(const torch::Tensor& x) {
  const int64_t hd = x.size(-1);
  auto idx = torch::triu_indices(hd, hd, 0, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
  auto rows = idx[0], cols = idx[1];  // the hd(hd+1)/2 pairs i <= j
  auto scale =
      torch::where(rows == cols, torch::full({}, 1.0 / std::sqrt(2.0), x.options()), torch::ones({}, x.options()));
  auto second = x.index_select(-1, rows) * x.index_select(-1, cols) * scale;  // [..., P]
  auto sizes = x.sizes().vec();
  sizes.back() = 1;
  return torch::cat({torch::ones(sizes, x.options()), x, second}, -1);  // [..., 1 + hd + P]
}

LinearAttentionImpl::LinearAttentionImpl(MixerKind kind, Form form, int64_t d, int64_t heads)
    : MixerImpl(kind), form(form), heads(heads), head_dim(d / heads) {
  qkv = register_module("qkv", torch::nn::Linear(d, 3 * d));
  proj = register_module("proj", torch::nn::Linear(d, d));
  init_linear(qkv);
  init_linear(proj);
}

torch::Tensor LinearAttentionImpl::merge(const torch::Tensor& y) {
  const int64_t B = y.size(0), T = y.size(2);
  return linear(proj, zero_heads(y, 1).transpose(1, 2).contiguous().view({B, T, heads * head_dim}));
}

torch::Tensor LinearAttentionImpl::mix(const torch::Tensor& q_in, const torch::Tensor& k_in, const torch::Tensor& v,
                                       LinearAttentionState* state) {
  const int64_t B = v.size(0), T = v.size(2);
  std::vector<torch::Tensor> outs;
  if (form == Form::kTaylor) {
    const double c = taylor_scale(head_dim);
    auto q = q_in * c, k = k_in * c;
    const bool one_chunk = T <= kChunk;
    torch::Tensor kv, z;  // Σ φ(k) vᵀ [B, H, D, hd], Σ φ(k) [B, H, D]
    for (int64_t a = 0; a < T; a += kChunk) {
      const int64_t C = std::min(kChunk, T - a);
      auto qc = q.narrow(2, a, C), kc = k.narrow(2, a, C), vc = v.narrow(2, a, C);
      auto w = taylor_weights(qc, kc);  // [B, H, C, C]
      auto num = torch::matmul(w, vc);  // [B, H, C, hd]
      auto den = w.sum(-1);             // [B, H, C]
      if (kv.defined()) {
        auto fq = taylor_features(qc);  // [B, H, C, D]
        num = num + torch::matmul(fq, kv);
        den = den + torch::matmul(fq, z.unsqueeze(-1)).squeeze(-1);
      }
      outs.push_back(num / den.unsqueeze(-1));
      if (!one_chunk || state) {
        auto fk = taylor_features(kc);  // [B, H, C, D]
        auto dkv = torch::matmul(fk.transpose(-2, -1), vc);
        auto dz = fk.sum(2);
        kv = kv.defined() ? kv + dkv : dkv;
        z = z.defined() ? z + dz : dz;
      }
    }
    if (state) state->kv = kv, state->z = z;
  } else {
    auto s = nonapprox_scores(q_in, k_in);  // [B, H, T]
    torch::Tensor m, num_prev, den_prev;    // running max [B, H], Σe·v [B, H, hd], Σe [B, H]
    for (int64_t a = 0; a < T; a += kChunk) {
      const int64_t C = std::min(kChunk, T - a);
      auto sc = s.narrow(2, a, C), vc = v.narrow(2, a, C);
      // Running max m_i = max(m_prev, s_a..s_i): every weight e^{s_j - m_i} <= 1 and the
      // largest is 1, so nothing overflows or underflows to 0/0. y does not depend on m:
      // detached, which is exact.
      auto mi = std::get<0>(torch::cummax(sc.detach(), -1));  // [B, H, C]
      if (m.defined()) mi = torch::maximum(mi, m.unsqueeze(-1));
      auto logits = sc.unsqueeze(-2) - mi.unsqueeze(-1);  // [B, H, C(i), C(j)]
      auto e = torch::exp(
          logits.masked_fill(causal_mask(C, v.device()).logical_not(), -std::numeric_limits<float>::infinity()));
      auto num = torch::matmul(e, vc);  // [B, H, C, hd]
      auto den = e.sum(-1);             // [B, H, C]
      if (m.defined()) {
        auto carry = torch::exp(m.unsqueeze(-1) - mi);  // [B, H, C]
        num = num + carry.unsqueeze(-1) * num_prev.unsqueeze(2);
        den = den + carry * den_prev.unsqueeze(-1);
      }
      outs.push_back(num / den.unsqueeze(-1));
      m = mi.select(2, C - 1);
      num_prev = num.select(2, C - 1);
      den_prev = den.select(2, C - 1);
    }
    if (state) state->kv = num_prev, state->z = den_prev, state->m = m;
  }
  (void)B;
  return outs.size() == 1 ? outs[0] : torch::cat(outs, 2);  // [B, H, T, hd]
}

torch::Tensor LinearAttentionImpl::forward(const torch::Tensor& x) {
  auto [q, k, v] = split_qkv_heads(qkv, x, heads);
  return merge(mix(q, k, v, nullptr));
}

torch::Tensor LinearAttentionImpl::prefill(const torch::Tensor& x, MixerState& state, int64_t) {
  auto [q, k, v] = split_qkv_heads(qkv, x, heads);
  return merge(mix(q, k, v, &state_of<LinearAttentionState>(state)));
}

torch::Tensor LinearAttentionImpl::step(const torch::Tensor& x_t, MixerState& state, int64_t, int64_t) {
  auto& cache = state_of<LinearAttentionState>(state);
  auto [q4, k4, v4] = split_qkv_heads(qkv, x_t.unsqueeze(1), heads);  // [B, H, 1, hd]
  auto q = q4.squeeze(2), k = k4.squeeze(2), v = v4.squeeze(2);       // [B, H, hd]
  torch::Tensor y;
  if (form == Form::kTaylor) {
    const double c = taylor_scale(head_dim);
    auto fq = taylor_features(q * c), fk = taylor_features(k * c);  // [B, H, D]
    auto dkv = fk.unsqueeze(-1) * v.unsqueeze(-2);                  // [B, H, D, hd]
    cache.kv = cache.kv.defined() ? cache.kv + dkv : dkv;
    cache.z = cache.z.defined() ? cache.z + fk : fk;
    auto num = torch::matmul(fq.unsqueeze(-2), cache.kv).squeeze(-2);  // [B, H, hd]
    auto den = (fq * cache.z).sum(-1, true);                           // [B, H, 1]
    y = num / den;
  } else {
    auto s = nonapprox_scores(q, k);  // [B, H]
    if (!cache.m.defined()) {
      cache.m = s, cache.kv = v, cache.z = torch::ones_like(s);
    } else {
      auto m = torch::maximum(cache.m, s);
      auto old = torch::exp(cache.m - m), now = torch::exp(s - m);
      cache.kv = cache.kv * old.unsqueeze(-1) + now.unsqueeze(-1) * v;
      cache.z = cache.z * old + now;
      cache.m = m;
    }
    y = cache.kv / cache.z.unsqueeze(-1);
  }
  return merge(y.unsqueeze(2)).squeeze(1);  // [B, d]
}

torch::Tensor LinearAttentionImpl::attention_weights(const torch::Tensor& x) {
  auto [q, k, v] = split_qkv_heads(qkv, x, heads);
  if (form == Form::kTaylor) {
    const double c = taylor_scale(head_dim);
    auto w = taylor_weights(q * c, k * c);
    return w / w.sum(-1, true);
  }
  const int64_t T = x.size(1);
  auto s = nonapprox_scores(q, k).unsqueeze(-2).expand({-1, -1, T, T});  // row i sees s_j
  auto masked = s.masked_fill(causal_mask(T, x.device()).logical_not(), -std::numeric_limits<float>::infinity());
  return torch::softmax(masked, -1);
}


MixerImpl::MixingMatrices LinearAttentionImpl::mixing_matrices(const torch::Tensor& x, const torch::Tensor&) {
  torch::NoGradGuard no_grad;
  auto m = attention_weights(x).squeeze(0);  // [H, L, L]
  return {m, std::vector<int64_t>(static_cast<size_t>(m.size(0)), -1)};
}

}  // namespace hsm
