#include "model/mixers/extractors.h"
#include "model/mixers/lag_mix.h"
#include "kernels/parallel_gemm.h"

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

}  // namespace

// ---- shared --------------------------------------------------------------------------------
ExtractorImpl::ExtractorImpl(MixerKind kind, int64_t d, int64_t l, bool adjusted)
    : MixerImpl(kind), d_model(d), context(l) {
  if (l <= 0)
    throw std::invalid_argument(std::string("extractor ") + mixer_info(kind).id +
                                " needs the model's context length (got " + std::to_string(l) + ")");
  if (adjusted) {
    adj = register_module("adj", square_map(d));
    out = register_module("out", square_map(d));
  }
}

torch::Tensor ExtractorImpl::finish(const torch::Tensor& x, const torch::Tensor& e) {
  if (!adj) return e;                        // ME: the extraction is the output
  return linear(out, linear(adj, x) * e);  // eq. 24, 25
}

torch::Tensor ExtractorImpl::forward(const torch::Tensor& x) { return finish(x, extract(extraction_input(x))); }

torch::Tensor ExtractorImpl::prefill(const torch::Tensor& x, MixerState& state, int64_t) {
  auto& cache = state_of<ExtractorState>(state);
  const int64_t T = x.size(1), first = std::max<int64_t>(0, T - context);
  auto u = extraction_input(x);  // [B, T, d]
  cache.ring = torch::zeros({x.size(0), context, d_model}, x.options());
  // Position p lives at p % l, as step() would have left it.
  auto slots =
      torch::arange(first, T, torch::TensorOptions().dtype(torch::kLong).device(x.device())).remainder(context);
  cache.ring.index_copy_(1, slots, u.narrow(1, first, T - first));
  return finish(x, extract(u));
}

torch::Tensor ExtractorImpl::step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t) {
  auto& cache = state_of<ExtractorState>(state);
  if (!cache.ring.defined()) cache.ring = torch::zeros({x_t.size(0), context, d_model}, x_t.options());
  cache.ring.select(1, pos % context).copy_(extraction_input(x_t));
  const int64_t K = std::min(pos + 1, context);
  auto window = cache.ring.index_select(1, window_slots(pos, K, context, x_t.device()));  // [B, K, d]
  return finish(x_t, extract_window(window));
}

// ---- SHE -----------------------------------------------------------------------------------
SheImpl::SheImpl(MixerKind kind, int64_t d, int64_t l) : ExtractorImpl(kind, d, l) {
  w_ext = register_parameter("w_ext", torch::randn({l, d, d}) * kInitStd);
}

torch::Tensor SheImpl::extract(const torch::Tensor& x) { return dense_lag_mix(x, w_ext); }

torch::Tensor SheImpl::extract_window(const torch::Tensor& window) {
  const int64_t B = window.size(0), K = window.size(1), d = window.size(2);
  return torch::matmul(window.reshape({B, K * d}), w_ext.narrow(0, 0, K).reshape({K * d, d}));  // [B, d]
}

torch::Tensor SheImpl::lag_maps(int64_t K) const { return w_ext.narrow(0, 0, K); }

// ---- WE ------------------------------------------------------------------------------------
WeImpl::WeImpl(MixerKind kind, int64_t d, int64_t l) : ExtractorImpl(kind, d, l) {
  w_ext = register_parameter("w_ext", torch::randn({l, d}) * kInitStd);
}

torch::Tensor WeImpl::extract(const torch::Tensor& u) { return depthwise_lag_mix(u, w_ext); }

torch::Tensor WeImpl::extract_window(const torch::Tensor& window) {
  return (window * w_ext.narrow(0, 0, window.size(1))).sum(1);  // [B, K, d] ⊙ [K, d] -> [B, d]
}

torch::Tensor WeImpl::lag_maps(int64_t K) const { return torch::diag_embed(w_ext.narrow(0, 0, K)); }

// ---- HE ------------------------------------------------------------------------------------
HeImpl::HeImpl(MixerKind kind, int64_t d, int64_t l) : WeImpl(kind, d, l) {
  in_ext = register_module("in_ext", square_map(d));
}

torch::Tensor HeImpl::extraction_input(const torch::Tensor& x) { return linear(in_ext, x); }

torch::Tensor HeImpl::lag_maps(int64_t K) const {
  // x ↦ (x W_in_ext) ⊙ w_k = x (W_in_ext diag(w_k)); W_in_ext = in_ext.weightᵀ.
  return in_ext->weight.t().unsqueeze(0) * w_ext.narrow(0, 0, K).unsqueeze(1);  // [K, d, d]
}

// ---- ME ------------------------------------------------------------------------------------
MeImpl::MeImpl(MixerKind kind, int64_t d, int64_t l) : ExtractorImpl(kind, d, l, /*adjusted=*/false) {
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


// ---- diagnostics ---------------------------------------------------------------------------

namespace {
torch::Tensor check_window(const torch::Tensor& x, int64_t context) {
  const int64_t L = x.size(1);
  if (L > context)
    throw std::invalid_argument("extractor diagnostics: " + std::to_string(L) + " positions exceed the context " +
                                std::to_string(context));
  return x;
}
}  // namespace

MixerImpl::MixingMatrices ExtractorImpl::mixing_matrices(const torch::Tensor& x, const torch::Tensor&) {
  torch::NoGradGuard no_grad;
  const int64_t L = check_window(x, context).size(1);
  auto pos = torch::arange(L, torch::TensorOptions().dtype(torch::kLong).device(x.device()));
  auto lag = (pos.unsqueeze(1) - pos.unsqueeze(0));  // [L, L]: i − k
  auto below = (lag >= 0).to(x.dtype());
  auto x0 = x.squeeze(0);                          // [L, d]
  auto E = lag_maps(L).to(x.dtype());              // [L, d, d]: E_k at k − 1, rows = input channels
  auto Wo = out->weight.t().to(x.dtype());         // [d, d]: W_out, (c, o)
  auto Wa = adj->weight.t().to(x.dtype());         // W_adj
  auto a = torch::matmul(x0, Wa);                  // [L, d]
  auto e = extract(extraction_input(x)).squeeze(0);  // [L, d]
  // k < i: ‖W_outᵀ diag(a_i) E_lagᵀ‖²_F = a_iᵀ ((W_out W_outᵀ) ∘ (E_lagᵀ E_lag)) a_i
  auto G = torch::matmul(Wo, Wo.t());                               // [d, d]
  auto K = G.unsqueeze(0) * torch::matmul(E.transpose(1, 2), E);    // [L, d, d]
  auto Q = torch::einsum("ic,lcb,ib->il", {a, K, a}).clamp_min(0);  // [L (output i), L (lag)]
  auto M = Q.gather(1, lag.clamp_min(0)).sqrt() * below;            // [L, L]
  // k = i: both terms, explicitly: ‖(E_1 diag(a_i) + W_adj diag(e_i)) W_out‖_F
  auto own = torch::matmul(E[0].unsqueeze(0) * a.unsqueeze(1) + Wa.unsqueeze(0) * e.unsqueeze(1), Wo);  // [L, d, d]
  M = M * (1 - torch::eye(L, x.options())) + torch::diag(own.pow(2).sum({1, 2}).sqrt());
  return {M.unsqueeze(0), {-1}};
}

MixerImpl::MixingMatrices MeImpl::mixing_matrices(const torch::Tensor& x, const torch::Tensor&) {
  torch::NoGradGuard no_grad;
  return {toeplitz(check_window(x, context).size(1)).unsqueeze(0), {-1}};
}

void ExtractorImpl::learned_weights(MixerWeights& w) const {
  torch::NoGradGuard no_grad;
  auto t = lag_weights().detach().to(torch::kCPU, torch::kFloat32).contiguous();
  w.lag_weights.assign(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
}

torch::Tensor SheImpl::lag_weights() const { return w_ext.pow(2).mean({1, 2}).sqrt(); }
torch::Tensor WeImpl::lag_weights() const { return w_ext.abs().mean(1); }
torch::Tensor MeImpl::lag_weights() const { return w_ext; }

}  // namespace hsm
