#include "model/mixers/extractors.h"
#include "model/parallel_gemm.h"

#include <stdexcept>

namespace hsm {
namespace {

// Starting weights of the extraction before the model applies its init (model.cpp): GPT-2's
// N(0, 0.02) like every other weight; the "ex" init redraws them from N(0, 0.01) (EX §6).
constexpr double kInitStd = 0.02;

torch::nn::Linear square_map(int64_t d) {
  auto l = torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false));
  init_linear(l, kInitStd);
  return l;
}

// Lag of every (output i, input j) pair of a T-long sequence, for gathering w_{i−j+1}:
// index [T, T] (clamped into 0..l−1) and the mask of the pairs inside the window (0 ≤ i−j < l).
std::pair<torch::Tensor, torch::Tensor> lags(int64_t T, int64_t l, const torch::Device& device) {
  auto pos = torch::arange(T, torch::TensorOptions().dtype(torch::kLong).device(device));
  auto lag = pos.unsqueeze(1) - pos.unsqueeze(0);  // [T, T]: i − j
  auto inside = (lag >= 0).logical_and(lag < l);
  return {lag.clamp(0, l - 1), inside};
}

// Positions pos, pos−1, ..., pos−K+1 of a ring of R slots (newest first).
torch::Tensor window_slots(int64_t pos, int64_t K, int64_t R, const torch::Device& device) {
  auto back = torch::arange(K, torch::TensorOptions().dtype(torch::kLong).device(device));
  return (pos - back).remainder(R);
}

// Per-channel Toeplitz matrices M[c, i, j] = w[i − j, c] inside the window, else 0: [d, T, T].
torch::Tensor channel_toeplitz(const torch::Tensor& w, int64_t T) {
  const int64_t l = w.size(0), d = w.size(1);
  auto [lag, inside] = lags(T, l, w.device());
  return (w.index_select(0, lag.flatten()).view({T, T, d}) * inside.unsqueeze(-1).to(w.dtype())).permute({2, 0, 1});
}

// e[b, i, c] = Σ_{0 ≤ i−j < l} w[i − j, c] u[b, j, c] (eq. 26, 28): a depthwise causal
// convolution as one batched product over the channels, [d, T, T] × [d, T, B]. The Toeplitz
// matrices are rebuilt in backward rather than saved (d·T² values a layer: 0.5 GB at T = 1024).
struct DepthwiseCausalMix : torch::autograd::Function<DepthwiseCausalMix> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& u, const torch::Tensor& w) {
    ctx->save_for_backward({u, w});
    auto M = channel_toeplitz(w, u.size(1));
    return torch::bmm(M, u.permute({2, 1, 0})).permute({2, 1, 0});  // [B, T, d]
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &u = saved[0], &w = saved[1];
    const int64_t T = u.size(1), d = u.size(2), l = w.size(0);
    auto g = grads[0].permute({2, 1, 0});                                                    // [d, T, B]
    auto grad_u = torch::bmm(channel_toeplitz(w, T).transpose(1, 2), g).permute({2, 1, 0});  // [B, T, d]
    // ∂/∂M[c, i, j] = Σ_b g[b, i, c] u[b, j, c]; w[k, c] collects the entries with i − j = k.
    auto [lag, inside] = lags(T, l, w.device());
    auto gm = torch::bmm(g, u.permute({2, 0, 1})) * inside.to(u.dtype());  // [d, T, T]
    auto grad_w = torch::zeros_like(w).index_add_(0, lag.flatten(), gm.permute({1, 2, 0}).reshape({T * T, d}));
    return {grad_u, grad_w};
  }
};

// The same as a depthwise causal convolution: conv1d with one group per channel over u
// left-padded with K − 1 zeros, the kernel being w flipped in time (K = min(T, l) lags).
torch::Tensor depthwise_causal_conv(const torch::Tensor& u, const torch::Tensor& w) {
  const int64_t T = u.size(1), d = u.size(2), K = std::min(T, w.size(0));
  auto x = torch::constant_pad_nd(u.transpose(1, 2), {K - 1, 0});  // [B, d, T + K − 1]
  auto kernel = w.narrow(0, 0, K).flip({0}).t().unsqueeze(1);      // [d, 1, K]: lag K−1 first
  const std::vector<int64_t> one{1}, zero{0};
  return torch::conv1d(x, kernel, torch::Tensor(), one, zero, one, d).transpose(1, 2);  // [B, T, d]
}

// Sequences up to this length take the Toeplitz product, longer ones the convolution. The
// matrices cost d·T² values a layer. Measured (d 64, 4 layers, batch 8 × 128 tokens, one
// run, training tok/s against 32-head attention): at T = 128 the product trains he 1.53×,
// we 1.61× (the convolution 0.16–0.21×); at T = 1024 the product gave 0.06× and the
// convolution he 2.16×, we 0.82×.
constexpr int64_t kToeplitzMaxLength = 256;

torch::Tensor depthwise_causal_mix(const torch::Tensor& u, const torch::Tensor& w) {
  return u.size(1) <= kToeplitzMaxLength ? DepthwiseCausalMix::apply(u, w) : depthwise_causal_conv(u, w);
}

}  // namespace

// ---- shared --------------------------------------------------------------------------------
ExtractorImpl::ExtractorImpl(MixerKind kind, int64_t d, int64_t l) : MixerImpl(kind), d_model(d), context(l) {
  if (l <= 0)
    throw std::invalid_argument(std::string("extractor ") + mixer_info(kind).id +
                                " needs the model's context length (got " + std::to_string(l) + ")");
  if (kind != MixerKind::ExtractorME) {
    adj = register_module("adj", square_map(d));
    out = register_module("out", square_map(d));
  }
}

torch::Tensor ExtractorImpl::finish(const torch::Tensor& x, const torch::Tensor& e) {
  if (!adj) return e;                        // ME: the extraction is the output
  return linear(out, linear(adj, x) * e);  // eq. 24, 25
}

torch::Tensor ExtractorImpl::forward(const torch::Tensor& x) { return finish(x, extract(extraction_input(x))); }

torch::Tensor ExtractorImpl::prefill(const torch::Tensor& x, MixerCache& cache, int64_t) {
  const int64_t T = x.size(1), first = std::max<int64_t>(0, T - context);
  auto u = extraction_input(x);  // [B, T, d]
  cache.ring = torch::zeros({x.size(0), context, d_model}, x.options());
  // Position p lives at p % l, as step() would have left it.
  auto slots =
      torch::arange(first, T, torch::TensorOptions().dtype(torch::kLong).device(x.device())).remainder(context);
  cache.ring.index_copy_(1, slots, u.narrow(1, first, T - first));
  return finish(x, extract(u));
}

torch::Tensor ExtractorImpl::step(const torch::Tensor& x_t, MixerCache& cache, int64_t pos, int64_t) {
  if (!cache.ring.defined()) cache.ring = torch::zeros({x_t.size(0), context, d_model}, x_t.options());
  cache.ring.select(1, pos % context).copy_(extraction_input(x_t));
  const int64_t K = std::min(pos + 1, context);
  auto window = cache.ring.index_select(1, window_slots(pos, K, context, x_t.device()));  // [B, K, d]
  return finish(x_t, extract_window(window));
}

// ---- SHE -----------------------------------------------------------------------------------
SheImpl::SheImpl(int64_t d, int64_t l) : ExtractorImpl(MixerKind::ExtractorSHE, d, l) {
  w_ext = register_parameter("w_ext", torch::randn({l, d, d}) * kInitStd);
}

torch::Tensor SheImpl::extract(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), d = x.size(2), K = std::min(T, context);
  // Every lag's map at once: Y[b, j, k] = x_j W_{k+1}, one [B·T, d] × [d, K·d] product.
  auto Y = torch::matmul(x, w_ext.narrow(0, 0, K).permute({1, 0, 2}).reshape({d, K * d}));  // [B, T, K·d]
  // e_t = Σ_k Y[t − k, k]: pad K − 1 zero rows in front (P[t + K − 1] = Y[t]) and read the
  // anti-diagonals as a view. With k' = K − 1 − k, P[t + k', K − 1 − k'] sits at
  // t·K·d + (K − 1)·d + k'·(K − 1)·d. Neither Y nor P is kept for the backward pass (the
  // matmul keeps x, the view its geometry), so a layer's memory stays O(B·T·d).
  auto P = torch::constant_pad_nd(Y, {0, 0, K - 1, 0});  // [B, T+K−1, K·d], contiguous
  auto diagonals = P.as_strided({B, T, K, d}, {P.stride(0), K * d, (K - 1) * d, 1}, (K - 1) * d);
  return diagonals.sum(2);  // [B, T, d]
}

torch::Tensor SheImpl::extract_window(const torch::Tensor& window) {
  const int64_t B = window.size(0), K = window.size(1), d = window.size(2);
  return torch::matmul(window.reshape({B, K * d}), w_ext.narrow(0, 0, K).reshape({K * d, d}));  // [B, d]
}

torch::Tensor SheImpl::lag_maps(int64_t K) const { return w_ext.narrow(0, 0, K); }

// ---- WE ------------------------------------------------------------------------------------
WeImpl::WeImpl(int64_t d, int64_t l, MixerKind kind) : ExtractorImpl(kind, d, l) {
  w_ext = register_parameter("w_ext", torch::randn({l, d}) * kInitStd);
}

torch::Tensor WeImpl::extract(const torch::Tensor& u) { return depthwise_causal_mix(u, w_ext); }

torch::Tensor WeImpl::extract_window(const torch::Tensor& window) {
  return (window * w_ext.narrow(0, 0, window.size(1))).sum(1);  // [B, K, d] ⊙ [K, d] -> [B, d]
}

torch::Tensor WeImpl::lag_maps(int64_t K) const { return torch::diag_embed(w_ext.narrow(0, 0, K)); }

// ---- HE ------------------------------------------------------------------------------------
HeImpl::HeImpl(int64_t d, int64_t l) : WeImpl(d, l, MixerKind::ExtractorHE) {
  in_ext = register_module("in_ext", square_map(d));
}

torch::Tensor HeImpl::lag_maps(int64_t K) const {
  // x ↦ (x W_in_ext) ⊙ w_k = x (W_in_ext diag(w_k)); W_in_ext = in_ext.weightᵀ.
  return in_ext->weight.t().unsqueeze(0) * w_ext.narrow(0, 0, K).unsqueeze(1);  // [K, d, d]
}

// ---- ME ------------------------------------------------------------------------------------
MeImpl::MeImpl(int64_t d, int64_t l) : ExtractorImpl(MixerKind::ExtractorME, d, l) {
  w_ext = register_parameter("w_ext", torch::randn({l}) * kInitStd);
}

torch::Tensor MeImpl::toeplitz(int64_t T) const {
  auto [lag, inside] = lags(T, context, w_ext.device());
  return w_ext.index_select(0, lag.flatten()).view({T, T}) * inside.to(w_ext.dtype());
}

torch::Tensor MeImpl::extract(const torch::Tensor& x) { return torch::matmul(toeplitz(x.size(1)), x); }

torch::Tensor MeImpl::extract_window(const torch::Tensor& window) {
  return (window * w_ext.narrow(0, 0, window.size(1)).unsqueeze(-1)).sum(1);  // [B, d]
}

torch::Tensor MeImpl::lag_maps(int64_t K) const {
  auto eye = torch::eye(d_model, w_ext.options());
  return w_ext.narrow(0, 0, K).view({K, 1, 1}) * eye;  // w_k I
}

std::shared_ptr<MixerImpl> make_extractor(MixerKind kind, int64_t d, int64_t l) {
  switch (kind) {
    case MixerKind::ExtractorSHE:
      return std::make_shared<SheImpl>(d, l);
    case MixerKind::ExtractorHE:
      return std::make_shared<HeImpl>(d, l);
    case MixerKind::ExtractorWE:
      return std::make_shared<WeImpl>(d, l);
    case MixerKind::ExtractorME:
      return std::make_shared<MeImpl>(d, l);
    default:
      throw std::logic_error(std::string("make_extractor: ") + mixer_info(kind).id + " is not an extractor");
  }
}

}  // namespace hsm
