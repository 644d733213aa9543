#include "model/mixers/qk_source_attention.h"
#include "kernels/parallel_gemm.h"

#include "model/torch_compat.h"

namespace hsm {

QkSourceAttentionImpl::QkSourceAttentionImpl(MixerKind kind, int64_t d, int64_t heads, double dropout)
    : QkSourceMixerImpl(kind), heads(heads), head_dim(d / heads), dropout(dropout) {
  qk = register_module("qk", torch::nn::Linear(d, 2 * d));
  value = register_module("v", torch::nn::Linear(d, d));
  proj = register_module("proj", torch::nn::Linear(d, d));
  init_linear(qk);
  init_linear(value);
  init_linear(proj);
}

torch::Tensor QkSourceAttentionImpl::to_heads(const torch::Tensor& t) {
  return t.view({t.size(0), t.size(1), heads, head_dim}).transpose(1, 2);
}

std::pair<torch::Tensor, torch::Tensor> QkSourceAttentionImpl::queries_keys(const torch::Tensor& src) {
  auto parts = linear(qk, src).chunk(2, -1);
  return {to_heads(parts[0]), to_heads(parts[1])};
}

torch::Tensor QkSourceAttentionImpl::merge(const torch::Tensor& y) {
  const int64_t B = y.size(0), T = y.size(2);
  return linear(proj, zero_heads(y, 1).transpose(1, 2).contiguous().view({B, T, heads * head_dim}));
}

torch::Tensor QkSourceAttentionImpl::forward_qk(const torch::Tensor& x, const torch::Tensor& src) {
  auto v = to_heads(linear(value, x));  // [B, H, T, hd]
  auto [q, k] = queries_keys(src);       // [1 or B, H, T, hd]
  if (q.size(0) == v.size(0)) return merge(compat::causal_attention(q, k, v, dropout, is_training()));
  // One fixed Q, K for the whole batch: the [1, H, T, T] weights once, broadcast over B.
  auto att = torch::dropout(compat::causal_attention_weights(q, k), dropout, is_training());
  return merge(torch::matmul(att, v));
}

torch::Tensor QkSourceAttentionImpl::step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) {
  return step_qk(x_t, has_queries(state) ? torch::Tensor() : x_t, state, pos, context);
}

torch::Tensor QkSourceAttentionImpl::prefill(const torch::Tensor& x, MixerState& state, int64_t context) {
  return prefill_qk(x, x, state, context);
}

torch::Tensor QkSourceAttentionImpl::step_qk(const torch::Tensor& x_t, const torch::Tensor& src, MixerState& state,
                                             int64_t pos, int64_t context) {
  auto& cache = state_of<QkSourceState>(state);
  const int64_t B = x_t.size(0), d = x_t.size(1);
  auto v = to_heads(linear(value, x_t.unsqueeze(1)));  // [B, H, 1, hd]
  if (!cache.v.defined()) cache.v = torch::zeros({B, heads, context, head_dim}, x_t.options());
  cache.v.narrow(2, pos, 1).copy_(v);
  torch::Tensor q;
  if (fixed() && src.defined() && src.dim() == 3) {  // rnd / fixed: every position's Q, K once per decode
    if (!cache.q.defined()) std::tie(cache.q, cache.k) = queries_keys(src);  // [1, H, context, hd]
    q = cache.q.narrow(2, pos, 1);
  } else if (fixed() && cache.q.defined()) {
    q = cache.q.narrow(2, pos, 1);
  } else {  // static (or a self-sourced step): this position's Q, K from src [B, d]
    auto [qt, kt] = queries_keys(src.unsqueeze(1));  // [B, H, 1, hd]
    if (!cache.k.defined()) cache.k = torch::zeros({B, heads, context, head_dim}, x_t.options());
    cache.k.narrow(2, pos, 1).copy_(kt);
    q = qt;
  }
  auto keys = cache.k.narrow(2, 0, pos + 1), values = cache.v.narrow(2, 0, pos + 1);
  auto att = torch::softmax(torch::matmul(q, keys.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim)), -1);
  return linear(proj, zero_heads(torch::matmul(att, values), 1).transpose(1, 2).reshape({B, d}));  // [B, d]
}

torch::Tensor QkSourceAttentionImpl::prefill_qk(const torch::Tensor& x, const torch::Tensor& src, MixerState& state,
                                                int64_t context) {
  auto& cache = state_of<QkSourceState>(state);
  const int64_t B = x.size(0), T = x.size(1);
  auto v = to_heads(linear(value, x));  // [B, H, T, hd]
  cache.v = torch::zeros({B, heads, context, head_dim}, x.options());
  cache.v.narrow(2, 0, T).copy_(v);
  torch::Tensor q, k;
  if (fixed() && src.size(1) == context && src.size(0) == 1) {  // the whole fixed stream: cache it
    std::tie(cache.q, cache.k) = queries_keys(src);
    q = cache.q.narrow(2, 0, T), k = cache.k.narrow(2, 0, T);
  } else {
    std::tie(q, k) = queries_keys(src);  // [B, H, T, hd]
    cache.k = torch::zeros({q.size(0), heads, context, head_dim}, x.options());
    cache.k.narrow(2, 0, T).copy_(k);
  }
  if (q.size(0) != B) q = q.expand({B, -1, -1, -1}), k = k.expand({B, -1, -1, -1});
  return merge(compat::causal_attention(q.contiguous(), k.contiguous(), v, 0.0, false));
}

torch::Tensor QkSourceAttentionImpl::attention_weights_qk(const torch::Tensor& src) {
  auto [q, k] = queries_keys(src);
  return compat::causal_attention_weights(q, k);
}


MixerImpl::MixingMatrices QkSourceAttentionImpl::mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) {
  torch::NoGradGuard no_grad;
  auto m = attention_weights_qk(qk.defined() ? qk : x).select(0, 0);  // [H, L, L]
  return {m, std::vector<int64_t>(static_cast<size_t>(m.size(0)), -1)};
}

}  // namespace hsm
