#include "model/mixers/shift.h"
#include "kernels/parallel_gemm.h"
#include "model/cuda_fused.h"

#include <algorithm>

#include <ATen/Parallel.h>

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

// y[t] = a ⊙ x[t] + b ⊙ x[t − s] (the second term 0 for t < s) for x [B, T, d] and a, b
// scalars or [d]: HSM (a,b) and (a,b) vector in one pass over x, where shift_right + two
// multiplies + an add made four passes and a padded copy; the backward pass
//   dx[t] = a ⊙ g[t] + b ⊙ g[t + s],  da = Σ g[t] ⊙ x[t],  db = Σ g[t] ⊙ x[t − s]
// in one pass over g and x instead of about eight. The sums over positions are taken per
// sequence in double and then added in sequence order, so threads do not change them.
struct FusedShiftMix : torch::autograd::Function<FusedShiftMix> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& a,
                               const torch::Tensor& b, int64_t s) {
    const int64_t T = x.size(1), d = x.size(2);
    const auto av = a.expand({d}).contiguous(), bv = b.expand({d}).contiguous();
    auto y = torch::empty_like(x);
    const float* X = x.data_ptr<float>();
    const float* A = av.data_ptr<float>();
    const float* Bw = bv.data_ptr<float>();
    float* Y = y.data_ptr<float>();
    at::parallel_for(0, x.size(0) * T, 64, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const float* xr = X + r * d;
        float* yr = Y + r * d;
        if (r % T >= s) {
          const float* xs = xr - s * d;
          for (int64_t c = 0; c < d; ++c) yr[c] = A[c] * xr[c] + Bw[c] * xs[c];
        } else {
          for (int64_t c = 0; c < d; ++c) yr[c] = A[c] * xr[c];
        }
      }
    });
    ctx->save_for_backward({x, a, b});
    ctx->saved_data["s"] = s;
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &a = saved[1], &b = saved[2];
    const int64_t s = ctx->saved_data["s"].toInt();
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2);
    const auto g = grads[0].contiguous();
    const auto av = a.expand({d}).contiguous(), bv = b.expand({d}).contiguous();
    auto dx = torch::empty_like(x);
    std::vector<double> da(static_cast<size_t>(B * d), 0.0), db(static_cast<size_t>(B * d), 0.0);
    const float *X = x.data_ptr<float>(), *G = g.data_ptr<float>(), *A = av.data_ptr<float>(), *Bw = bv.data_ptr<float>();
    float* DX = dx.data_ptr<float>();
    at::parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t seq = b0; seq < b1; ++seq) {
        double* sa = da.data() + seq * d;
        double* sb = db.data() + seq * d;
        for (int64_t t = 0; t < T; ++t) {
          const int64_t r = seq * T + t;
          const float *gr = G + r * d, *xr = X + r * d;
          float* dxr = DX + r * d;
          if (t + s < T) {
            const float* gs = gr + s * d;
            for (int64_t c = 0; c < d; ++c) dxr[c] = A[c] * gr[c] + Bw[c] * gs[c];
          } else {
            for (int64_t c = 0; c < d; ++c) dxr[c] = A[c] * gr[c];
          }
          for (int64_t c = 0; c < d; ++c) sa[c] += static_cast<double>(gr[c]) * xr[c];
          if (t >= s) {
            const float* xs = xr - s * d;
            for (int64_t c = 0; c < d; ++c) sb[c] += static_cast<double>(gr[c]) * xs[c];
          }
        }
      }
    });
    // Per channel, then (scalar a, b) over channels, in a fixed order.
    auto reduce = [&](const std::vector<double>& part, const torch::Tensor& like) {
      std::vector<double> channel(static_cast<size_t>(d), 0.0);
      for (int64_t seq = 0; seq < B; ++seq)
        for (int64_t c = 0; c < d; ++c) channel[static_cast<size_t>(c)] += part[static_cast<size_t>(seq * d + c)];
      if (like.dim() == 0) {
        double total = 0;
        for (double v : channel) total += v;
        return torch::full({}, total, like.options());
      }
      return torch::tensor(std::vector<float>(channel.begin(), channel.end()), like.options());
    };
    return {dx, reduce(da, a), reduce(db, b), torch::Tensor()};
  }
};

// The fused path's conditions: a whole sequence [B, T, d] of fp32 CPU tensors, shift >= 1.
bool fused_shift_mix(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b, int64_t s) {
  return x.dim() == 3 && x.is_cpu() && x.scalar_type() == torch::kFloat32 && a.scalar_type() == torch::kFloat32 &&
         b.scalar_type() == torch::kFloat32 && a.is_cpu() && b.is_cpu() && s >= 1;
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

torch::Tensor ShiftMixerImpl::forward(const torch::Tensor& x) { return zero_head_channels(mix(x, shifted(x))); }

torch::Tensor ShiftMixerImpl::zero_head_channels(const torch::Tensor& y) const {
  if (zeroed_heads().empty()) return y;
  return zero_heads(split_heads(y, separable_heads()), -2).reshape_as(y);  // [..., H, hd] -> [..., d]
}

// The ring holds the last R inputs; a shift s >= context never reads anything (pos < context).
static int64_t ring_size(const std::vector<int64_t>& shifts, int64_t context) {
  return std::min(*std::max_element(shifts.begin(), shifts.end()), context);
}

torch::Tensor ShiftMixerImpl::prefill(const torch::Tensor& x, MixerState& state, int64_t context) {
  auto& cache = state_of<ShiftState>(state);
  const int64_t T = x.size(1), R = ring_size(shifts, context), first = std::max<int64_t>(0, T - R);
  cache.ring = torch::zeros({x.size(0), R, d_model}, x.options());
  // Position p lives at p % R, as step() would have left it.
  auto slots = torch::arange(first, T, torch::TensorOptions().dtype(torch::kLong).device(x.device())).remainder(R);
  cache.ring.index_copy_(1, slots, x.narrow(1, first, T - first));
  return forward(x);
}

torch::Tensor ShiftMixerImpl::step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) {
  auto& cache = state_of<ShiftState>(state);
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
  return zero_head_channels(mix(x_t, xs));
}

// ---- (a,b) --------------------------------------------------------------------------
ShiftABImpl::ShiftABImpl(MixerKind kind, int64_t d, int64_t shift) : ShiftMixerImpl(kind, d, {shift}), shift(shift) {
  a = register_parameter("a", torch::full({}, kInitWeight));
  b = register_parameter("b", torch::full({}, kInitWeight));
}

torch::Tensor ShiftABImpl::mix(const torch::Tensor& x, const torch::Tensor& xs) { return a * x + b * xs; }

torch::Tensor ShiftABImpl::forward(const torch::Tensor& x) {
  if (torch::GradMode::is_enabled() && zeroed_heads().empty() && cuda_fused::eligible_shift_mix(x, a, b, shift))
    return cuda_fused::shift_mix(x, a, b, shift);  // one kernel each way on CUDA
  if (!fused_shift_mix(x, a, b, shift)) return ShiftMixerImpl::forward(x);
  return FusedShiftMix::apply(x.contiguous(), a, b, shift);
}

// ---- (a,b) vector -------------------------------------------------------------------
ShiftABVectorImpl::ShiftABVectorImpl(MixerKind kind, int64_t d, int64_t shift)
    : ShiftMixerImpl(kind, d, {shift}), shift(shift) {
  a = register_parameter("a", torch::full({d}, kInitWeight));
  b = register_parameter("b", torch::full({d}, kInitWeight));
}

torch::Tensor ShiftABVectorImpl::mix(const torch::Tensor& x, const torch::Tensor& xs) {
  return a * x + b * xs;  // [d] broadcasts over [..., d]
}

torch::Tensor ShiftABVectorImpl::forward(const torch::Tensor& x) {
  if (torch::GradMode::is_enabled() && zeroed_heads().empty() && cuda_fused::eligible_shift_mix(x, a, b, shift))
    return cuda_fused::shift_mix(x, a, b, shift);  // one kernel each way on CUDA
  if (!fused_shift_mix(x, a, b, shift)) return ShiftMixerImpl::forward(x);
  return FusedShiftMix::apply(x.contiguous(), a, b, shift);
}

// ---- (A,B) --------------------------------------------------------------------------
ShiftABMatrixImpl::ShiftABMatrixImpl(MixerKind kind, int64_t d, int64_t shift)
    : ShiftMixerImpl(kind, d, {shift}), shift(shift) {
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
ShiftGate1Impl::ShiftGate1Impl(MixerKind kind, int64_t d, int64_t shift)
    : ShiftMixerImpl(kind, d, {shift}), shift(shift) {
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
ShiftGate2Impl::ShiftGate2Impl(MixerKind kind, int64_t d, int64_t heads, int64_t shift)
    : ShiftMixerImpl(kind, d, {shift}), heads(heads), head_dim(d / heads), shift(shift) {
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
ShiftFusionImpl::ShiftFusionImpl(MixerKind kind, int64_t d, int64_t heads, int64_t shift)
    : ShiftMixerImpl(kind, d, {shift}), heads(heads), head_dim(d / heads), shift(shift) {
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
