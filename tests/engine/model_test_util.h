#pragma once
// Helpers shared by the engine's model test suites (LibTorch; test_util.h stays torch-free).
#include <torch/torch.h>

#include <utility>
#include <vector>

#include "kernels/gemm.h"
#include "model/model.h"
#include "kernels/blas_threads.h"

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

// LibTorch on `threads` threads and OpenBLAS on `blas` for a scope, the previous counts restored.
class Threads {
 public:
  Threads(int threads, int blas) : torch_(torch::get_num_threads()), blas_(blas_threads()) {
    torch::set_num_threads(threads);
    set_blas_threads(blas);
  }
  ~Threads() {
    torch::set_num_threads(torch_);
    if (blas_ > 0) set_blas_threads(blas_);
  }

 private:
  int torch_, blas_;
};

// The matrix-product backends this build has (kernels/gemm.h).
inline std::vector<GemmBackend> gemm_backends() {
  std::vector<GemmBackend> b = {GemmBackend::kLibTorch};
  if (onednn_available()) b.push_back(GemmBackend::kOneDnn);
  return b;
}

// The backend for a scope, the previous one restored.
class Backend {
 public:
  explicit Backend(GemmBackend b) : previous_(gemm_backend()) { set_gemm_backend(b); }
  ~Backend() { set_gemm_backend(previous_); }

 private:
  GemmBackend previous_;
};

}  // namespace hsm::test
