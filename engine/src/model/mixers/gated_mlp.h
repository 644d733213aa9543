#pragma once
#include "model/mixers/mixer.h"

namespace hsm {

// DA §3.2 "MLP" (eq. 4-5): y = FC_Dn(SiLU(FC_Gt(x)) ⊙ FC_Up(x)), position by position: no
// token mixing, so y[t] depends on x[t] alone and decoding keeps no state. Hidden width
// f = gated_mlp_width(d) (hsm/params.h): the parameter count nearest attention's 4d² + 4d.
struct GatedMlpImpl : MixerImpl {
  GatedMlpImpl(MixerKind kind, int64_t d_model);
  torch::Tensor forward(const torch::Tensor& x) override;  // [B, T, d] -> [B, T, d]
  // No mixing, so nothing to keep between steps.
  struct State : MixerState {};
  std::unique_ptr<MixerState> make_state() const override { return std::make_unique<State>(); }
  torch::Tensor step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) override;
  torch::Tensor prefill(const torch::Tensor& x, MixerState& state, int64_t context) override;
  // It mixes no tokens: the identity (each output reads its own input only), shift 0.
  MixingMatrices mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) override;

  torch::nn::Linear gate{nullptr}, up{nullptr}, down{nullptr};  // d->f, d->f, f->d
};

}  // namespace hsm
