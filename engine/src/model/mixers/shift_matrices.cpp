// The shift mixers' diagnostics (docs/diagnostics.md): per head, a band matrix
// with the gain on x_i on the diagonal and the gain on x_{i−s} on the s-th sub-diagonal,
// exact for the linear variants and by autograd (‖∂y_i/∂x_k‖_F) for the others; and their
// learned weights for the Weights view.
#include <stdexcept>

#include "model/mixers/shift.h"

namespace hsm {
namespace {

std::vector<float> to_floats(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// A learned a and b set to new values in place (the registered parameters stay themselves):
// one value fills every entry, else one value per entry. Both sizes are checked first, so a
// refusal changes nothing.
void assign_ab(torch::Tensor& a, torch::Tensor& b, const std::vector<float>& av, const std::vector<float>& bv) {
  auto check = [](const torch::Tensor& t, const std::vector<float>& v, const char* name) {
    const auto n = static_cast<size_t>(t.numel());
    if (v.size() != 1 && v.size() != n)
      throw std::invalid_argument(std::string(name) + " takes 1 value" +
                                  (n > 1 ? " (all entries) or " + std::to_string(n) + " (one per entry)" : "") +
                                  ", got " + std::to_string(v.size()));
  };
  check(a, av, "a");
  check(b, bv, "b");
  torch::NoGradGuard no_grad;
  auto put = [](torch::Tensor& t, const std::vector<float>& v) {
    if (v.size() == 1) t.fill_(static_cast<double>(v[0]));
    else t.copy_(torch::tensor(v, torch::kFloat32).view(t.sizes()));
  };
  put(a, av);
  put(b, bv);
}

std::vector<double> to_doubles(const torch::Tensor& t) {
  auto c = t.detach().to(torch::kCPU, torch::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// [L, L] with `diag` on the diagonal and `sub` on the s-th sub-diagonal (absent when s >= L).
torch::Tensor band(const torch::Tensor& diag, const torch::Tensor& sub, int64_t s) {
  const int64_t L = diag.size(0);
  auto m = torch::diag(diag);
  if (s < L) m = m + torch::diag(sub.narrow(0, s, L - s), -s);
  return m;
}

// RMS gain of a linear map given as a weight matrix or a diagonal: ‖M‖_F / √(columns).
double rms_gain(const torch::Tensor& m, int64_t columns) {
  return m.detach().norm().item<double>() / std::sqrt(static_cast<double>(columns));
}

}  // namespace

int64_t head_shift(const ShiftMixerImpl& mixer, int64_t head) {
  return mixer.shifts.size() > 1 ? mixer.shifts.at(static_cast<size_t>(head)) : mixer.shifts.at(0);
}

ShiftMixerImpl::LinearGains ShiftMixerImpl::linear_gains() const {
  throw std::invalid_argument(std::string("linear_maps: mixer ") + mixer_info(kind).id + " is not linear in x");
}
ShiftMixerImpl::LinearGains ShiftABImpl::linear_gains() const { return {{a.item<double>()}, {b.item<double>()}}; }
ShiftMixerImpl::LinearGains ShiftABVectorImpl::linear_gains() const {
  return {{rms_gain(a, d_model)}, {rms_gain(b, d_model)}};
}
ShiftMixerImpl::LinearGains ShiftABMatrixImpl::linear_gains() const {
  // y_i = W (A x_i + B x_{i-s} + bias) + c: blocks W·A on the diagonal, W·B below.
  const auto& W = proj->weight;
  return {{rms_gain(torch::matmul(W, A->weight), d_model)}, {rms_gain(torch::matmul(W, B->weight), d_model)}};
}
ShiftMixerImpl::LinearGains ShiftABMultiheadImpl::linear_gains() const { return {to_doubles(a), to_doubles(b)}; }

torch::Tensor linear_maps(const ShiftMixerImpl& mixer, int64_t L) {
  torch::NoGradGuard no_grad;
  const auto gains = mixer.linear_gains();
  std::vector<torch::Tensor> heads;
  for (size_t h = 0; h < gains.own.size(); ++h)
    heads.push_back(band(torch::full({L}, gains.own[h]), torch::full({L}, gains.shifted[h]),
                         head_shift(mixer, static_cast<int64_t>(h))));
  return torch::stack(heads);
}

torch::Tensor jacobian_norms(ShiftMixerImpl& mixer, const torch::Tensor& x) {
  torch::AutoGradMode grad_mode(true);
  const int64_t L = x.size(1), d = x.size(2), H = mixer.heads_shown(), hd = d / H;
  auto x0 = x.detach().squeeze(0);                  // [L, d]
  auto xs0 = mixer.shifted(x.detach()).squeeze(0);  // [L, d]: x_{i-s} per head's channels
  // Batch element c of a chunk differentiates output channel c0 + c at every position at
  // once (a shift mixer is position-wise), giving ∂y[i, c]/∂x[i, :] and ∂y[i, c]/∂xs[i, :].
  // Chunks keep the [n, L, d] copies near 4M values.
  const int64_t chunk = std::max<int64_t>(1, std::min<int64_t>(d, (int64_t{1} << 22) / std::max<int64_t>(1, L * d)));
  std::vector<torch::Tensor> sq_x, sq_s;  // per chunk: [n, L, H], squares summed over each head's input channels
  for (int64_t c0 = 0; c0 < d; c0 += chunk) {
    const int64_t n = std::min(chunk, d - c0);
    auto X = x0.unsqueeze(0).expand({n, L, d}).clone().requires_grad_(true);
    auto Xs = xs0.unsqueeze(0).expand({n, L, d}).clone().requires_grad_(true);
    auto Y = mixer.mix(X, Xs);                            // [n, L, d]
    auto pick = torch::eye(n, x.options()).unsqueeze(1);  // [n, 1, n]
    auto out = (Y.narrow(2, c0, n) * pick).sum();
    auto g = torch::autograd::grad({out}, {X, Xs});  // 2 × [n, L, d]
    sq_x.push_back(g[0].pow(2).reshape({n, L, H, hd}).sum(-1));
    sq_s.push_back(g[1].pow(2).reshape({n, L, H, hd}).sum(-1));
  }
  auto gx = torch::cat(sq_x), gs = torch::cat(sq_s);  // [d, L, H]: output channel, position, input head
  std::vector<torch::Tensor> heads;
  for (int64_t h = 0; h < H; ++h) {
    auto own = [&](const torch::Tensor& g) { return g.narrow(0, h * hd, hd).select(2, h).sum(0).sqrt(); };  // [L]
    heads.push_back(band(own(gx), own(gs), head_shift(mixer, h)));
  }
  return torch::stack(heads).detach();  // [H, L, L]
}

MixerImpl::MixingMatrices ShiftMixerImpl::mixing_matrices(const torch::Tensor& x, const torch::Tensor&) {
  MixingMatrices m;
  m.matrices = mixer_info(kind).matrix == MatrixKind::kLinear ? linear_maps(*this, x.size(1)) : jacobian_norms(*this, x);
  for (int64_t h = 0; h < m.matrices.size(0); ++h) m.shifts.push_back(head_shift(*this, h));
  return m;
}

void ShiftMixerImpl::learned_weights(MixerWeights& w) const { w.shifts = shifts; }

void ShiftABImpl::learned_weights(MixerWeights& w) const {
  ShiftMixerImpl::learned_weights(w);
  w.a = to_floats(a), w.b = to_floats(b);
}
void ShiftABVectorImpl::learned_weights(MixerWeights& w) const {
  ShiftMixerImpl::learned_weights(w);
  w.a = to_floats(a), w.b = to_floats(b);
}
void ShiftABMultiheadImpl::learned_weights(MixerWeights& w) const {
  ShiftMixerImpl::learned_weights(w);
  w.a = to_floats(a), w.b = to_floats(b);
}

bool ShiftABImpl::set_ab(const std::vector<float>& av, const std::vector<float>& bv) {
  assign_ab(a, b, av, bv);
  return true;
}
bool ShiftABVectorImpl::set_ab(const std::vector<float>& av, const std::vector<float>& bv) {
  assign_ab(a, b, av, bv);
  return true;
}
bool ShiftABMultiheadImpl::set_ab(const std::vector<float>& av, const std::vector<float>& bv) {
  assign_ab(a, b, av, bv);
  return true;
}

}  // namespace hsm
