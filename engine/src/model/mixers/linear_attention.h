#pragma once
// DA §3.3's two relaxations of the softmax form, both linear in the context length
// (DA appx. I; docs/mixers.md). Same projections as attention (fused q, k, v and an output
// projection: 4d² + 4d parameters), per head on hd = d / H channels.
//
//   taylor     (eq. 6, recurrent eq. 14-17, Arora et al. "Based"):
//              w_ij = φ(q_i)·φ(k_j) = 1 + s_ij + s_ij²/2, s_ij = q_i·k_j/√hd, for j <= i;
//              y_i = Σ_j w_ij v_j / Σ_j w_ij  (w > 0 always: a real, non-softmax attention matrix).
//   nonapprox  (eq. 7-8, recurrent eq. 18): s_j = Σ_c SiLU(q_j)_c k_j,c / √hd, one score per
//              position; y_i = Σ_{j<=i} e^{s_j} v_j / Σ_{j<=i} e^{s_j}.
//
// Training runs in chunks of kChunk positions: within a chunk the causal C×C weights
// (exact, parallel), across chunks the running state (taylor: Σφ(k)vᵀ and Σφ(k);
// nonapprox: running max, Σe·v, Σe), so the cost is O(T·C) and T = C is fully parallel.
// Decoding keeps only that state: O(1) in the context.
#include "model/mixers/mixer.h"

namespace hsm {

// The running sums that replace the keys and values (docs/mixers.md). taylor:
// kv = Σ_j φ(k_j) v_jᵀ [B, H, D, hd], z = Σ_j φ(k_j) [B, H, D]. nonapprox:
// kv = Σ_j e^{s_j - m} v_j [B, H, hd], z = Σ_j e^{s_j - m} [B, H], m = max_j s_j [B, H].
struct LinearAttentionState : MixerState {
  torch::Tensor kv, z, m;
};

struct LinearAttentionImpl : MixerImpl {
  // The two ways DA replaces the softmax: the 2nd-order Taylor polynomial (taylor, eq. 6) or
  // softmax over the running sums (nonapprox, eq. 7-8).
  enum class Form { kTaylor, kNonApprox };
  LinearAttentionImpl(MixerKind kind, Form form, int64_t d_model, int64_t heads);
  torch::Tensor forward(const torch::Tensor& x) override;               // [B, T, d] -> [B, T, d]
  std::unique_ptr<MixerState> make_state() const override { return std::make_unique<LinearAttentionState>(); }
  torch::Tensor step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) override;
  torch::Tensor prefill(const torch::Tensor& x, MixerState& state, int64_t context) override;
  // The normalised mixing weights per head, [B, H, T, T] (rows sum to 1 over j <= i).
  torch::Tensor attention_weights(const torch::Tensor& x);
  MixingMatrices mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) override;  // the weights
  int64_t separable_heads() const override { return heads; }  // zeroed before the output projection

  static constexpr int64_t kChunk = 128;
  torch::nn::Linear qkv{nullptr}, proj{nullptr};
  Form form;
  int64_t heads, head_dim;

 private:
  // y [B, H, T, hd] for q, k, v [B, H, T, hd]; state: when given, left as after T steps.
  torch::Tensor mix(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, LinearAttentionState* state);
  torch::Tensor merge(const torch::Tensor& y);  // [B, H, T, hd] -> proj -> [B, T, d]
};

// taylor's feature map φ(x/hd^¼) (hsm/mixer_kind.h, taylor_feature_dim): x [..., hd] -> [..., D].
torch::Tensor taylor_features(const torch::Tensor& x);

}  // namespace hsm
