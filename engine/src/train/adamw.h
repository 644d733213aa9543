#pragma once
// AdamW (Loshchilov & Hutter 2019) written out, so its state is plain named tensors that
// checkpoint.cpp saves to safetensors and that behave the same on LibTorch 1.13 and 2.x.
// Weight decay is decoupled and applied to tensors of two or more dimensions only (weight
// matrices and embedding tables, as nanoGPT does), never to biases, norms or the HSM
// (a,b) scalars and vectors.
#include <torch/torch.h>

#include <string>
#include <vector>

namespace hsm {

struct AdamWOptions {
  double lr = 0.002, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};

class AdamW {
 public:
  AdamW(std::vector<std::pair<std::string, torch::Tensor>> named_params, AdamWOptions options);
  void zero_grad();
  void step(double lr);  // one update with this step's learning rate
  int64_t steps() const { return step_; }

  // State as named tensors: "exp_avg.<param>", "exp_avg_sq.<param>"; plus the step count.
  std::vector<std::pair<std::string, torch::Tensor>> state() const;
  void load_state(const std::vector<std::pair<std::string, torch::Tensor>>& state, int64_t step);

 private:
  struct Slot {
    std::string name;
    torch::Tensor param, exp_avg, exp_avg_sq;
    bool decay;
  };
  std::vector<Slot> slots_;
  AdamWOptions options_;
  int64_t step_ = 0;
};

}  // namespace hsm
