#pragma once
// The output layer's loss sums with each row's own loss and the true token's rank kept
// (per-token scoring, issue 40); model.h's lm_head_loss_sums is this with no row outputs.
#include <torch/torch.h>

#include "model/model.h"

namespace hsm {

struct RowScores {
  double* loss = nullptr;   // [rows of h]: the term each row adds to the loss sum
  int32_t* rank = nullptr;  // [rows of h]: 1 = the row's first maximum (counted correct)
};
// Written from the same pass whose sums this returns (kernels/token_scores_rows.h).
LossSums lm_head_loss_sums(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets,
                           const RowScores& rows);

}  // namespace hsm
