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
  // One update with this step's learning rate. grad_scale (0-dim fp32, optional): each gradient
  // is divided by it first; found_inf (0-dim fp32, optional): the update is skipped when it is 1.
  // On CUDA with LibTorch 2.x, one fused launch for every tensor (at::_fused_adamw_, reading both
  // on the device, no host sync; a skipped update still counts in steps()); elsewhere a loop per
  // tensor (the CPU's own kernel), which reads found_inf on the host.
  void step(double lr, const torch::Tensor& grad_scale = {}, const torch::Tensor& found_inf = {});
  // The training step's update without a host sync (CUDA): the global gradient norm computed on
  // the device, the gradients clipped to max_norm (> 0; 0 = no clipping) through grad_scale, and
  // the update skipped on the device when the loss or the gradient norm is not finite. Returns
  // that flag as a 0-dim bool tensor (true = not finite, skipped); the caller reads it when it
  // syncs anyway (the trainer: at its log, validation and checkpoint steps).
  torch::Tensor clip_and_step(double lr, double max_norm, const torch::Tensor& loss);
  int64_t steps() const { return step_; }

  // The same update as clip_and_step, recordable in a CUDA graph (train/cuda_graph_step.h): the
  // learning rate read from `lr` (0-dim fp32 on the device) and the step count incremented on the
  // device, nothing read or written on the host. Only the fused path (throws where
  // compat::fused_adamw_supported is false). Before recording: prepare_recorded_steps() (the
  // device's count from steps()); after each replay: count_recorded_step().
  torch::Tensor clip_and_step_recorded(const torch::Tensor& lr, double max_norm, const torch::Tensor& loss);
  void prepare_recorded_steps();
  void count_recorded_step() { ++step_; }

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
  // The global norm, the not-finite flag and the clip scale, on the device (both update paths).
  struct Clip {
    torch::Tensor bad, scale;
  };
  Clip clip(double max_norm, const torch::Tensor& loss) const;
  // The fused update's tensor lists: per group ([0] no weight decay, [1] decay), and all of them.
  int group(const Slot& s) const { return s.decay && options_.weight_decay > 0 ? 1 : 0; }
  struct FusedLists {
    std::vector<torch::Tensor> params[2], grads[2], exp_avgs[2], exp_avg_sqs[2], all_params, all_grads;
  };
  FusedLists fused_lists() const;
  void make_step_tensors(const torch::Device& device);
  torch::Tensor step_tensor_, one_, zero_;  // the fused path's step count, and its defaults (device)
  bool fused_off_ = false;                   // the fused update failed once: the loop from then on
  AdamWOptions options_;
  int64_t step_ = 0;
};

}  // namespace hsm
