#include "train/adamw.h"

#include <cstdio>
#include <stdexcept>

#include "kernels/fast_kernels.h"
#include "kernels/parallel_gemm.h"
#include "model/torch_compat.h"
#include <unordered_map>

namespace hsm {

AdamW::AdamW(std::vector<std::pair<std::string, torch::Tensor>> named_params, AdamWOptions options)
    : options_(options) {
  for (auto& [name, p] : named_params)
    slots_.push_back({name, p, torch::zeros_like(p), torch::zeros_like(p), p.dim() >= 2});
}

void AdamW::zero_grad() {
  for (auto& s : slots_)
    if (s.param.grad().defined()) s.param.mutable_grad() = torch::Tensor();
}

AdamW::Clip AdamW::clip(double max_norm, const torch::Tensor& loss) const {
  std::vector<torch::Tensor> grads;
  for (const auto& s : slots_)
    if (s.param.grad().defined()) grads.push_back(s.param.grad());
  if (grads.empty()) throw std::logic_error("AdamW::clip_and_step: no parameter has a gradient");
  const auto norm = compat::global_norm(grads);
  // Not finite when either is (inf - inf is NaN too).
  auto bad = torch::isfinite(norm + loss.detach().to(torch::kFloat).reshape({})).logical_not();
  // As torch::nn::utils::clip_grad_norm_: g * max_norm / (norm + 1e-6) where that is below 1.
  auto scale = max_norm > 0 ? ((norm + 1e-6) / max_norm).clamp_min(1.0) : torch::ones_like(norm);
  return {bad, scale};
}

torch::Tensor AdamW::clip_and_step(double lr, double max_norm, const torch::Tensor& loss) {
  torch::NoGradGuard no_grad;
  const auto c = clip(max_norm, loss);
  step(lr, c.scale, c.bad.to(torch::kFloat));
  return c.bad;
}

AdamW::FusedLists AdamW::fused_lists() const {
  FusedLists t;
  for (const auto& s : slots_) {
    if (!s.param.grad().defined()) continue;
    const int g = group(s);
    t.params[g].push_back(s.param);
    t.grads[g].push_back(s.param.grad());
    t.exp_avgs[g].push_back(s.exp_avg);
    t.exp_avg_sqs[g].push_back(s.exp_avg_sq);
    t.all_params.push_back(s.param);
    t.all_grads.push_back(s.param.grad());
  }
  return t;
}

void AdamW::make_step_tensors(const torch::Device& device) {
  if (step_tensor_.defined() && step_tensor_.device() == device) return;
  const auto o = torch::TensorOptions().dtype(torch::kFloat).device(device);
  step_tensor_ = torch::zeros({}, o);
  one_ = torch::ones({}, o);
  zero_ = torch::zeros({}, o);
}

void AdamW::prepare_recorded_steps() {
  if (slots_.empty()) return;
  torch::NoGradGuard no_grad;
  make_step_tensors(slots_.front().param.device());
  step_tensor_.fill_(static_cast<double>(step_));
}

torch::Tensor AdamW::clip_and_step_recorded(const torch::Tensor& lr, double max_norm, const torch::Tensor& loss) {
  torch::NoGradGuard no_grad;
  const auto c = clip(max_norm, loss);
  const auto t = fused_lists();
  auto &params = t.params, &grads = t.grads, &exp_avgs = t.exp_avgs, &exp_avg_sqs = t.exp_avg_sqs;
  if (!compat::fused_adamw_supported(t.all_params, t.all_grads))
    throw std::runtime_error("AdamW: the recorded update needs the fused CUDA step (LibTorch 2.x, fp32 parameters)");
  if (!step_tensor_.defined()) throw std::logic_error("AdamW::clip_and_step_recorded before prepare_recorded_steps");
  step_tensor_.add_(1);  // on the device: each replay counts its own step (a skipped one too, as in step())
  const auto found_inf = c.bad.to(torch::kFloat);
  for (int g = 0; g < 2; ++g)
    compat::fused_adamw(params[g], grads[g], exp_avgs[g], exp_avg_sqs[g], step_tensor_, lr, options_.beta1,
                        options_.beta2, g == 1 ? options_.weight_decay : 0.0, options_.eps, c.scale, found_inf);
  return c.bad;
}

void AdamW::step(double lr, const torch::Tensor& grad_scale, const torch::Tensor& found_inf) {
  torch::NoGradGuard no_grad;
  bool done[2] = {false, false};  // a group the fused path updated ([0] no decay, [1] decay)
  if (!fused_off_) {
    const auto t = fused_lists();
    auto &params = t.params, &grads = t.grads, &exp_avgs = t.exp_avgs, &exp_avg_sqs = t.exp_avg_sqs;
    const auto& all_params = t.all_params;
    if (compat::fused_adamw_supported(all_params, t.all_grads)) {
      make_step_tensors(all_params.front().device());
      step_tensor_.fill_(static_cast<double>(step_ + 1));
      const auto& scale = grad_scale.defined() ? grad_scale : one_;
      const auto& inf = found_inf.defined() ? found_inf : zero_;
      try {
        for (int g = 0; g < 2; ++g) {
          compat::fused_adamw(params[g], grads[g], exp_avgs[g], exp_avg_sqs[g], step_tensor_, lr, options_.beta1,
                              options_.beta2, g == 1 ? options_.weight_decay : 0.0, options_.eps, scale, inf);
          done[g] = true;
        }
        ++step_;
        return;
      } catch (const std::exception& e) {  // a LibTorch that refuses it: the loop from now on
        fused_off_ = true;
        const std::string what = e.what();
        std::fprintf(stderr, "hsm: warning: the fused AdamW step failed (%s); using the per-tensor update\n",
                     what.substr(0, what.find('\n')).c_str());
      }
    }
  }
  if (found_inf.defined() && found_inf.item<double>() != 0) return;  // the loop's path: a host read
  ++step_;
  const double b1 = options_.beta1, b2 = options_.beta2;
  const double bias1 = 1 - std::pow(b1, static_cast<double>(step_));
  const double bias2 = 1 - std::pow(b2, static_cast<double>(step_));
  for (auto& s : slots_) {
    if (!s.param.grad().defined() || done[group(s)]) continue;
    const auto g = grad_scale.defined() ? s.param.grad() / grad_scale : s.param.grad();
    const bool fused = s.param.is_cpu() && s.param.scalar_type() == torch::kFloat32 && s.param.is_contiguous() &&
                       g.scalar_type() == torch::kFloat32 && g.is_contiguous();
    if (fused) {  // one pass over the four tensors (fast_kernels.h) instead of nine
      const double decay = s.decay && options_.weight_decay > 0 ? 1 - lr * options_.weight_decay : 1.0;
      float *p = s.param.data_ptr<float>(), *m = s.exp_avg.data_ptr<float>(), *v = s.exp_avg_sq.data_ptr<float>();
      const float* gp = g.data_ptr<float>();
      for_row_blocks(s.param.numel(), [&](int64_t a, int64_t e) {  // element-wise: split over the threads
        fast::adamw_update(p + a, gp + a, m + a, v + a, e - a, static_cast<float>(decay), static_cast<float>(b1),
                           static_cast<float>(b2), static_cast<float>(1.0 / bias2), static_cast<float>(options_.eps),
                           static_cast<float>(lr / bias1));
      });
      continue;
    }
    if (s.decay && options_.weight_decay > 0) s.param.mul_(1 - lr * options_.weight_decay);
    s.exp_avg.mul_(b1).add_(g, 1 - b1);
    s.exp_avg_sq.mul_(b2).addcmul_(g, g, 1 - b2);
    auto denom = (s.exp_avg_sq / bias2).sqrt_().add_(options_.eps);
    s.param.addcdiv_(s.exp_avg, denom, -lr / bias1);
  }
}

std::vector<std::pair<std::string, torch::Tensor>> AdamW::state() const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& s : slots_) {
    out.emplace_back("exp_avg." + s.name, s.exp_avg);
    out.emplace_back("exp_avg_sq." + s.name, s.exp_avg_sq);
  }
  return out;
}

void AdamW::load_state(const std::vector<std::pair<std::string, torch::Tensor>>& state, int64_t step) {
  std::unordered_map<std::string, torch::Tensor> by_name(state.begin(), state.end());
  torch::NoGradGuard no_grad;
  for (auto& s : slots_) {
    for (const std::string prefix : {"exp_avg.", "exp_avg_sq."}) {
      auto it = by_name.find(prefix + s.name);
      if (it == by_name.end()) throw std::runtime_error("optimizer state has no tensor '" + prefix + s.name + "'");
      torch::Tensor& dst = prefix == "exp_avg." ? s.exp_avg : s.exp_avg_sq;
      if (it->second.sizes() != dst.sizes())
        throw std::runtime_error("optimizer state '" + prefix + s.name + "' has the wrong shape");
      dst.copy_(it->second);
    }
  }
  step_ = step;
}

}  // namespace hsm
