#include "model/mixers/gated_mlp.h"
#include "kernels/parallel_gemm.h"

#include "hsm/params.h"

namespace hsm {

GatedMlpImpl::GatedMlpImpl(MixerKind kind, int64_t d) : MixerImpl(kind) {
  const int64_t f = gated_mlp_width(d);
  gate = register_module("gate", torch::nn::Linear(d, f));
  up = register_module("up", torch::nn::Linear(d, f));
  down = register_module("down", torch::nn::Linear(f, d));
  init_linear(gate);
  init_linear(up);
  init_linear(down);
}

torch::Tensor GatedMlpImpl::forward(const torch::Tensor& x) {
  return linear(down, torch::silu(linear(gate, x)) * linear(up, x));  // [.., f] -> [.., d]
}

torch::Tensor GatedMlpImpl::step(const torch::Tensor& x_t, MixerState& state, int64_t, int64_t) {
  state_of<State>(state);  // refuses another mixer's state
  return forward(x_t);
}

torch::Tensor GatedMlpImpl::prefill(const torch::Tensor& x, MixerState& state, int64_t) {
  state_of<State>(state);
  return forward(x);
}


MixerImpl::MixingMatrices GatedMlpImpl::mixing_matrices(const torch::Tensor& x, const torch::Tensor&) {
  return {torch::eye(x.size(1)).unsqueeze(0), {0}};  // [1, L, L]
}

}  // namespace hsm
