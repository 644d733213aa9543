#pragma once
// The Hierarchical Shift Mixing family (HSM §3–4, §7). A layer at stack position l mixes
// token t with token t - s, s = 2^l, where x_shifted[t] = x[t - s] (0 for t < s); the
// multihead variants give each head its own shift.
#include "mixers/mixer.h"

namespace hsm {

// HSM (a,b), eq. 1: y = a·x + b·x_shifted; a, b scalars per layer. Linear in x: its
// mixing matrix is a on the diagonal and b on the s-th sub-diagonal.
struct ShiftABImpl : MixerImpl {
  explicit ShiftABImpl(int64_t shift);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::Tensor a, b;  // [] scalars
  int64_t shift;
};

// HSM (a,b) vector, eq. 2: y = a⊙x + b⊙x_shifted; a, b ∈ R^d.
struct ShiftABVectorImpl : MixerImpl {
  ShiftABVectorImpl(int64_t d_model, int64_t shift);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::Tensor a, b;  // [d]
  int64_t shift;
};

// HSM (A,B), eq. 3: u = A x + B x_shifted + bias, followed by the mixer's output
// projection y = W u + c. A and B replace GPT's value mapping L_V (§3.3); the output
// projection after the mix stays, as in the GPT mixer of Figure 2. With it the paper's
// (A,B) model with FFN 640 has 5.0M parameters like the others (without it, 4.5M).
struct ShiftABMatrixImpl : MixerImpl {
  ShiftABMatrixImpl(int64_t d_model, int64_t shift);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::nn::Linear A{nullptr}, B{nullptr}, proj{nullptr};
  torch::Tensor bias;  // [d]
  int64_t shift;
};

// Gated weighting, single input, eq. 4: g = tanh(mlp(x)), mlp = Linear(d,d)→ReLU→Linear(d,d);
// y = g⊙x + (1 - g)⊙x_shifted.
struct ShiftGate1Impl : MixerImpl {
  ShiftGate1Impl(int64_t d_model, int64_t shift);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  int64_t shift;
};

// Gated weighting, double input, eq. 5, per head (§4): g = tanh(L(concat(x_h, xs_h))),
// L: 2·hd → hd; y_h = g⊙x_h + (1 - g)⊙xs_h. All heads use the layer's shift.
struct ShiftGate2Impl : MixerImpl {
  ShiftGate2Impl(int64_t d_model, int64_t heads, int64_t shift);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::Tensor weight, bias;  // [H, hd, 2·hd], [H, hd]: one Linear per head
  int64_t heads, head_dim, shift;
};

// Fusion, eq. 6, per head: y_h = Linear(hd→hd)(ReLU(Linear(2·hd→hd)(concat(x_h, xs_h)))).
struct ShiftFusionImpl : MixerImpl {
  ShiftFusionImpl(int64_t d_model, int64_t heads, int64_t shift);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::Tensor w1, b1, w2, b2;  // [H, hd, 2·hd], [H, hd], [H, hd, hd], [H, hd]
  int64_t heads, head_dim, shift;
};

// (a,b) multihead (§4) and multihead-ext (§7): head j has its own a_j, b_j and shift
// shifts[j]; y_h = a_j·x_h + b_j·shift(x_h, shifts[j]).
struct ShiftABMultiheadImpl : MixerImpl {
  ShiftABMultiheadImpl(MixerKind kind, int64_t d_model, std::vector<int64_t> shifts);
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::Tensor a, b;  // [H]
  std::vector<int64_t> shifts;
  int64_t head_dim;
};

}  // namespace hsm
