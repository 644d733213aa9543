#include "kernels/parallel_gemm.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <omp.h>

#include <atomic>

#include "kernels/gemm.h"
#include "kernels/blas_threads.h"

namespace hsm {

namespace {
thread_local bool serial_scope = false;
}  // namespace

void init_aten_threads_here() {
  // Both copies of the once-per-thread flag: at::internal::lazy_init_num_threads is inline, and
  // against LibTorch 2.6 (Debian 13) the copy compiled into our code (at::parallel_for's, a
  // template) and LibTorch's own (its operators', reached through at::get_num_threads) keep a
  // thread_local flag each. With only ours set, LibTorch's first operator in a new thread reset
  // the count to its pool's; with only LibTorch's, our first at::parallel_for did: evaluate_batch's
  // own threads then ran their slices' products on 2 threads where a SerialScope set 1, and the
  // sums differed in their last bits (Evaluation.ThreadsGiveTheSameLossAsOneThread).
  at::internal::lazy_init_num_threads();
  (void)at::get_num_threads();
}

SerialScope::SerialScope() : was_serial_(serial_scope) {
  // ATen sets each thread's OpenMP count from its own setting at the thread's first parallel
  // call; do that first, or it would undo the one thread set here.
  init_aten_threads_here();
  omp_threads_ = omp_get_max_threads();
  omp_set_num_threads(1);  // this thread's OpenMP setting only (an ICV of its own task)
  serial_scope = true;
}

SerialScope::~SerialScope() {
  serial_scope = was_serial_;
  omp_set_num_threads(omp_threads_);
}

bool in_serial_scope() { return serial_scope; }

OneBlasThread::OneBlasThread() : before_(blas_threads()) {
  if (before_ > 1) set_blas_threads(1);
}

OneBlasThread::~OneBlasThread() {
  if (before_ > 1) set_blas_threads(before_);
}

bool split_gemms() { return at::get_num_threads() > 1 && blas_threads() <= 1; }

void for_row_blocks(int64_t rows, const std::function<void(int64_t, int64_t)>& f) {
  const int64_t threads = split_gemms() ? at::get_num_threads() : 1;
  if (threads <= 1 || rows < 32 || at::in_parallel_region() || serial_scope) {
    f(0, rows);
    return;
  }
  const int64_t blocks = std::min<int64_t>(threads, (rows + 15) / 16);
  auto bound = [&](int64_t b) { return std::min(rows, (rows * b / blocks + 15) / 16 * 16); };
  // The workers take the caller's thread-local state (grad mode above all: an autograd
  // function's forward runs without gradients on the calling thread only).
  const at::ThreadLocalState state;
  // Each thread takes the next block nobody has taken, not a fixed share: a thread whose core
  // another program holds starts late and finds its block done by the others, where a fixed
  // share made them wait for it (issue 37). The blocks are the same either way.
  std::atomic<int64_t> next{0};
  at::parallel_for(0, blocks, 1, [&](int64_t, int64_t) {
    const at::ThreadLocalStateGuard guard(state);
    for (int64_t b = next++; b < blocks; b = next++)
      if (bound(b + 1) > bound(b)) f(bound(b), bound(b + 1));
  });
}

void mm_rows(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b) {
  for_row_blocks(a.size(0), [&](int64_t r0, int64_t r1) {
    auto o = out.narrow(0, r0, r1 - r0);
    gemm(o, a.narrow(0, r0, r1 - r0), b);
  });
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// x: [N, in] contiguous, weight: [out, in], bias: [out] or undefined -> [N, out]
torch::Tensor split_linear_forward(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  auto y = torch::empty({x.size(0), weight.size(0)}, x.options());
  const auto wt = weight.t();
  for_row_blocks(x.size(0), [&](int64_t r0, int64_t r1) {
    auto yr = y.narrow(0, r0, r1 - r0);
    if (bias.defined()) yr.copy_(bias.expand_as(yr));  // then accumulated onto (beta = 1), as addmm does
    gemm(yr, x.narrow(0, r0, r1 - r0), wt, bias.defined() ? 1.0f : 0.0f);
  });
  return y;
}

// dx = g · weight (split over the rows of g), dweight = gᵀ · x (split over the weight's rows),
// dbias = Σ_rows g; x, weight saved by the forward.
variable_list split_linear_backward(AutogradContext* ctx, const torch::Tensor& grad, bool bias) {
  const auto saved = ctx->get_saved_variables();
  const auto& x = saved[0];
  const auto& weight = saved[1];
  const auto g = grad.contiguous();  // [N, out]
  torch::Tensor dx, dw, db;
  if (ctx->needs_input_grad(0)) {
    dx = torch::empty_like(x);
    mm_rows(dx, g, weight);  // [N, out] · [out, in]
  }
  if (ctx->needs_input_grad(1)) {
    dw = torch::empty_like(weight);
    for_row_blocks(weight.size(0), [&](int64_t o0, int64_t o1) {
      auto d = dw.narrow(0, o0, o1 - o0);
      gemm(d, g.narrow(1, o0, o1 - o0).t(), x);  // [rows, N] · [N, in]
    });
  }
  if (!bias) return {dx, dw};
  if (ctx->needs_input_grad(2)) db = g.sum(0);
  return {dx, dw, db};
}

// Two functions because an autograd function cannot take an undefined tensor as an input.
struct SplitLinear : torch::autograd::Function<SplitLinear> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight,
                               const torch::Tensor& bias) {
    ctx->save_for_backward({x, weight});
    return split_linear_forward(x, weight, bias);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return split_linear_backward(ctx, grads[0], true);
  }
};

struct SplitLinearNoBias : torch::autograd::Function<SplitLinearNoBias> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight) {
    ctx->save_for_backward({x, weight});
    return split_linear_forward(x, weight, torch::Tensor());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return split_linear_backward(ctx, grads[0], false);
  }
};

}  // namespace

torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!x.is_cpu() || x.scalar_type() != torch::kFloat32 || weight.scalar_type() != torch::kFloat32 ||
      !(split_gemms() || serial_scope))
    return torch::nn::functional::linear(x, weight, bias);
  const int64_t in = x.size(-1);
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  auto x2 = x.reshape({-1, in}).contiguous();
  if (x2.size(0) < 32) return torch::nn::functional::linear(x, weight, bias);  // decoding: nothing to split
  const bool grad = torch::GradMode::is_enabled() &&
                    (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
  if (!grad) return split_linear_forward(x2, weight, bias).view(sizes);
  return (bias.defined() ? SplitLinear::apply(x2, weight, bias) : SplitLinearNoBias::apply(x2, weight)).view(sizes);
}

torch::Tensor linear(const torch::nn::Linear& module, const torch::Tensor& x) {
  return linear(x, module->weight, module->bias);
}

}  // namespace hsm
