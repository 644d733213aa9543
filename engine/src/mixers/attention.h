#pragma once
#include "mixers/mixer.h"

namespace hsm {

// GPT multi-head causal softmax attention (HSM §2.1): fused q,k,v projection, scaled
// dot-product per head, output projection.
struct AttentionImpl : MixerImpl {
  AttentionImpl(int64_t d_model, int64_t heads, double dropout);
  torch::Tensor forward(const torch::Tensor& x) override;  // [B, T, d] -> [B, T, d]
  // Softmax weights per head for diagnostics: [B, H, T, T].
  torch::Tensor attention_weights(const torch::Tensor& x);

  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  int64_t heads, head_dim;
  double dropout;

 private:
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> split_heads(const torch::Tensor& x);
};

}  // namespace hsm
