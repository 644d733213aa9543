#pragma once
// The one place where LibTorch 1.13 (Debian) and 2.x (CUDA builds) differ (docs/architecture.md).
#include <torch/torch.h>

#include <string>
#include <vector>

#ifndef TORCH_VERSION_MAJOR
#include <torch/version.h>
#endif

namespace hsm::compat {

// Causal scaled dot-product attention over [B, H, T, hd] tensors -> [B, H, T, hd].
// 2.x: the fused kernel (flash / memory-efficient); 1.13: blocked_causal_attention (O(T) memory).
torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               double dropout_p, bool training);

// The explicit softmax weights of causal attention, [B, H, T, T] (diagnostics need them).
torch::Tensor causal_attention_weights(const torch::Tensor& q, const torch::Tensor& k);

// "cpu", "cuda", "cuda:N" or "auto" (CUDA when present). Throws with a clear message when
// CUDA is asked for but this LibTorch or machine has none.
torch::Device parse_device(const std::string& name);

std::string torch_version();

// bf16 autocast for CUDA forward passes where LibTorch has a C++ autocast API (2.x);
// a no-op on CPU and on LibTorch 1.13. Thread-local, like autocast itself (docs/architecture.md, "Threads").
class AutocastGuard {
 public:
  AutocastGuard(const torch::Device& device, bool enable);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
};

// Whether AutocastGuard can do anything with this LibTorch.
bool autocast_supported();

// Whether bf16 autocast is on for CUDA on this thread (an AutocastGuard is active): the fused
// output layer (model/cuda_fused.h) then computes in bf16 as autocast would. False on 1.13.
bool cuda_autocast_bf16();

// The global 2-norm of `tensors` (a gradient), as a 0-dim fp32 tensor on their device: computed
// there, no host sync (2.x with HSM_CUDA_FAST: one _foreach_norm; else a norm per tensor).
// Undefined when empty.
torch::Tensor global_norm(const std::vector<torch::Tensor>& tensors);

// Whether fused_adamw can update these parameters with these gradients: LibTorch 2.x built with
// HSM_CUDA_FAST (the CMake option), every tensor fp32, dense, on one CUDA device, each gradient
// shaped and strided as its parameter. The CPU keeps its own kernel (adamw.cpp).
bool fused_adamw_supported(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads);

// One AdamW update of every tensor in one launch (at::_fused_adamw_), as adamw.cpp's loop does
// it: decoupled weight decay `weight_decay` (pass 0 for a group without), bias corrections from
// `step` (a 0-dim fp32 tensor on the device holding the step number, 1 on the first update).
// grad_scale (0-dim fp32): each gradient is divided by it first (gradient clipping without a host
// sync); found_inf (0-dim fp32, 1 or 0): the update is skipped on the device when it is 1. All
// on the parameters' device; nothing waits for the GPU. Throws where !fused_adamw_supported.
void fused_adamw(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                 const std::vector<torch::Tensor>& exp_avgs, const std::vector<torch::Tensor>& exp_avg_sqs,
                 const torch::Tensor& step, double lr, double beta1, double beta2, double weight_decay, double eps,
                 const torch::Tensor& grad_scale, const torch::Tensor& found_inf);

// As fused_adamw, with the learning rate read on the device (`lr`, 0-dim fp32 there): what a CUDA
// graph replays with a new rate each step (train/cuda_graph_step.h). LibTorch 2.2 and later.
void fused_adamw(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                 const std::vector<torch::Tensor>& exp_avgs, const std::vector<torch::Tensor>& exp_avg_sqs,
                 const torch::Tensor& step, const torch::Tensor& lr, double beta1, double beta2, double weight_decay,
                 double eps, const torch::Tensor& grad_scale, const torch::Tensor& found_inf);

}  // namespace hsm::compat
