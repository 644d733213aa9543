#pragma once
#include "model/mixers/mixer.h"

namespace hsm {

// GPT multi-head causal softmax attention (HSM §2.1): fused q,k,v projection, scaled
// dot-product per head, output projection.
// Keys and values of every earlier position: [B, H, context, hd] each, filled up to the
// current position.
struct AttentionState : MixerState {
  torch::Tensor k, v;
};

struct AttentionImpl : MixerImpl {
  AttentionImpl(MixerKind kind, int64_t d_model, int64_t heads, double dropout);
  torch::Tensor forward(const torch::Tensor& x) override;  // [B, T, d] -> [B, T, d]
  // KV cache: the new key/value is written at `pos`; the query attends to 0..pos.
  std::unique_ptr<MixerState> make_state() const override { return std::make_unique<AttentionState>(); }
  torch::Tensor step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) override;
  torch::Tensor prefill(const torch::Tensor& x, MixerState& state, int64_t context) override;
  // Softmax weights per head for diagnostics: [B, H, T, T].
  torch::Tensor attention_weights(const torch::Tensor& x);
  MixingMatrices mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) override;  // the weights
  // Each position j's term in output i (routes, docs/diagnostics.md §10): Σ_h A^h_ij W_O^h v^h_j,
  // the zeroed heads left out (the output bias is no position's term). x [1, T, d], A its
  // weights [H, T, T] (mixing_matrices) -> [T, T, d] in fp32.
  torch::Tensor position_terms(const torch::Tensor& x, const torch::Tensor& weights);
  int64_t separable_heads() const override { return heads; }  // zeroed before the output projection
  bool reads_input_through_products_only() const override { return true; }  // x only through qkv

  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  int64_t heads, head_dim;
  double dropout;

 private:
  // [B, T, d] -> q, k, v as [B, H, T, hd]
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> split_heads(const torch::Tensor& x);
};

// x [B, T, d] through a fused Linear(d, 3d), split into q, k, v of `heads` heads:
// 3 × [B, H, T, hd] (attention and DA's taylor / nonapprox share it).
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> split_qkv_heads(torch::nn::Linear& qkv, const torch::Tensor& x,
                                                                        int64_t heads);

}  // namespace hsm
