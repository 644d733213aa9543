#include "model/cuda_fused.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <stdexcept>

#include "model/dropout.h"
#include "model/mixers/mixer.h"
#include "model/torch_compat.h"

#if HSM_CUDA_KERNELS
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <map>
#include <mutex>
#include <vector>

#include "kernels/cuda/fused_kernels.h"
#include "kernels/dropout_hash.h"
#endif

namespace hsm::cuda_fused {
namespace {

// Which kernel families are on: HSM_CUDA_FUSED unset or 1: all; 0: none; else a comma-separated
// list of the ones on (the names below), for an A/B of one family.
constexpr unsigned kNorm = 1, kDropout = 2, kShift = 4, kLoss = 8, kGelu = 16, kAddNorm = 32;
// Every family with its name: the one list that HSM_CUDA_FUSED, describe() and the messages read.
constexpr std::pair<unsigned, const char*> kFamilies[] = {{kNorm, "norm"}, {kDropout, "dropout"}, {kShift, "shift"},
                                                          {kLoss, "loss"}, {kGelu, "gelu"},       {kAddNorm, "addnorm"}};
constexpr unsigned kAll = kNorm | kDropout | kShift | kLoss | kGelu | kAddNorm;

[[maybe_unused]] const char* family_name(unsigned family) {
  for (const auto& [bit, name] : kFamilies)
    if (bit == family) return name;
  return "?";
}
unsigned families_from_env() {
  const char* v = std::getenv("HSM_CUDA_FUSED");
  if (v == nullptr || std::string(v).empty() || std::string(v) == "1") return kAll;
  if (std::string(v) == "0") return 0;
  unsigned on = 0;
  std::string list = std::string(v) + ",";
  for (size_t start = 0, comma; (comma = list.find(',', start)) != std::string::npos; start = comma + 1) {
    const std::string name = list.substr(start, comma - start);
    unsigned bit = 0;
    for (const auto& [b, n] : kFamilies)
      if (name == n) bit = b;
    if (bit == 0 && !name.empty()) {
      std::string known;
      for (const auto& [b, n] : kFamilies) known += std::string(known.empty() ? "" : ",") + n;
      std::fprintf(stderr, "hsm: HSM_CUDA_FUSED names no kernel family '%s' (0, 1, or any of %s)\n", name.c_str(),
                   known.c_str());
    }
    on |= bit;
  }
  return on;
}
std::atomic<unsigned>& families() {
  static std::atomic<unsigned> on{families_from_env()};
  return on;
}
[[maybe_unused]] bool on(unsigned family) {
#if HSM_CUDA_KERNELS
  return (families().load(std::memory_order_relaxed) & family) != 0;
#else
  (void)family;
  return false;
#endif
}

bool fp32_cuda(const torch::Tensor& t) {
  return t.defined() && t.is_cuda() && t.scalar_type() == torch::kFloat32;
}

// The first use of a family on a device checks it against LibTorch (self_check below); false turns
// the family off for the process. Where the kernels are not built it is never reached (on() is false).
bool checked(unsigned family, const torch::Device& device);

}  // namespace

bool enabled() { return on(kAll); }

void set_enabled(bool enable) { families().store(enable ? kAll : 0, std::memory_order_relaxed); }

std::string describe() {
#if HSM_CUDA_KERNELS
  const unsigned f = families().load(std::memory_order_relaxed);
  if (f == kAll) return "fused CUDA kernels: on";
  if (f == 0) return "fused CUDA kernels: off (HSM_CUDA_FUSED=0)";
  std::string names;
  for (const auto& [bit, name] : kFamilies)
    if (f & bit) names += std::string(names.empty() ? "" : ",") + name;
  return "fused CUDA kernels: " + names + " only (HSM_CUDA_FUSED)";
#else
  return "fused CUDA kernels: not built (they need a CUDA LibTorch and a CUDA compiler at configure time)";
#endif
}

bool eligible_layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  auto fits = [&](const torch::Tensor& w) {
    return fp32_cuda(w) && w.dim() == 1 && w.size(0) == x.size(-1) && w.device() == x.device();
  };
  return on(kNorm) && fp32_cuda(x) && x.dim() >= 1 && x.size(-1) >= 1 && x.size(-1) <= 1024 && fits(weight) &&
         fits(bias) && checked(kNorm, x.device());
}

bool eligible_dropout(const torch::Tensor& h, const torch::Tensor& y) {
  if (!on(kDropout) || !y.defined() || !y.is_cuda() || y.numel() >= (int64_t{1} << 32)) return false;
  if (y.scalar_type() != torch::kFloat32 && y.scalar_type() != torch::kBFloat16) return false;
  return (!h.defined() || (fp32_cuda(h) && h.sizes() == y.sizes() && h.device() == y.device())) &&
         checked(kDropout, y.device());
}

bool eligible_shift_mix(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b, int64_t s) {
  if (!on(kShift) || !fp32_cuda(x) || x.dim() != 3 || s < 1 || x.size(2) > 1024 || !fp32_cuda(a) || !fp32_cuda(b))
    return false;
  const int64_t d = x.size(2);
  auto fits = [&](const torch::Tensor& w) { return w.numel() == 1 || (w.dim() == 1 && w.size(0) == d); };
  return fits(a) && fits(b) && (a.numel() == 1) == (b.numel() == 1) && a.device() == x.device() &&
         b.device() == x.device() && checked(kShift, x.device());
}

bool eligible_lm_loss(const torch::Tensor& h, const torch::Tensor& weight) {
  return on(kLoss) && fp32_cuda(h) && fp32_cuda(weight) && h.dim() == 2 && weight.dim() == 2 &&
         h.size(1) == weight.size(1) && compat::cuda_autocast_bf16() && checked(kLoss, h.device());
}

bool eligible_add_norm(const torch::Tensor& h_in, const torch::Tensor& y, const torch::Tensor& weight,
                       const torch::Tensor& bias) {
  if (!on(kAddNorm) || !fp32_cuda(h_in) || h_in.dim() < 1 || h_in.size(-1) < 1 || h_in.size(-1) > 1024) return false;
  if (!y.defined() || y.device() != h_in.device() || y.sizes() != h_in.sizes() || y.numel() >= (int64_t{1} << 32) ||
      (y.scalar_type() != torch::kFloat32 && y.scalar_type() != torch::kBFloat16))
    return false;
  auto fits = [&](const torch::Tensor& w) {
    return fp32_cuda(w) && w.dim() == 1 && w.size(0) == h_in.size(-1) && w.device() == h_in.device();
  };
  return fits(weight) && fits(bias) && checked(kAddNorm, h_in.device());
}

bool eligible_bias_gelu(const torch::Tensor& x, const torch::Tensor& bias) {
  const bool x_ok = fp32_cuda(x) || (x.is_cuda() && x.scalar_type() == torch::kBFloat16);
  return on(kGelu) && x_ok && fp32_cuda(bias) && bias.dim() == 1 && bias.device() == x.device() &&
         compat::cuda_autocast_bf16() && checked(kGelu, x.device());
}

#if HSM_CUDA_KERNELS
namespace {

namespace k = hsm::cuda_kernels;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The tensor's device's current stream. Every launch below happens under a CUDAGuard of that device
// (`on_device`), so the kernels' grids (sized for the current device) and their stream agree.
void* stream_of(const torch::Tensor& t) { return c10::cuda::getCurrentCUDAStream(t.device().index()).stream(); }
c10::cuda::CUDAGuard on_device(const torch::Tensor& t) { return c10::cuda::CUDAGuard(t.device()); }

void check_launch(const char* what) {
  const char* e = k::last_error();
  if (*e != '\0') throw std::runtime_error(std::string("CUDA kernel ") + what + ": " + e);
}

// The CPU's numbers for p (kernels/dropout_hash.h): keep where hash >= threshold, times scale.
uint32_t keep_threshold(double p) { return dropout_hash::threshold(p); }
float keep_scale(double p) { return dropout_hash::scale(p); }

struct LayerNormFn : torch::autograd::Function<LayerNormFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias, double eps) {
    const auto guard = on_device(x);
    const auto xc = x.contiguous();
    const int64_t d = x.size(-1), rows = x.numel() / d;
    auto y = torch::empty_like(xc);
    auto mean = torch::empty({rows}, xc.options());
    auto rstd = torch::empty({rows}, xc.options());
    const auto w = weight.contiguous(), b = bias.contiguous();
    k::layer_norm_forward(xc.data_ptr<float>(), w.data_ptr<float>(), b.data_ptr<float>(), y.data_ptr<float>(),
                          mean.data_ptr<float>(), rstd.data_ptr<float>(), rows, d, static_cast<float>(eps),
                          stream_of(x));
    check_launch("layer_norm_forward");
    ctx->save_for_backward({xc, w, mean, rstd});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &w = saved[1], &mean = saved[2], &rstd = saved[3];
    const auto g = grads[0].to(torch::kFloat32).contiguous();
    const auto guard = on_device(x);
    const int64_t d = x.size(-1), rows = x.numel() / d;
    const int64_t parts = k::partial_rows(k::RowSum::kLayerNormBackward, rows, d);
    auto dx = torch::empty_like(x);
    auto dw_part = torch::empty({parts, d}, x.options());
    auto db_part = torch::empty({parts, d}, x.options());
    k::layer_norm_backward(g.data_ptr<float>(), x.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
                           w.data_ptr<float>(), dx.data_ptr<float>(), dw_part.data_ptr<float>(),
                           db_part.data_ptr<float>(), rows, d, stream_of(x));
    check_launch("layer_norm_backward");
    return {dx, dw_part.sum(0), db_part.sum(0), torch::Tensor()};
  }
};

// y · mask, or h + y · mask: two functions because an autograd function takes no undefined input.
torch::Tensor masked(const torch::Tensor& h, const torch::Tensor& y, double p, const torch::Tensor& seed) {
  const auto guard = on_device(y);
  const auto yc = y.contiguous();
  auto out = h.defined() ? torch::empty(h.sizes(), h.options()) : torch::empty(yc.sizes(), yc.options());
  const auto hc = h.defined() ? h.contiguous() : h;
  k::dropout_forward(hc.defined() ? hc.data_ptr<float>() : nullptr, yc.data_ptr(),
                     yc.scalar_type() == torch::kBFloat16, out.data_ptr(), out.scalar_type() == torch::kBFloat16,
                     seed.data_ptr<int64_t>(), keep_threshold(p), keep_scale(p), yc.numel(), stream_of(yc));
  check_launch("dropout_forward");
  return out;
}

torch::Tensor masked_grad(AutogradContext* ctx, const torch::Tensor& grad) {
  const auto seed = ctx->get_saved_variables()[0];
  const double p = ctx->saved_data["p"].toDouble();
  const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["y_dtype"].toInt());
  const auto g = grad.contiguous();
  const auto guard = on_device(g);
  auto dy = torch::empty(g.sizes(), g.options().dtype(dtype));
  k::dropout_backward(g.data_ptr(), g.scalar_type() == torch::kBFloat16, dy.data_ptr(), dtype == torch::kBFloat16,
                      seed.data_ptr<int64_t>(), keep_threshold(p), keep_scale(p), g.numel(), stream_of(g));
  check_launch("dropout_backward");
  return dy;
}

struct DropoutFn : torch::autograd::Function<DropoutFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& y, double p, const torch::Tensor& seed) {
    ctx->save_for_backward({seed});
    ctx->saved_data["p"] = p;
    ctx->saved_data["y_dtype"] = static_cast<int64_t>(y.scalar_type());
    return masked({}, y, p, seed);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {masked_grad(ctx, grads[0]), torch::Tensor(), torch::Tensor()};
  }
};

struct ResidualDropoutFn : torch::autograd::Function<ResidualDropoutFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& y, double p,
                               const torch::Tensor& seed) {
    ctx->save_for_backward({seed});
    ctx->saved_data["p"] = p;
    ctx->saved_data["y_dtype"] = static_cast<int64_t>(y.scalar_type());
    return masked(h, y, p, seed);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0], masked_grad(ctx, grads[0]), torch::Tensor(), torch::Tensor()};
  }
};

struct ShiftMixFn : torch::autograd::Function<ShiftMixFn> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& a,
                               const torch::Tensor& b, int64_t s) {
    const auto guard = on_device(x);
    const auto xc = x.contiguous(), ac = a.contiguous(), bc = b.contiguous();
    const int64_t T = x.size(1), d = x.size(2), rows = x.size(0) * T;
    auto y = torch::empty_like(xc);
    k::shift_mix_forward(xc.data_ptr<float>(), ac.data_ptr<float>(), bc.data_ptr<float>(), ac.numel() != 1,
                         y.data_ptr<float>(), rows, T, d, s, stream_of(x));
    check_launch("shift_mix_forward");
    ctx->save_for_backward({xc, ac, bc});
    ctx->saved_data["s"] = s;
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &a = saved[1], &b = saved[2];
    const int64_t s = ctx->saved_data["s"].toInt();
    const auto g = grads[0].to(torch::kFloat32).contiguous();
    const auto guard = on_device(x);
    const int64_t T = x.size(1), d = x.size(2), rows = x.size(0) * T;
    const int64_t parts = k::partial_rows(k::RowSum::kShiftMixBackward, rows, d);
    auto dx = torch::empty_like(x);
    auto da_part = torch::empty({parts, d}, x.options());
    auto db_part = torch::empty({parts, d}, x.options());
    const bool vector = a.numel() != 1;
    k::shift_mix_backward(g.data_ptr<float>(), x.data_ptr<float>(), a.data_ptr<float>(), b.data_ptr<float>(), vector,
                          dx.data_ptr<float>(), da_part.data_ptr<float>(), db_part.data_ptr<float>(), rows, T, d, s,
                          stream_of(x));
    check_launch("shift_mix_backward");
    auto da = da_part.sum(0), db = db_part.sum(0);  // [d]
    if (!vector) {
      da = da.sum().reshape(a.sizes());
      db = db.sum().reshape(b.sizes());
    }
    return {dx, da, db, torch::Tensor()};
  }
};

struct LmLossFn : torch::autograd::Function<LmLossFn> {
  // h [N, d], weight [V, d] fp32; targets [N] -> the mean loss (0-dim fp32).
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& weight,
                               const torch::Tensor& targets) {
    const auto guard = on_device(h);
    const int64_t N = h.size(0), V = weight.size(0);
    const auto hb = h.to(torch::kBFloat16).contiguous();
    const auto wb = weight.to(torch::kBFloat16).contiguous();
    auto logits = torch::mm(hb, wb.t()).contiguous();  // [N, V] bf16, then the loss's gradient in place
    auto row_loss = torch::empty({N}, h.options());
    const auto t = targets.to(torch::kLong).contiguous();
    k::softmax_xent_inplace(logits.data_ptr(), t.data_ptr<int64_t>(), row_loss.data_ptr<float>(), N, V, stream_of(h));
    check_launch("softmax_xent");
    ctx->save_for_backward({logits, hb, wb});
    return row_loss.mean();
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &grad_logits = saved[0], &hb = saved[1], &wb = saved[2];
    // d(mean loss)/d(logits) = (softmax − one-hot) / N, times the incoming gradient.
    const auto scale = grads[0].to(torch::kFloat32) / static_cast<double>(grad_logits.size(0));
    auto dh = torch::mm(grad_logits, wb).to(torch::kFloat32).mul_(scale);      // [N, d]
    auto dw = torch::mm(grad_logits.t(), hb).to(torch::kFloat32).mul_(scale);  // [V, d]
    return {dh, dw, torch::Tensor()};
  }
};

struct AddNormFn : torch::autograd::Function<AddNormFn> {
  // -> {h = h_in + y · mask, x = LayerNorm(h)}, x in bf16 where x_bf16 (x's gradient then comes back
  // in bf16 too, which the backward kernel reads as it is)
  static variable_list forward(AutogradContext* ctx, const torch::Tensor& h_in, const torch::Tensor& y,
                               const torch::Tensor& weight, const torch::Tensor& bias, const torch::Tensor& seed,
                               double p, double eps, bool x_bf16) {
    const auto guard = on_device(h_in);
    const auto hc = h_in.contiguous(), yc = y.contiguous(), w = weight.contiguous(), b = bias.contiguous();
    const int64_t d = hc.size(-1), rows = hc.numel() / d;
    auto h = torch::empty_like(hc);
    auto x = torch::empty_like(hc, x_bf16 ? torch::kBFloat16 : torch::kFloat32);
    auto mean = torch::empty({rows}, hc.options()), rstd = torch::empty({rows}, hc.options());
    k::add_norm_forward(hc.data_ptr<float>(), yc.data_ptr(), yc.scalar_type() == torch::kBFloat16,
                        seed.data_ptr<int64_t>(), keep_threshold(p), keep_scale(p), w.data_ptr<float>(),
                        b.data_ptr<float>(), h.data_ptr<float>(), x.data_ptr(), x_bf16, mean.data_ptr<float>(),
                        rstd.data_ptr<float>(), rows, d, static_cast<float>(eps), stream_of(h_in));
    check_launch("add_norm_forward");
    ctx->save_for_backward({h, w, mean, rstd, seed});
    ctx->saved_data["p"] = p;
    ctx->saved_data["y_dtype"] = static_cast<int64_t>(y.scalar_type());
    return {h, x};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &h = saved[0], &w = saved[1], &mean = saved[2], &rstd = saved[3], &seed = saved[4];
    const double p = ctx->saved_data["p"].toDouble();
    const auto y_dtype = static_cast<torch::ScalarType>(ctx->saved_data["y_dtype"].toInt());
    const auto guard = on_device(h);
    // Either output's gradient may be undefined (not used further): the kernel takes it as zero.
    const auto gh = grads[0].defined() ? grads[0].to(torch::kFloat32).contiguous() : torch::Tensor();
    const auto gx = grads[1].defined() ? grads[1].contiguous() : torch::Tensor();
    const bool gx_bf16 = gx.defined() && gx.scalar_type() == torch::kBFloat16;
    const auto gx_use = gx.defined() && !gx_bf16 ? gx.to(torch::kFloat32) : gx;
    const int64_t d = h.size(-1), rows = h.numel() / d;
    const int64_t parts = k::partial_rows(k::RowSum::kAddNormBackward, rows, d);
    auto dh_in = torch::empty_like(h);
    auto dy = torch::empty(h.sizes(), h.options().dtype(y_dtype));
    auto dw_part = torch::empty({parts, d}, h.options()), db_part = torch::empty({parts, d}, h.options());
    k::add_norm_backward(gx_use.defined() ? gx_use.data_ptr() : nullptr, gx_bf16,
                         gh.defined() ? gh.data_ptr<float>() : nullptr, h.data_ptr<float>(), mean.data_ptr<float>(),
                         rstd.data_ptr<float>(), w.data_ptr<float>(), seed.data_ptr<int64_t>(), keep_threshold(p),
                         keep_scale(p), dh_in.data_ptr<float>(), dy.data_ptr(), y_dtype == torch::kBFloat16,
                         dw_part.data_ptr<float>(), db_part.data_ptr<float>(), rows, d, stream_of(h));
    check_launch("add_norm_backward");
    return {dh_in, dy, dw_part.sum(0), db_part.sum(0), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

struct BiasGeluFn : torch::autograd::Function<BiasGeluFn> {
  // u bf16 [..., f], bias fp32 [f] -> GELU(u + bias) bf16 [..., f].
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& u, const torch::Tensor& bias) {
    const auto guard = on_device(u);
    const auto uc = u.contiguous(), bc = bias.contiguous();
    const int64_t f = u.size(-1), rows = f > 0 ? u.numel() / f : 0;
    auto a = torch::empty_like(uc);
    k::bias_gelu_forward(uc.data_ptr(), bc.data_ptr<float>(), a.data_ptr(), rows, f, stream_of(u));
    check_launch("bias_gelu_forward");
    ctx->save_for_backward({uc, bc});
    return a;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &u = saved[0], &bias = saved[1];
    const auto g = grads[0].to(torch::kBFloat16).contiguous();
    const auto guard = on_device(u);
    const int64_t f = u.size(-1), rows = f > 0 ? u.numel() / f : 0;
    auto du = torch::empty_like(u);
    auto db_part = torch::empty({k::partial_rows(k::RowSum::kBiasGeluBackward, rows, f), f}, bias.options());
    k::bias_gelu_backward(g.data_ptr(), u.data_ptr(), bias.data_ptr<float>(), du.data_ptr(), db_part.data_ptr<float>(),
                          rows, f, stream_of(u));
    check_launch("bias_gelu_backward");
    return {du, db_part.sum(0)};
  }
};

torch::Tensor draw_seed(const torch::Tensor& like) {
  return torch::randint(std::numeric_limits<int64_t>::max(), {1},
                        torch::TensorOptions().dtype(torch::kLong).device(like.device()));
}

}  // namespace

torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps) {
  return LayerNormFn::apply(x, weight, bias, eps);
}

torch::Tensor dropout_with_seed(const torch::Tensor& h, const torch::Tensor& y, double p, const torch::Tensor& seed) {
  return h.defined() ? ResidualDropoutFn::apply(h, y, p, seed) : DropoutFn::apply(y, p, seed);
}

torch::Tensor dropout(const torch::Tensor& h, const torch::Tensor& y, double p) {
  return dropout_with_seed(h, y, p, draw_seed(y));
}

torch::Tensor shift_mix(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b, int64_t s) {
  return ShiftMixFn::apply(x, a, b, s);
}

torch::Tensor lm_loss(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets) {
  return LmLossFn::apply(h, weight, targets);
}

std::pair<torch::Tensor, torch::Tensor> add_norm_with_seed(const torch::Tensor& h_in, const torch::Tensor& y, double p,
                                                           const torch::Tensor& weight, const torch::Tensor& bias,
                                                           double eps, const torch::Tensor& seed, bool x_bf16) {
  const auto out = AddNormFn::apply(h_in, y, weight, bias, seed, p, eps, x_bf16);
  return {out[0], out[1]};
}

std::pair<torch::Tensor, torch::Tensor> add_norm(const torch::Tensor& h_in, const torch::Tensor& y, double p,
                                                 const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                                                 bool x_bf16) {
  return add_norm_with_seed(h_in, y, p, weight, bias, eps, draw_seed(y), x_bf16);
}

torch::Tensor bias_gelu(const torch::Tensor& u, const torch::Tensor& bias) {
  // Autocast gives the first product in bf16; anything else (a caller without it) takes LibTorch's.
  if (u.scalar_type() != torch::kBFloat16 || !u.is_cuda() || !fp32_cuda(bias) || bias.dim() != 1 ||
      bias.size(0) != u.size(-1))
    return torch::gelu(u + bias);
  return BiasGeluFn::apply(u, bias);
}

namespace {

// ---- the check at first use -----------------------------------------------------------------------
// Each family's kernels against LibTorch's operations on random inputs on the device, forward and
// backward, in every width variant and with more rows than a wave of the GPU has warps (so a warp
// sums several rows: 9,000 rows against 4,224 warps of an H100's wave of the LayerNorm backward). Inputs come from a generator of its own (the run's random streams are untouched),
// autocast is off for it, and a few milliseconds once per process and device. A family whose
// result differs is turned off for the process, saying so once on stderr: a kernel that is wrong
// on some GPU or CUDA version costs speed, never a run. Tolerances: fp32 sums in another order
// (1e-4 of the largest value; 1e-3 for sums over thousands of rows); the bf16 output layer 2% in
// norm (the rounding of its gradient); a wrong kernel is off by O(1).

struct CheckInputs {
  at::Generator gen = at::detail::createCPUGenerator(20261127);
  torch::Device device;
  explicit CheckInputs(const torch::Device& d) : device(d) {}
  torch::Tensor randn(at::IntArrayRef sizes) { return torch::randn(sizes, gen).to(device); }
  torch::Tensor leaf(at::IntArrayRef sizes) { return randn(sizes).requires_grad_(true); }
};

// max |a − b| over max |b|, as a fraction (NaN anywhere: 1).
double worst(const torch::Tensor& a, const torch::Tensor& b) {
  const auto A = a.detach().to(torch::kFloat64), B = b.detach().to(torch::kFloat64);
  const double d = (A - B).abs().max().item<double>(), scale = std::max(B.abs().max().item<double>(), 1e-12);
  return std::isfinite(d) ? d / scale : 1.0;
}
double in_norm(const torch::Tensor& a, const torch::Tensor& b) {
  const auto A = a.detach().to(torch::kFloat64), B = b.detach().to(torch::kFloat64);
  const double d = (A - B).norm().item<double>(), scale = std::max(B.norm().item<double>(), 1e-12);
  return std::isfinite(d) ? d / scale : 1.0;
}

// f()'s output and the gradients of (output · up).sum() with respect to `leaves`, taken from them
// and cleared, so that the fused pass and LibTorch's can be run one after the other on one input.
struct Pass {
  torch::Tensor out;
  std::vector<torch::Tensor> grads;
};
Pass run(const std::function<torch::Tensor()>& f, const torch::Tensor& up, std::vector<torch::Tensor> leaves) {
  Pass p{f(), {}};
  (p.out * up).sum().backward();
  for (auto& leaf : leaves) {
    p.grads.push_back(leaf.grad().clone());
    leaf.mutable_grad().reset();
  }
  return p;
}

// The largest disagreement, as a fraction of the tolerance (≤ 1: the family passes).
double check_norm(CheckInputs& in) {
  double bad = 0;
  for (const int64_t d : {100, 256, 512, 700}) {
    const auto x = in.leaf({9000, d}), w = in.leaf({d}), b = in.leaf({d}), up = in.randn({9000, d});
    const Pass fused = run([&] { return layer_norm(x, w, b, 1e-5); }, up, {x, w, b});
    const Pass ref = run([&] { return torch::layer_norm(x, {d}, w, b, 1e-5); }, up, {x, w, b});
    bad = std::max({bad, worst(fused.out, ref.out) / 1e-4, worst(fused.grads[0], ref.grads[0]) / 1e-3,
                    worst(fused.grads[1], ref.grads[1]) / 1e-3, worst(fused.grads[2], ref.grads[2]) / 1e-3});
  }
  return bad;
}

// Against the CPU's mask for the same seed (the one hash of kernels/dropout_hash.h).
double check_dropout(CheckInputs& in) {
  double bad = 0;
  const int64_t seed = 0x5eed1234abcdLL;
  const auto seed_t = torch::full({1}, seed, torch::TensorOptions().dtype(torch::kLong).device(in.device));
  const auto mask = dropout_mask({5000, 96}, 0.1, static_cast<uint64_t>(seed)).to(in.device);
  for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
    const auto y = in.randn({5000, 96}).to(dtype).requires_grad_(true), h = in.leaf({5000, 96});
    const auto up = in.randn({5000, 96});
    const Pass fused = run([&] { return dropout_with_seed(h, y, 0.1, seed_t); }, up, {h, y});
    const auto y32 = y.detach().to(torch::kFloat32);
    auto rounded = [&](const torch::Tensor& t) { return t.to(dtype).to(torch::kFloat32); };  // to y's type
    bad = std::max({bad, worst(fused.out, h.detach() + y32 * mask) / 1e-5, worst(fused.grads[0], up) / 1e-6,
                    worst(fused.grads[1].to(torch::kFloat32), rounded(up * mask)) / 1e-5,
                    worst(dropout_with_seed({}, y.detach(), 0.1, seed_t).to(torch::kFloat32), rounded(y32 * mask)) /
                        1e-5});
  }
  return bad;
}

double check_shift(CheckInputs& in) {
  double bad = 0;
  const int64_t B = 30, T = 200;  // 6,000 rows: more than a wave's warps, as for LayerNorm
  for (const auto& [d, vector, s] : {std::tuple<int64_t, bool, int64_t>{256, false, 7}, {100, true, 64},
                                     {700, true, 150}, {256, false, 250}}) {
    const auto x = in.leaf({B, T, d}), up = in.randn({B, T, d});
    const auto a = vector ? in.leaf({d}) : in.leaf({}), b = vector ? in.leaf({d}) : in.leaf({});
    const int64_t shift = s;  // a lambda cannot capture a structured binding in C++17
    const Pass fused = run([&] { return shift_mix(x, a, b, shift); }, up, {x, a, b});
    const Pass ref = run([&] { return a * x + b * shift_right(x, shift); }, up, {x, a, b});
    bad = std::max({bad, worst(fused.out, ref.out) / 1e-4, worst(fused.grads[0], ref.grads[0]) / 1e-4,
                    worst(fused.grads[1], ref.grads[1]) / 1e-3, worst(fused.grads[2], ref.grads[2]) / 1e-3});
  }
  return bad;
}

double check_loss(CheckInputs& in) {
  double bad = 0;
  const auto up = torch::full({}, 3.0, torch::TensorOptions().device(in.device));  // an incoming gradient not 1
  for (const int64_t V : {1000, 5000}) {
    const int64_t N = 2000, d = 64;
    const auto h = in.leaf({N, d}), w = (in.randn({V, d}) * 0.3).requires_grad_(true);
    const auto t = torch::randint(0, V, {N}, in.gen).to(in.device);
    const Pass fused = run([&] { return lm_loss(h, w, t); }, up, {h, w});
    const Pass ref = run(
        [&] {
          const auto logits = torch::mm(h.to(torch::kBFloat16), w.to(torch::kBFloat16).t()).to(torch::kFloat32);
          return torch::nn::functional::cross_entropy(logits, t);
        },
        up, {h, w});
    bad = std::max({bad, worst(fused.out, ref.out) / 2e-4, in_norm(fused.grads[0], ref.grads[0]) / 2e-2,
                    in_norm(fused.grads[1], ref.grads[1]) / 2e-2});
  }
  return bad;
}

// bf16 in and out: each value to 1% of the largest (bf16 keeps 8 bits; both sides round once or
// twice), the bias gradient, a sum over 9,000 rows, to 1% in norm. Widths of one block across
// (100), of several (1024, the FFN of d 256) and one that is no multiple of the block (1500).
double check_gelu(CheckInputs& in) {
  double bad = 0;
  for (const int64_t f : {100, 1024, 1500}) {
    const auto u = in.randn({9000, f}).mul(2).to(torch::kBFloat16).requires_grad_(true);
    const auto b = in.leaf({f}), up = in.randn({9000, f});
    const Pass fused = run([&] { return bias_gelu(u, b); }, up, {u, b});
    const Pass ref = run([&] { return torch::gelu(u.to(torch::kFloat32) + b).to(torch::kBFloat16); }, up, {u, b});
    bad = std::max({bad, worst(fused.out, ref.out) / 1e-2, worst(fused.grads[0], ref.grads[0]) / 1e-2,
                    in_norm(fused.grads[1], ref.grads[1]) / 1e-2});
  }
  return bad;
}

// Against h = h_in + y · (the CPU's mask for the same seed), then torch::layer_norm, as one output
// [h, x] so that both gradients reach the kernel: the LayerNorm tolerances above; y's gradient in
// bf16 to 1% of the largest (one rounding, of nearly the same value, on both sides). x in bf16
// (x_bf16) against torch::layer_norm's rounded to bf16: to 1% too (the two fp32 values, 1e-6 apart,
// may round to neighbouring bf16 values), and x's gradient then reaches both sides in bf16.
double check_add_norm(CheckInputs& in) {
  double bad = 0;
  const int64_t seed = 0x5eed4321dcbaLL, rows = 9000;
  const auto seed_t = torch::full({1}, seed, torch::TensorOptions().dtype(torch::kLong).device(in.device));
  for (const int64_t d : {100, 256, 700}) {
    const auto mask = dropout_mask({rows, d}, 0.1, static_cast<uint64_t>(seed)).to(in.device);
    for (const auto dtype : {torch::kFloat32, torch::kBFloat16}) {
      for (const bool x_bf16 : {false, true}) {
        const auto x_type = x_bf16 ? torch::kBFloat16 : torch::kFloat32;
        const auto h_in = in.leaf({rows, d}), y = in.randn({rows, d}).to(dtype).requires_grad_(true);
        const auto w = in.leaf({d}), b = in.leaf({d}), up = in.randn({rows, 2 * d});
        bool x_type_right = false;
        const Pass fused = run(
            [&] {
              const auto [h, x] = add_norm_with_seed(h_in, y, 0.1, w, b, 1e-5, seed_t, x_bf16);
              x_type_right = x.scalar_type() == x_type;
              return torch::cat({h, x.to(torch::kFloat32)}, 1);
            },
            up, {h_in, y, w, b});
        if (!x_type_right) return 1e9;
        const Pass ref = run(
            [&] {
              const auto h = h_in + y.to(torch::kFloat32) * mask;
              const auto x = torch::layer_norm(h, {d}, w, b, 1e-5).to(x_type);
              return torch::cat({h, x.to(torch::kFloat32)}, 1);
            },
            up, {h_in, y, w, b});
        const double y_tol = dtype == torch::kBFloat16 ? 1e-2 : 1e-4, x_tol = x_bf16 ? 1e-2 : 1e-4;
        bad = std::max({bad, worst(fused.out.narrow(1, 0, d), ref.out.narrow(1, 0, d)) / 1e-4,
                        worst(fused.out.narrow(1, d, d), ref.out.narrow(1, d, d)) / x_tol,
                        worst(fused.grads[0], ref.grads[0]) / 1e-4,
                        worst(fused.grads[1].to(torch::kFloat32), ref.grads[1].to(torch::kFloat32)) / y_tol,
                        worst(fused.grads[2], ref.grads[2]) / 1e-3, worst(fused.grads[3], ref.grads[3]) / 1e-3});
      }
    }
  }
  return bad;
}

double self_check(unsigned family, const torch::Device& device) {
  c10::InferenceMode not_inference(false);
  torch::AutoGradMode grad(true);
  const c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const c10::cuda::CUDAGuard device_guard(device);
  CheckInputs in(device);
  switch (family) {
    case kNorm: return check_norm(in);
    case kDropout: return check_dropout(in);
    case kShift: return check_shift(in);
    case kGelu: return check_gelu(in);
    case kAddNorm: return check_add_norm(in);
    default: return check_loss(in);
  }
}

struct CheckResult {
  bool passed = false;
  std::string why;  // for one that did not pass
};
struct CheckResults {
  std::mutex mutex;
  std::map<std::pair<unsigned, int>, CheckResult> by_family;  // (family, device index), families' order
};
CheckResults& check_results_store() {
  static CheckResults store;
  return store;
}

bool checked(unsigned family, const torch::Device& device) {
  auto& store = check_results_store();
  const std::lock_guard<std::mutex> lock(store.mutex);
  const auto key = std::make_pair(family, static_cast<int>(device.index()));
  if (const auto it = store.by_family.find(key); it != store.by_family.end()) return it->second.passed;
  // Not while a CUDA graph is being recorded (the check synchronises): LibTorch's operations then,
  // and the check at the next eager use. The trainer's and bench's eager warm-up steps come first.
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(c10::cuda::getCurrentCUDAStream(device.index()).stream(), &capturing) != cudaSuccess ||
      capturing != cudaStreamCaptureStatusNone)
    return false;
  double bad = 2;
  std::string why;
  try {
    bad = self_check(family, device);
  } catch (const std::exception& e) {
    why = e.what();
  }
  const bool ok = bad <= 1.0;
  if (!ok && why.empty()) why = "off by " + std::to_string(bad) + "x the tolerance";
  store.by_family[key] = {ok, why.substr(0, 300)};
  if (!ok) {
    std::fprintf(stderr, "hsm: the fused CUDA %s kernels disagreed with LibTorch on %s (%s): LibTorch's operations "
                 "are used instead\n", family_name(family), device.str().c_str(), store.by_family[key].why.c_str());
  }
  return ok;
}

}  // namespace

std::string check_results() {
  auto& store = check_results_store();
  const std::lock_guard<std::mutex> lock(store.mutex);
  std::string out;
  for (const auto& [key, result] : store.by_family) {
    out += std::string(out.empty() ? "" : ", ") + family_name(key.first) +
           (result.passed ? " passed" : " disagreed") + " on " + torch::Device(torch::kCUDA, key.second).str();
    if (!result.passed) out += " (" + result.why + ")";
  }
  return out;
}

#else  // built without the kernels: eligible_* say no, so these are never reached

namespace {
[[noreturn]] void not_built() { throw std::logic_error(describe()); }
bool checked(unsigned, const torch::Device&) { return false; }
}  // namespace
std::string check_results() { return ""; }
torch::Tensor layer_norm(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, double) { not_built(); }
torch::Tensor dropout_with_seed(const torch::Tensor&, const torch::Tensor&, double, const torch::Tensor&) {
  not_built();
}
torch::Tensor dropout(const torch::Tensor&, const torch::Tensor&, double) { not_built(); }
torch::Tensor shift_mix(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, int64_t) { not_built(); }
torch::Tensor lm_loss(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) { not_built(); }
torch::Tensor bias_gelu(const torch::Tensor&, const torch::Tensor&) { not_built(); }
std::pair<torch::Tensor, torch::Tensor> add_norm_with_seed(const torch::Tensor&, const torch::Tensor&, double,
                                                           const torch::Tensor&, const torch::Tensor&, double,
                                                           const torch::Tensor&, bool) {
  not_built();
}
std::pair<torch::Tensor, torch::Tensor> add_norm(const torch::Tensor&, const torch::Tensor&, double,
                                                 const torch::Tensor&, const torch::Tensor&, double, bool) {
  not_built();
}

#endif

}  // namespace hsm::cuda_fused
