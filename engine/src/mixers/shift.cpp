#include "mixers/shift.h"

namespace hsm {
namespace {

// Initial mix: half the token, half its shifted partner. The paper does not give an
// initialisation; training moves these far from it (HSM Table 2).
constexpr double kInitWeight = 0.5;

// Splits [B, T, H·hd] into heads [B, T, H, hd].
torch::Tensor heads_view(const torch::Tensor& x, int64_t heads) {
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads});
}

}  // namespace

torch::Tensor shift_right(const torch::Tensor& x, int64_t s) {
  const int64_t T = x.size(1);
  if (s <= 0) return x;
  if (s >= T) return torch::zeros_like(x);
  // Pad s zeros at the front of the time axis and drop the last s steps.
  std::vector<int64_t> pad(2 * (x.dim() - 1), 0);  // pairs from the last dim backwards
  pad[pad.size() - 2] = s;                           // front padding of dim 1
  return torch::constant_pad_nd(x.narrow(1, 0, T - s), pad);
}

// ---- (a,b) --------------------------------------------------------------------------
ShiftABImpl::ShiftABImpl(int64_t shift) : MixerImpl(MixerKind::ShiftAB), shift(shift) {
  a = register_parameter("a", torch::full({}, kInitWeight));
  b = register_parameter("b", torch::full({}, kInitWeight));
}

torch::Tensor ShiftABImpl::forward(const torch::Tensor& x) {
  return a * x + b * shift_right(x, shift);  // [B, T, d]
}

// ---- (a,b) vector -------------------------------------------------------------------
ShiftABVectorImpl::ShiftABVectorImpl(int64_t d, int64_t shift)
    : MixerImpl(MixerKind::ShiftABVector), shift(shift) {
  a = register_parameter("a", torch::full({d}, kInitWeight));
  b = register_parameter("b", torch::full({d}, kInitWeight));
}

torch::Tensor ShiftABVectorImpl::forward(const torch::Tensor& x) {
  return a * x + b * shift_right(x, shift);  // [d] broadcasts over [B, T, d]
}

// ---- (A,B) --------------------------------------------------------------------------
ShiftABMatrixImpl::ShiftABMatrixImpl(int64_t d, int64_t shift)
    : MixerImpl(MixerKind::ShiftABMatrix), shift(shift) {
  A = register_module("A", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)));
  B = register_module("B", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)));
  bias = register_parameter("bias", torch::zeros({d}));
  proj = register_module("proj", torch::nn::Linear(d, d));
  init_linear(A);
  init_linear(B);
  init_linear(proj);
}

torch::Tensor ShiftABMatrixImpl::forward(const torch::Tensor& x) {
  auto u = A->forward(x) + B->forward(shift_right(x, shift)) + bias;  // [B, T, d]
  return proj->forward(u);
}

// ---- gated, single input --------------------------------------------------------------
ShiftGate1Impl::ShiftGate1Impl(int64_t d, int64_t shift) : MixerImpl(MixerKind::ShiftGate1), shift(shift) {
  fc1 = register_module("fc1", torch::nn::Linear(d, d));
  fc2 = register_module("fc2", torch::nn::Linear(d, d));
  init_linear(fc1);
  init_linear(fc2);
}

torch::Tensor ShiftGate1Impl::forward(const torch::Tensor& x) {
  auto g = torch::tanh(fc2->forward(torch::relu(fc1->forward(x))));  // [B, T, d], in [-1, 1]
  return g * x + (1 - g) * shift_right(x, shift);
}

// ---- gated, double input (per head) -----------------------------------------------------
ShiftGate2Impl::ShiftGate2Impl(int64_t d, int64_t heads, int64_t shift)
    : MixerImpl(MixerKind::ShiftGate2), heads(heads), head_dim(d / heads), shift(shift) {
  weight = register_parameter("weight", torch::randn({heads, head_dim, 2 * head_dim}) * 0.02);
  bias = register_parameter("bias", torch::zeros({heads, head_dim}));
}

torch::Tensor ShiftGate2Impl::forward(const torch::Tensor& x) {
  auto xh = heads_view(x, heads);                       // [B, T, H, hd]
  auto xsh = heads_view(shift_right(x, shift), heads);  // [B, T, H, hd]
  auto both = torch::cat({xh, xsh}, -1);                // [B, T, H, 2hd]
  auto g = torch::tanh(torch::einsum("bthi,hoi->btho", {both, weight}) + bias);  // [B, T, H, hd]
  return (g * xh + (1 - g) * xsh).reshape_as(x);
}

// ---- fusion (per head) ---------------------------------------------------------------------
ShiftFusionImpl::ShiftFusionImpl(int64_t d, int64_t heads, int64_t shift)
    : MixerImpl(MixerKind::ShiftFusion), heads(heads), head_dim(d / heads), shift(shift) {
  w1 = register_parameter("w1", torch::randn({heads, head_dim, 2 * head_dim}) * 0.02);
  b1 = register_parameter("b1", torch::zeros({heads, head_dim}));
  w2 = register_parameter("w2", torch::randn({heads, head_dim, head_dim}) * 0.02);
  b2 = register_parameter("b2", torch::zeros({heads, head_dim}));
}

torch::Tensor ShiftFusionImpl::forward(const torch::Tensor& x) {
  auto both = torch::cat({heads_view(x, heads), heads_view(shift_right(x, shift), heads)}, -1);  // [B,T,H,2hd]
  auto hidden = torch::relu(torch::einsum("bthi,hoi->btho", {both, w1}) + b1);                  // [B,T,H,hd]
  return (torch::einsum("bthi,hoi->btho", {hidden, w2}) + b2).reshape_as(x);
}

// ---- (a,b) multihead / multihead-ext ----------------------------------------------------
ShiftABMultiheadImpl::ShiftABMultiheadImpl(MixerKind kind, int64_t d, std::vector<int64_t> shifts_)
    : MixerImpl(kind), shifts(std::move(shifts_)) {
  const auto H = static_cast<int64_t>(shifts.size());
  head_dim = d / H;
  a = register_parameter("a", torch::full({H}, kInitWeight));
  b = register_parameter("b", torch::full({H}, kInitWeight));
}

torch::Tensor ShiftABMultiheadImpl::forward(const torch::Tensor& x) {
  const auto H = static_cast<int64_t>(shifts.size());
  auto xh = heads_view(x, H);  // [B, T, H, hd]
  std::vector<torch::Tensor> shifted;
  shifted.reserve(H);
  for (int64_t j = 0; j < H; ++j) shifted.push_back(shift_right(xh.select(2, j), shifts[j]));  // [B, T, hd]
  auto xsh = torch::stack(shifted, 2);                                                       // [B, T, H, hd]
  auto y = a.view({H, 1}) * xh + b.view({H, 1}) * xsh;
  return y.reshape_as(x);
}

}  // namespace hsm
