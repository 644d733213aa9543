#pragma once
// One interface for every token mixer (SPEC §3.1): [B, T, d] -> [B, T, d], strictly causal.
#include <torch/torch.h>

#include <memory>

#include "hsm/config.h"
#include "hsm/mixer_kind.h"

namespace hsm {

struct MixerImpl : torch::nn::Module {
  explicit MixerImpl(MixerKind kind) : kind(kind) {}
  // x: [B, T, d] (already layer-normed) -> y: [B, T, d]; y[:, t] depends on x[:, :t+1] only.
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  MixerKind kind;
};

// Builds the mixer of layer `layer` (0-based stack position, which sets HSM shifts).
std::shared_ptr<MixerImpl> make_mixer(const LayerSpec& spec, int64_t layer, int64_t d_model, double dropout);

// x_shifted[t] = x[t - s] for t >= s, else 0.  x: [B, T, C] -> [B, T, C].
torch::Tensor shift_right(const torch::Tensor& x, int64_t s);

// GPT-2 initialisation shared by the mixers and the model: N(0, 0.02) weights, zero bias.
void init_linear(torch::nn::Linear& linear, double std = 0.02);

}  // namespace hsm
