#pragma once
// The Hierarchical Shift Mixing family (HSM §3–4, §7). A layer at stack position l mixes
// token t with token t - s, s = 2^l, where x_shifted[t] = x[t - s] (0 for t < s); the
// multihead variants give each head its own shift. Every variant is a function
// mix(x, x_shifted) applied position by position, which is what makes the incremental
// step O(1): it only needs the input from s positions back.
#include "model/mixers/mixer.h"

namespace hsm {

// A ring of the last R mixer inputs, [B, R, d], the input of position p at p % R (R = the
// largest shift, at most the context).
struct ShiftState : MixerState {
  torch::Tensor ring;
};

struct ShiftMixerImpl : MixerImpl {
  // shifts: one entry (all channels share it) or one per head (channel groups of d / H).
  ShiftMixerImpl(MixerKind kind, int64_t d_model, std::vector<int64_t> shifts);
  torch::Tensor forward(const torch::Tensor& x) override;  // mix(x, shifted(x))
  std::unique_ptr<MixerState> make_state() const override { return std::make_unique<ShiftState>(); }
  torch::Tensor step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) override;
  torch::Tensor prefill(const torch::Tensor& x, MixerState& state, int64_t context) override;
  // The variant's formula: x, xs of the same shape [..., d] -> y [..., d].
  virtual torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& xs) = 0;
  // x_shifted for a whole sequence: [B, T, d] -> [B, T, d], head j's channels shifted by shifts[j].
  torch::Tensor shifted(const torch::Tensor& x) const;

  // Diagnostics (shift_matrices.cpp): the exact map of a linear variant or the Jacobian norms
  // of a non-linear one, as the registry's MixerInfo::matrix says; the learned weights.
  MixingMatrices mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) override;
  void learned_weights(MixerWeights& w) const override;  // the shifts; a and b where the variant has them
  // Heads the diagnostics show: one per shift (the multihead variants), the channel groups of
  // hsm_gate2 and hsm_fusion, one otherwise.
  virtual int64_t heads_shown() const { return shifts.size() > 1 ? static_cast<int64_t>(shifts.size()) : 1; }
  // A head's output is its channel group (nothing mixes the groups after it), so each head of
  // a layer with several can be zeroed on its own.
  int64_t separable_heads() const override { return heads_shown() > 1 ? heads_shown() : 0; }
  // A linear variant's RMS gain ‖block‖_F / √(columns) per head of the block applied to x_i
  // (own) and to x_{i−s} (shifted): a·I gives a. std::invalid_argument for a non-linear one.
  struct LinearGains {
    std::vector<double> own, shifted;
  };
  virtual LinearGains linear_gains() const;

  std::vector<int64_t> shifts;
  int64_t d_model;

 protected:
  // y [..., d] with the zeroed heads' channel groups set to zero (y itself when none are).
  torch::Tensor zero_head_channels(const torch::Tensor& y) const;
};

// The shift of head h of a shift mixer (its only shift when it has one).
int64_t head_shift(const ShiftMixerImpl& mixer, int64_t head);

// The exact token-level map of a mixer that is linear in x (hsm_ab, hsm_ab_vec, hsm_AB,
// hsm_ab_mh(_ext)) for L positions: [H, L, L], signed, not row-normalised: each head's own
// gain on the diagonal and its shifted gain on the s-th sub-diagonal (linear_gains()).
// Throws std::invalid_argument for a non-linear mixer.
torch::Tensor linear_maps(const ShiftMixerImpl& mixer, int64_t L);

// ‖∂y_i/∂x_k‖_F over each head's channels at input x [1, L, d]: [H, L, L], not normalised.
// Any shift mixer (they are position-wise: y_i = mix(x_i, x_{i-s})), so only the diagonal
// and the head's shift sub-diagonal are non-zero.
torch::Tensor jacobian_norms(ShiftMixerImpl& mixer, const torch::Tensor& x);

// HSM (a,b), eq. 1: y = a·x + b·x_shifted; a, b scalars per layer. Linear in x: its
// mixing matrix is a on the diagonal and b on the s-th sub-diagonal.
struct ShiftABImpl : ShiftMixerImpl {
  ShiftABImpl(MixerKind kind, int64_t d_model, int64_t shift);
  // mix(x, shifted(x)); on the CPU in fp32 one fused pass each way (shift.cpp: FusedShiftMix).
  torch::Tensor forward(const torch::Tensor& x) override;
  torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& xs) override;
  LinearGains linear_gains() const override;  // a, b
  void learned_weights(MixerWeights& w) const override;
  bool set_ab(const std::vector<float>& a, const std::vector<float>& b) override;
  torch::Tensor a, b;  // [] scalars
  int64_t shift;
};

// HSM (a,b) vector, eq. 2: y = a⊙x + b⊙x_shifted; a, b ∈ R^d.
struct ShiftABVectorImpl : ShiftMixerImpl {
  ShiftABVectorImpl(MixerKind kind, int64_t d_model, int64_t shift);
  torch::Tensor forward(const torch::Tensor& x) override;  // fused as (a,b)'s
  torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& xs) override;
  LinearGains linear_gains() const override;  // block diag(a): the RMS of a (and of b)
  void learned_weights(MixerWeights& w) const override;
  bool set_ab(const std::vector<float>& a, const std::vector<float>& b) override;
  torch::Tensor a, b;  // [d]
  int64_t shift;
};

// HSM (A,B), eq. 3: u = A x + B x_shifted + bias, followed by the mixer's output
// projection y = W u + c. A and B replace GPT's value mapping L_V (§3.3); the output
// projection after the mix stays, as in the GPT mixer of Figure 2. With it the paper's
// (A,B) model with FFN 640 has 5.0M parameters like the others (without it, 4.5M).
struct ShiftABMatrixImpl : ShiftMixerImpl {
  ShiftABMatrixImpl(MixerKind kind, int64_t d_model, int64_t shift);
  torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& xs) override;
  LinearGains linear_gains() const override;  // W·A on the diagonal, W·B below (W: the output projection)
  torch::nn::Linear A{nullptr}, B{nullptr}, proj{nullptr};
  torch::Tensor bias;  // [d]
  int64_t shift;
};

// Gated weighting, single input, eq. 4: g = tanh(mlp(x)), mlp = Linear(d,d)→ReLU→Linear(d,d);
// y = g⊙x + (1 - g)⊙x_shifted.
struct ShiftGate1Impl : ShiftMixerImpl {
  ShiftGate1Impl(MixerKind kind, int64_t d_model, int64_t shift);
  torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& xs) override;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  int64_t shift;
};

// Gated weighting, double input, eq. 5, per head (§4): g = tanh(L(concat(x_h, xs_h))),
// L: 2·hd → hd; y_h = g⊙x_h + (1 - g)⊙xs_h. All heads use the layer's shift.
struct ShiftGate2Impl : ShiftMixerImpl {
  ShiftGate2Impl(MixerKind kind, int64_t d_model, int64_t heads, int64_t shift);
  torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& xs) override;
  int64_t heads_shown() const override { return heads; }
  torch::Tensor weight, bias;  // [H, hd, 2·hd], [H, hd]: one Linear per head
  int64_t heads, head_dim, shift;
};

// Fusion, eq. 6, per head: y_h = Linear(hd→hd)(ReLU(Linear(2·hd→hd)(concat(x_h, xs_h)))).
struct ShiftFusionImpl : ShiftMixerImpl {
  ShiftFusionImpl(MixerKind kind, int64_t d_model, int64_t heads, int64_t shift);
  torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& xs) override;
  int64_t heads_shown() const override { return heads; }
  torch::Tensor w1, b1, w2, b2;  // [H, hd, 2·hd], [H, hd], [H, hd, hd], [H, hd]
  int64_t heads, head_dim, shift;
};

// (a,b) multihead (§4) and multihead-ext (§7): head j has its own a_j, b_j and shift
// shifts[j]; y_h = a_j·x_h + b_j·shift(x_h, shifts[j]).
struct ShiftABMultiheadImpl : ShiftMixerImpl {
  ShiftABMultiheadImpl(MixerKind kind, int64_t d_model, std::vector<int64_t> shifts);
  torch::Tensor mix(const torch::Tensor& x, const torch::Tensor& xs) override;
  LinearGains linear_gains() const override;  // head j: a_j·I, b_j·I
  void learned_weights(MixerWeights& w) const override;
  bool set_ab(const std::vector<float>& a, const std::vector<float>& b) override;
  torch::Tensor a, b;  // [H]
  int64_t head_dim;
};

}  // namespace hsm
