#pragma once
// The logit lens (nostalgebraist 2020): each residual stream of a prompt read through the
// model's own final LayerNorm and tied output layer, as if the blocks above it were not there.
#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "hsm/probe.h"
#include "model/model.h"

namespace hsm {

// For token ids idx [1, L] (the model in eval mode): L+1 entries, after the embedding and after
// each block, each with the top_k next tokens per position (pieces from `piece`), the KL of the
// model's own distribution to this one and the rank of the actual next token (or of
// targets[t] at each position t, when given: a task example's answers; L of them). The last
// entry's distribution is computed exactly as forward(idx) computes the model's.
std::vector<LensLayer> logit_lens(Gpt& model, const torch::Tensor& idx, int64_t top_k,
                                  const std::function<std::string(int32_t)>& piece,
                                  const std::vector<int32_t>& targets = {});

}  // namespace hsm
