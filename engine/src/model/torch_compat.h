#pragma once
// The one place where LibTorch 1.13 (Debian) and 2.x (CUDA builds) differ (docs/architecture.md).
#include <torch/torch.h>

#include <string>

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

}  // namespace hsm::compat
