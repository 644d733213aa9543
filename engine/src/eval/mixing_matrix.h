#pragma once
// The torch half of diagnostics.h: the matrix each layer's mixer applies to a prompt
// (docs/diagnostics.md) and its learned weights. Every matrix is [H, L, L], rows = queries (outputs),
// columns = keys (inputs).
//   attention          the softmax weights of each head;
//   linear kinds       the exact map (a on the diagonal, b on the s-th sub-diagonal, ...);
//   gated / fusion     ‖∂y_i/∂x_k‖_F over the head's channels, by autograd at the input.
// docs/diagnostics.md explains the choices.
#include <torch/torch.h>

#include <vector>

#include "hsm/config.h"
#include "hsm/diagnostics.h"
#include "model/mixers/shift.h"
#include "model/model.h"

namespace hsm {

// The shift mixers' matrices (linear_maps, jacobian_norms, head_shift) are declared beside
// them in model/mixers/shift.h; every mixer computes its own (MixerImpl::mixing_matrices).

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
