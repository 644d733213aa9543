#pragma once
// Information flow routes over a Gpt (hsm/routes.h says what they are; docs/diagnostics.md §10
// gives each mixer kind's term). The model's one forward of idx [1, T], its sites read by
// observers (model/sites.h: the residual, the mixer's map and output, the FFN's output); the edges
// into every node at or before position `at`.
#include <torch/torch.h>

#include "hsm/routes.h"
#include "model/model.h"

namespace hsm {

// Fills routes.layers, positions, answer_position (= at), mixer_terms and edges (not tokens,
// labels or seconds).
void information_flow(GptImpl& model, const torch::Tensor& idx, int64_t at, Routes& routes);

}  // namespace hsm
