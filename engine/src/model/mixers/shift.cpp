#include "model/mixers/shift.h"
#include "model/parallel_gemm.h"

#include <algorithm>

namespace hsm {
namespace {

// Initial mix: half the token, half its shifted partner. The paper gives no
// initialisation; training moves these far from it (HSM Table 2).
constexpr double kInitWeight = 0.5;

// [..., H·hd] -> [..., H, hd]
torch::Tensor split_heads(const torch::Tensor& x, int64_t heads) {
  auto sizes = x.sizes().vec();
  sizes.back() /= heads;
  sizes.insert(sizes.end() - 1, heads);
  return x.reshape(sizes);
}

}  // namespace

torch::Tensor shift_right(const torch::Tensor& x, int64_t s) {
  const int64_t T = x.size(1);
  if (s <= 0) return x;
  if (s >= T) return torch::zeros_like(x);
  // Pad s zeros at the front of the time axis and drop the last s steps.
  std::vector<int64_t> pad(2 * (x.dim() - 1), 0);  // (front, back) pairs from the last dim backwards
  pad[pad.size() - 2] = s;                           // front padding of dim 1
  return torch::constant_pad_nd(x.narrow(1, 0, T - s), pad);
}

// ---- shared shift machinery ---------------------------------------------------------------
ShiftMixerImpl::ShiftMixerImpl(MixerKind kind, int64_t d, std::vector<int64_t> shifts_)
    : MixerImpl(kind), shifts(std::move(shifts_)), d_model(d) {}

torch::Tensor ShiftMixerImpl::shifted(const torch::Tensor& x) const {
  if (shifts.size() == 1) return shift_right(x, shifts[0]);
  const auto H = static_cast<int64_t>(shifts.size());
  auto xh = split_heads(x, H);  // [B, T, H, hd]
  std::vector<torch::Tensor> per_head;
  per_head.reserve(H);
  for (int64_t j = 0; j < H; ++j) per_head.push_back(shift_right(xh.select(2, j), shifts[j]));  // [B, T, hd]
  return torch::stack(per_head, 2).reshape_as(x);
}

torch::Tensor ShiftMixerImpl::forward(const torch::Tensor& x) { return mix(x, shifted(x)); }

// The ring holds the last R inputs; a shift s >= context never reads anything (pos < context).
static int64_t ring_size(const std::vector<int64_t>& shifts, int64_t context) {
  return std::min(*std::max_element(shifts.begin(), shifts.end()), context);
}

torch::Tensor ShiftMixerImpl::prefill(const torch::Tensor& x, MixerCache& cache, int64_t context) {
  const int64_t T = x.size(1), R = ring_size(shifts, context), first = std::max<int64_t>(0, T - R);
  cache.ring = torch::zeros({x.size(0), R, d_model}, x.options());
  // Position p lives at p % R, as step() would have left it.
  auto slots = torch::arange(first, T, torch::TensorOptions().dtype(torch::kLong).device(x.device())).remainder(R);
  cache.ring.index_copy_(1, slots, x.narrow(1, first, T - first));
  return forward(x);
}

torch::Tensor ShiftMixerImpl::step(const torch::Tensor& x_t, MixerCache& cache, int64_t pos, int64_t context) {
  const int64_t R = ring_size(shifts, context);
  if (!cache.ring.defined()) cache.ring = torch::zeros({x_t.size(0), R, d_model}, x_t.options());
  auto read = [&](int64_t s) {  // x[pos - s] as [B, d], or zeros before the sequence start
    return pos >= s ? cache.ring.select(1, (pos - s) % R) : torch::zeros_like(x_t);
  };
  torch::Tensor xs;
  if (shifts.size() == 1) {
    xs = read(shifts[0]).clone();
  } else {
    const auto H = static_cast<int64_t>(shifts.size());
    const int64_t hd = d_model / H;
    std::vector<torch::Tensor> per_head;
    for (int64_t j = 0; j < H; ++j) per_head.push_back(read(shifts[j]).narrow(1, j * hd, hd));
    xs = torch::cat(per_head, 1);  // [B, d]
  }
  cache.ring.select(1, pos % R).copy_(x_t);
  return mix(x_t, xs);
}

// ---- (a,b) --------------------------------------------------------------------------
ShiftABImpl::ShiftABImpl(int64_t d, int64_t shift) : ShiftMixerImpl(MixerKind::ShiftAB, d, {shift}), shift(shift) {
  a = register_parameter("a", torch::full({}, kInitWeight));
  b = register_parameter("b", torch::full({}, kInitWeight));
}

torch::Tensor ShiftABImpl::mix(const torch::Tensor& x, const torch::Tensor& xs) { return a * x + b * xs; }

// ---- (a,b) vector -------------------------------------------------------------------
ShiftABVectorImpl::ShiftABVectorImpl(int64_t d, int64_t shift)
    : ShiftMixerImpl(MixerKind::ShiftABVector, d, {shift}), shift(shift) {
  a = register_parameter("a", torch::full({d}, kInitWeight));
  b = register_parameter("b", torch::full({d}, kInitWeight));
}

torch::Tensor ShiftABVectorImpl::mix(const torch::Tensor& x, const torch::Tensor& xs) {
  return a * x + b * xs;  // [d] broadcasts over [..., d]
}

// ---- (A,B) --------------------------------------------------------------------------
ShiftABMatrixImpl::ShiftABMatrixImpl(int64_t d, int64_t shift)
    : ShiftMixerImpl(MixerKind::ShiftABMatrix, d, {shift}), shift(shift) {
  A = register_module("A", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)));
  B = register_module("B", torch::nn::Linear(torch::nn::LinearOptions(d, d).bias(false)));
  bias = register_parameter("bias", torch::zeros({d}));
  proj = register_module("proj", torch::nn::Linear(d, d));
  init_linear(A);
  init_linear(B);
  init_linear(proj);
}

torch::Tensor ShiftABMatrixImpl::mix(const torch::Tensor& x, const torch::Tensor& xs) {
  return linear(proj, linear(A, x) + linear(B, xs) + bias);
}

// ---- gated, single input --------------------------------------------------------------
ShiftGate1Impl::ShiftGate1Impl(int64_t d, int64_t shift)
    : ShiftMixerImpl(MixerKind::ShiftGate1, d, {shift}), shift(shift) {
  fc1 = register_module("fc1", torch::nn::Linear(d, d));
  fc2 = register_module("fc2", torch::nn::Linear(d, d));
  init_linear(fc1);
  init_linear(fc2);
}

torch::Tensor ShiftGate1Impl::mix(const torch::Tensor& x, const torch::Tensor& xs) {
  auto g = torch::tanh(linear(fc2, torch::relu(linear(fc1, x))));  // in [-1, 1]
  return g * x + (1 - g) * xs;
}

// ---- gated, double input (per head) -----------------------------------------------------
ShiftGate2Impl::ShiftGate2Impl(int64_t d, int64_t heads, int64_t shift)
    : ShiftMixerImpl(MixerKind::ShiftGate2, d, {shift}), heads(heads), head_dim(d / heads), shift(shift) {
  weight = register_parameter("weight", torch::randn({heads, head_dim, 2 * head_dim}) * 0.02);
  bias = register_parameter("bias", torch::zeros({heads, head_dim}));
}

torch::Tensor ShiftGate2Impl::mix(const torch::Tensor& x, const torch::Tensor& xs) {
  auto xh = split_heads(x, heads), xsh = split_heads(xs, heads);               // [..., H, hd]
  auto both = torch::cat({xh, xsh}, -1);                                         // [..., H, 2hd]
  auto g = torch::tanh(torch::einsum("...hi,hoi->...ho", {both, weight}) + bias);  // [..., H, hd]
  return (g * xh + (1 - g) * xsh).reshape_as(x);
}

// ---- fusion (per head) ---------------------------------------------------------------------
ShiftFusionImpl::ShiftFusionImpl(int64_t d, int64_t heads, int64_t shift)
    : ShiftMixerImpl(MixerKind::ShiftFusion, d, {shift}), heads(heads), head_dim(d / heads), shift(shift) {
  w1 = register_parameter("w1", torch::randn({heads, head_dim, 2 * head_dim}) * 0.02);
  b1 = register_parameter("b1", torch::zeros({heads, head_dim}));
  w2 = register_parameter("w2", torch::randn({heads, head_dim, head_dim}) * 0.02);
  b2 = register_parameter("b2", torch::zeros({heads, head_dim}));
}

torch::Tensor ShiftFusionImpl::mix(const torch::Tensor& x, const torch::Tensor& xs) {
  auto both = torch::cat({split_heads(x, heads), split_heads(xs, heads)}, -1);   // [..., H, 2hd]
  auto hidden = torch::relu(torch::einsum("...hi,hoi->...ho", {both, w1}) + b1);  // [..., H, hd]
  return (torch::einsum("...hi,hoi->...ho", {hidden, w2}) + b2).reshape_as(x);
}

// ---- (a,b) multihead / multihead-ext ----------------------------------------------------
ShiftABMultiheadImpl::ShiftABMultiheadImpl(MixerKind kind, int64_t d, std::vector<int64_t> shifts_)
    : ShiftMixerImpl(kind, d, std::move(shifts_)) {
  const auto H = static_cast<int64_t>(shifts.size());
  head_dim = d / H;
  a = register_parameter("a", torch::full({H}, kInitWeight));
  b = register_parameter("b", torch::full({H}, kInitWeight));
}

torch::Tensor ShiftABMultiheadImpl::mix(const torch::Tensor& x, const torch::Tensor& xs) {
  const auto H = static_cast<int64_t>(shifts.size());
  auto y = a.view({H, 1}) * split_heads(x, H) + b.view({H, 1}) * split_heads(xs, H);  // [..., H, hd]
  return y.reshape_as(x);
}

}  // namespace hsm
