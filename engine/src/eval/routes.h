#pragma once
// Information flow routes over a Gpt (hsm/routes.h says what they are; docs/diagnostics.md §10
// gives each mixer kind's term). One forward pass of idx [1, T] with the block taken apart as
// eval/patching.h does; the edges into every node at or before position `at`.
#include <torch/torch.h>

#include "hsm/routes.h"
#include "model/model.h"

namespace hsm {

// Fills routes.layers, positions, answer_position (= at), mixer_terms and edges (not tokens,
// labels or seconds).
void information_flow(GptImpl& model, const torch::Tensor& idx, int64_t at, Routes& routes);

}  // namespace hsm
