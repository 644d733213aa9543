#pragma once
// Helpers shared by the engine's model test suites (LibTorch; test_util.h stays torch-free).
#include <torch/torch.h>

#include <string>
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

inline ModelConfig config_with(const std::vector<LayerSpec>& layers) {
  ModelConfig c;
  c.vocab_size = 41;
  c.d_model = 32;
  c.context = 40;
  c.dropout = 0.0;
  c.layers = layers;
  return c;
}

// The presets' families at d_model 32, context 40 (the decoding and site tests; fp64 by make_model): hsm_ab with shifts 1..32 (the register of 32
// wraps), gpt, and a hybrid of every shift variant and attention (its last layer's heads shift by
// up to 128, beyond the context: they read nothing).
inline std::vector<std::pair<std::string, ModelConfig>> models() {
  return {
      {"hsm_ab", config_with(std::vector<LayerSpec>(6, LayerSpec{"hsm_ab", 64, 1}))},
      {"gpt", config_with(std::vector<LayerSpec>(3, LayerSpec{"attn", 64, 4}))},
      {"hybrid", config_with({{"hsm_ab", 64, 1},
                              {"hsm_ab_vec", 64, 1},
                              {"hsm_AB", 64, 1},
                              {"hsm_gate1", 64, 1},
                              {"hsm_gate2", 64, 2},
                              {"hsm_fusion", 64, 2},
                              {"attn", 64, 4},
                              {"hsm_ab_mh_ext", 64, 4},
                              {"attn", 64, 2},
                              {"hsm_ab_mh", 64, 8}})},
  };
}

inline Gpt make_model(const ModelConfig& c) {
  torch::manual_seed(5);
  Gpt model(c);
  model->to(torch::kFloat64);
  model->eval();
  torch::NoGradGuard no_grad;
  // The (a,b) weights off their equal initial values, so that a wrong shift shows.
  for (auto& p : model->named_parameters())
    if (p.key().find(".mixer.") != std::string::npos && p.value().dim() <= 1) p.value().uniform_(-1.5, 1.5);
  return model;
}

}  // namespace hsm::test
