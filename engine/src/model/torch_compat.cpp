#include "model/torch_compat.h"

#include "model/mixers/blocked_attention.h"

#include <stdexcept>

#if TORCH_VERSION_MAJOR >= 2
#include <ATen/autocast_mode.h>
#endif

namespace hsm::compat {

torch::Tensor causal_attention_weights(const torch::Tensor& q, const torch::Tensor& k) {
  const int64_t T = q.size(-2);
  auto att = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));  // [B,H,T,T]
  auto mask = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1);
  return torch::softmax(att.masked_fill(mask, -std::numeric_limits<float>::infinity()), -1);
}

torch::Tensor causal_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                               double dropout_p, bool training) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, training ? dropout_p : 0.0,
                                          /*is_causal=*/true);
#else
  // Blocked at every length: with hashed dropout masks it beat the explicit [T, T] softmax
  // already at T = 128 (bench/micro_bench AttentionCore, docs/performance.md).
  return blocked_causal_attention(q, k, v, dropout_p, training);
#endif
}

torch::Device parse_device(const std::string& name) {
  if (name == "auto") return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  if (name == "cpu") return torch::Device(torch::kCPU);
  if (name.rfind("cuda", 0) == 0) {
    if (!torch::cuda::is_available())
      throw std::invalid_argument("device '" + name + "' asked for, but " +
                                  (torch::hasCUDA() ? std::string("no CUDA GPU is visible")
                                                    : "this LibTorch was built without CUDA (pass TORCH_DIR=<CUDA LibTorch>)"));
    return torch::Device(name);
  }
  throw std::invalid_argument("unknown device '" + name + "' (use cpu, cuda, cuda:N or auto)");
}

std::string torch_version() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
#define HSM_AUTOCAST_PER_DEVICE 1
#endif

bool autocast_supported() { return TORCH_VERSION_MAJOR >= 2; }

bool cuda_autocast_bf16() {
#ifdef HSM_AUTOCAST_PER_DEVICE
  return at::autocast::is_autocast_enabled(at::kCUDA) && at::autocast::get_autocast_dtype(at::kCUDA) == at::kBFloat16;
#elif TORCH_VERSION_MAJOR >= 2
  return at::autocast::is_enabled() && at::autocast::get_autocast_gpu_dtype() == at::kBFloat16;
#else
  return false;
#endif
}

// The CUDA step's LibTorch 2.x calls, behind the CMake option HSM_CUDA_FAST (gpu_check.sh builds
// without them if a LibTorch refuses them).
#if TORCH_VERSION_MAJOR >= 2 && defined(HSM_CUDA_FAST)
#define HSM_HAVE_FUSED_ADAMW 1
#endif

torch::Tensor global_norm(const std::vector<torch::Tensor>& tensors) {
  if (tensors.empty()) return {};
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
#ifdef HSM_HAVE_FUSED_ADAMW
  norms = at::_foreach_norm(tensors, 2);
#else
  norms.reserve(tensors.size());
  for (const auto& t : tensors) norms.push_back(t.norm());
#endif
  for (auto& n : norms) n = n.to(torch::kFloat);
  return torch::stack(norms).norm();
}

bool fused_adamw_supported(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads) {
#ifdef HSM_HAVE_FUSED_ADAMW
  if (params.empty() || params.size() != grads.size()) return false;
  const auto device = params.front().device();
  if (!device.is_cuda()) return false;
  for (size_t i = 0; i < params.size(); ++i) {
    const auto &p = params[i], &g = grads[i];
    if (!g.defined() || p.device() != device || g.device() != device || p.scalar_type() != torch::kFloat ||
        g.scalar_type() != torch::kFloat || p.numel() == 0 || !p.is_non_overlapping_and_dense() ||
        p.sizes() != g.sizes() || p.strides() != g.strides())
      return false;
  }
  return true;
#else
  (void)params;
  (void)grads;
  return false;
#endif
}

void fused_adamw(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                 const std::vector<torch::Tensor>& exp_avgs, const std::vector<torch::Tensor>& exp_avg_sqs,
                 const torch::Tensor& step, double lr, double beta1, double beta2, double weight_decay, double eps,
                 const torch::Tensor& grad_scale, const torch::Tensor& found_inf) {
  if (params.empty()) return;
  if (!fused_adamw_supported(params, grads))
    throw std::logic_error("fused_adamw: not available for these tensors with this LibTorch (" + torch_version() + ")");
#ifdef HSM_HAVE_FUSED_ADAMW
  // The kernel reads one step count per tensor (a float on the device): the same one for all.
  const std::vector<torch::Tensor> steps(params.size(), step);
  const std::vector<torch::Tensor> no_max_exp_avg_sqs;  // amsgrad off: the list is not read
  at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, no_max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay,
                    eps, /*amsgrad=*/false, /*maximize=*/false, grad_scale, found_inf);
#else
  (void)grads, (void)exp_avgs, (void)exp_avg_sqs, (void)step, (void)lr, (void)beta1, (void)beta2;
  (void)weight_decay, (void)eps, (void)grad_scale, (void)found_inf;
#endif
}

void fused_adamw(const std::vector<torch::Tensor>& params, const std::vector<torch::Tensor>& grads,
                 const std::vector<torch::Tensor>& exp_avgs, const std::vector<torch::Tensor>& exp_avg_sqs,
                 const torch::Tensor& step, const torch::Tensor& lr, double beta1, double beta2, double weight_decay,
                 double eps, const torch::Tensor& grad_scale, const torch::Tensor& found_inf) {
  if (params.empty()) return;
  if (!fused_adamw_supported(params, grads))
    throw std::logic_error("fused_adamw: not available for these tensors with this LibTorch (" + torch_version() + ")");
#if defined(HSM_HAVE_FUSED_ADAMW) && (TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 2)
  const std::vector<torch::Tensor> steps(params.size(), step);
  const std::vector<torch::Tensor> no_max_exp_avg_sqs;
  at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, no_max_exp_avg_sqs, steps, lr, beta1, beta2, weight_decay,
                    eps, /*amsgrad=*/false, /*maximize=*/false, grad_scale, found_inf);
#else
  (void)step, (void)lr, (void)beta1, (void)beta2, (void)weight_decay, (void)eps, (void)grad_scale, (void)found_inf;
  (void)exp_avgs, (void)exp_avg_sqs;
  throw std::logic_error("fused_adamw: a learning rate on the device needs LibTorch 2.2 or later (" + torch_version() +
                         ")");
#endif
}

AutocastGuard::AutocastGuard(const torch::Device& device, bool enable) {
#if TORCH_VERSION_MAJOR >= 2
  if (!enable || !device.is_cuda()) return;
#ifdef HSM_AUTOCAST_PER_DEVICE
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
#else
  at::autocast::set_enabled(true);
  at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
#endif
  at::autocast::increment_nesting();
  active_ = true;
#else
  (void)device;
  (void)enable;
#endif
}

AutocastGuard::~AutocastGuard() {
#if TORCH_VERSION_MAJOR >= 2
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#ifdef HSM_AUTOCAST_PER_DEVICE
  at::autocast::set_autocast_enabled(at::kCUDA, false);
#else
  at::autocast::set_enabled(false);
#endif
#endif
}

}  // namespace hsm::compat
