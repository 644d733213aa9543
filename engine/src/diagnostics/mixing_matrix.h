#pragma once
// The torch half of diagnostics.h: the matrix each layer's mixer applies to a prompt
// (SPEC §3.3) and its learned weights. Every matrix is [H, L, L], rows = queries (outputs),
// columns = keys (inputs).
//   attention          the softmax weights of each head;
//   linear kinds       the exact map (a on the diagonal, b on the s-th sub-diagonal, ...);
//   gated / fusion     ‖∂y_i/∂x_k‖_F over the head's channels, by autograd at the input.
// docs/diagnostics.md explains the choices.
#include <torch/torch.h>

#include <vector>

#include "hsm/config.h"
#include "hsm/diagnostics.h"
#include "model/mixers/extractors.h"
#include "model/mixers/shift.h"
#include "model/model.h"

namespace hsm {

// Heads a shift mixer is shown with: one per shift for the multihead (a,b) variants, the
// channel groups of hsm_gate2 / hsm_fusion, one otherwise. And the shift of head h.
int64_t diagnostic_heads(const ShiftMixerImpl& mixer);
int64_t head_shift(const ShiftMixerImpl& mixer, int64_t head);

// The exact token-level map of a mixer that is linear in x (hsm_ab, hsm_ab_vec, hsm_AB,
// hsm_ab_mh(_ext)) for L positions: [H, L, L], signed, not row-normalised. A d×d block
// (or hd×hd per head) becomes one number, its RMS gain ‖block‖_F / √d: a·I gives a.
// Throws std::invalid_argument for a non-linear mixer.
torch::Tensor linear_maps(const ShiftMixerImpl& mixer, int64_t L);

// ‖∂y_i/∂x_k‖_F over each head's channels at input x [1, L, d]: [H, L, L], not normalised.
// Any shift mixer (they are position-wise: y_i = mix(x_i, x_{i-s})), so only the diagonal
// and the head's shift sub-diagonal are non-zero.
torch::Tensor jacobian_norms(ShiftMixerImpl& mixer, const torch::Tensor& x);

// An extractor's matrix at input x [1, L, d] (L ≤ its context): [1, L, L], not normalised.
// me: the exact map, w_{i−k+1} at (i, k). she, he, we: ‖∂y_i/∂x_k‖_F from the closed form
// ∂y_i/∂x_k = W_outᵀ diag(a_i) E_{i−k+1}ᵀ (+ W_outᵀ diag(e_i) W_adjᵀ when k = i), with
// a = x W_adj, e the extraction and E_k the lag maps (ExtractorImpl::lag_maps).
torch::Tensor extractor_matrix(ExtractorImpl& mixer, const torch::Tensor& x);

// One layer's heads, matrices and raw indicators for its mixer input x = LN1(h): [1, L, d].
// Matrices other than attention are row-normalised (|M| / Σ|M|). qk: a DA *_qk mixer's
// LN1(QK stream) [1, L, d] (GptImpl::qk_streams); DA's mlp gets the identity (it mixes nothing).
LayerDiagnostics diagnose_layer(MixerImpl& mixer, const LayerSpec& spec, int layer, const torch::Tensor& x,
                                const torch::Tensor& qk = {});

// Every layer of the model for token ids idx [1, L] (the model in eval mode), with the
// indicators normalised across layers.
std::vector<LayerDiagnostics> diagnose_model(Gpt& model, const torch::Tensor& idx);

MixerWeights mixer_weights(const MixerImpl& mixer, const LayerSpec& spec, int layer);
std::vector<MixerWeights> mixer_weights(Gpt& model);

}  // namespace hsm
