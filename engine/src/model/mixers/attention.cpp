#include "model/mixers/attention.h"
#include "kernels/parallel_gemm.h"

#include "model/torch_compat.h"

namespace hsm {

AttentionImpl::AttentionImpl(MixerKind kind, int64_t d, int64_t heads, double dropout)
    : MixerImpl(kind), heads(heads), head_dim(d / heads), dropout(dropout) {
  qkv = register_module("qkv", torch::nn::Linear(d, 3 * d));
  proj = register_module("proj", torch::nn::Linear(d, d));
  init_linear(qkv);
  init_linear(proj);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> split_qkv_heads(torch::nn::Linear& qkv, const torch::Tensor& x,
                                                                        int64_t heads) {
  const int64_t B = x.size(0), T = x.size(1), hd = x.size(2) / heads;
  auto parts = linear(qkv, x).chunk(3, -1);  // 3 × [B, T, d]
  auto to_heads = [&](const torch::Tensor& t) { return t.view({B, T, heads, hd}).transpose(1, 2); };
  return {to_heads(parts[0]), to_heads(parts[1]), to_heads(parts[2])};  // [B, H, T, hd]
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> AttentionImpl::split_heads(const torch::Tensor& x) {
  return split_qkv_heads(qkv, x, heads);
}

torch::Tensor AttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), d = x.size(2);
  auto [q, k, v] = split_heads(x);
  auto y = zero_heads(compat::causal_attention(q, k, v, dropout, is_training()), 1);  // [B, H, T, hd]
  return linear(proj, y.transpose(1, 2).contiguous().view({B, T, d}));
}

torch::Tensor AttentionImpl::step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) {
  auto& cache = state_of<AttentionState>(state);
  const int64_t B = x_t.size(0), d = x_t.size(1);
  auto [q, k, v] = split_heads(x_t.unsqueeze(1));  // [B, H, 1, hd]
  if (!cache.k.defined()) {
    cache.k = torch::zeros({B, heads, context, head_dim}, x_t.options());
    cache.v = torch::zeros_like(cache.k);
  }
  cache.k.narrow(2, pos, 1).copy_(k);
  cache.v.narrow(2, pos, 1).copy_(v);
  auto keys = cache.k.narrow(2, 0, pos + 1), values = cache.v.narrow(2, 0, pos + 1);  // [B, H, pos+1, hd]
  auto att = torch::softmax(torch::matmul(q, keys.transpose(-2, -1)) / std::sqrt(static_cast<double>(head_dim)), -1);
  auto y = zero_heads(torch::matmul(att, values), 1);  // [B, H, 1, hd]
  return linear(proj, y.transpose(1, 2).reshape({B, d}));
}

torch::Tensor AttentionImpl::prefill(const torch::Tensor& x, MixerState& state, int64_t context) {
  auto& cache = state_of<AttentionState>(state);
  const int64_t B = x.size(0), T = x.size(1), d = x.size(2);
  auto [q, k, v] = split_heads(x);  // [B, H, T, hd]
  cache.k = torch::zeros({B, heads, context, head_dim}, x.options());
  cache.v = torch::zeros_like(cache.k);
  cache.k.narrow(2, 0, T).copy_(k);
  cache.v.narrow(2, 0, T).copy_(v);
  auto y = zero_heads(compat::causal_attention(q, k, v, 0.0, false), 1);
  return linear(proj, y.transpose(1, 2).contiguous().view({B, T, d}));
}

torch::Tensor AttentionImpl::attention_weights(const torch::Tensor& x) {
  auto [q, k, v] = split_heads(x);
  return compat::causal_attention_weights(q, k);
}


torch::Tensor AttentionImpl::position_terms(const torch::Tensor& x, const torch::Tensor& weights) {
  const int64_t d = x.size(2);
  auto [q, k, v] = split_heads(x);  // [1, H, T, hd], v with its bias
  auto A = weights.to(torch::kFloat).clone();  // [H, T, T]
  for (int64_t head : zeroed_heads()) A[head].zero_();
  const auto w = proj->weight.to(torch::kFloat).view({d, heads, head_dim});         // W_O [d, H, hd]
  const auto u = torch::einsum("htk,dhk->htd", {v[0].to(torch::kFloat), w});  // [H, T, d]
  return torch::einsum("hij,hjd->ijd", {A, u});                               // [T, T, d]
}

MixerImpl::MixingMatrices AttentionImpl::mixing_matrices(const torch::Tensor& x, const torch::Tensor&) {
  torch::NoGradGuard no_grad;
  auto m = attention_weights(x).squeeze(0);  // [H, L, L]
  return {m, std::vector<int64_t>(static_cast<size_t>(m.size(0)), -1)};
}

}  // namespace hsm
