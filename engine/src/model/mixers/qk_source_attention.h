#pragma once
// DA §3.4-3.5: softmax attention whose queries and keys come from another stream than its
// values (docs/mixers.md). Q, K = LN1(src) W^{Q,K}; V = LN1(h) W^V; causal softmax; output
// projection: 4d² + 4d parameters, as attention. The model (model.cpp) supplies src:
//   rnd_emb_qk     the hidden state at this layer's input when a fixed random sequence ε
//                  runs through the blocks below (eq. 9-10); [1, T, d], broadcast over the batch;
//   fixed_seq_qk   the same for a fixed natural-text sequence, embedded as the model's input
//                  (eq. 11-12);
//   static_emb_qk  the input embedding tok_emb[x] + pos_emb[t] of the current tokens (eq. 13).
#include "model/mixers/mixer.h"

namespace hsm {

// Values of every earlier position, [B, H, context, hd]; the queries and keys: for
// rnd_emb_qk / fixed_seq_qk the input-independent ones of every position, [1, H, context, hd],
// computed once per decode; for static_emb_qk the keys so far, [B, H, context, hd].
struct QkSourceState : MixerState {
  torch::Tensor q, k, v;
};

struct QkSourceAttentionImpl : QkSourceMixerImpl {
  QkSourceAttentionImpl(MixerKind kind, int64_t d_model, int64_t heads, double dropout);
  // Q, K from x itself: standard attention (the layer inside the fixed-stream pass).
  torch::Tensor forward(const torch::Tensor& x) override { return forward_qk(x, x); }
  // x [B, T, d], qk [1 or B, T, d] -> [B, T, d]
  torch::Tensor forward_qk(const torch::Tensor& x, const torch::Tensor& qk) override;
  std::unique_ptr<MixerState> make_state() const override { return std::make_unique<QkSourceState>(); }
  torch::Tensor step(const torch::Tensor& x_t, MixerState& state, int64_t pos, int64_t context) override;
  torch::Tensor prefill(const torch::Tensor& x, MixerState& state, int64_t context) override;
  torch::Tensor step_qk(const torch::Tensor& x_t, const torch::Tensor& qk, MixerState& state, int64_t pos,
                        int64_t context) override;
  torch::Tensor prefill_qk(const torch::Tensor& x, const torch::Tensor& qk, MixerState& state,
                           int64_t context) override;
  bool has_queries(const MixerState& state) const override { return state_of<QkSourceState>(state).q.defined(); }
  torch::Tensor attention_weights_qk(const torch::Tensor& qk) override;  // [1 or B, H, T, T]
  MixingMatrices mixing_matrices(const torch::Tensor& x, const torch::Tensor& qk) override;  // from qk, else x
  int64_t separable_heads() const override { return heads; }  // zeroed before the output projection

  // Whether Q and K are input-independent (rnd_emb_qk, fixed_seq_qk): cached once per decode.
  bool fixed() const { return qk_source(kind) != QkSource::kEmbedding; }

  torch::nn::Linear qk{nullptr}, value{nullptr}, proj{nullptr};
  int64_t heads, head_dim;
  double dropout;

 private:
  torch::Tensor to_heads(const torch::Tensor& t);                                  // [B, T, d] -> [B, H, T, hd]
  std::pair<torch::Tensor, torch::Tensor> queries_keys(const torch::Tensor& src);  // 2 × [B, H, T, hd]
  torch::Tensor merge(const torch::Tensor& y);                                     // [B, H, T, hd] -> proj -> [B, T, d]
};

}  // namespace hsm
