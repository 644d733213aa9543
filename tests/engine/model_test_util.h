#pragma once
// Helpers shared by the engine's model test suites (LibTorch; test_util.h stays torch-free).
#include <torch/torch.h>

#include <utility>

#include "model/model.h"

namespace hsm::test {

// Parameters of a module as LibTorch counts them.
inline int64_t numel(torch::nn::Module& m) {
  int64_t n = 0;
  for (const auto& p : m.parameters()) n += p.numel();
  return n;
}

// `steps` AdamW steps of `model` (put in training mode) on x -> y at learning rate lr;
// returns the loss of the first step and of the last.
inline std::pair<double, double> train_steps(Gpt& model, const torch::Tensor& x, const torch::Tensor& y, int steps,
                                             double lr) {
  model->train();
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(lr));
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    opt.zero_grad();
    auto loss = model->loss(x, y);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  return {first, last};
}

}  // namespace hsm::test
