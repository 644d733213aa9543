// The tied output layer with the cross-entropy, fused and in row chunks (issue 9).
//
// The plain path makes [N, V] logits (N = batch × context, V = 5000: 82 MB at 32 × 128), a
// log-softmax of the same size kept for the backward pass, and two more of that size in the
// backward pass; each is larger than glibc's mmap threshold, so each is page-faulted in afresh
// every step. Here, per chunk of rows, the forward pass computes the logits, the loss and
// already the gradients (softmax − one-hot, times the weight and the hidden states): the
// backward pass only scales them by the incoming gradient. Same FLOPs, chunk-sized memory.
#include "kernels/fast_kernels.h"
#include "kernels/gemm.h"
#include "kernels/token_scores_rows.h"
#include "model/lm_head.h"
#include "model/cuda_fused.h"
#include "kernels/parallel_gemm.h"

namespace hsm {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int64_t kChunkRows = 1024;  // 1024 × 5000 floats = 20 MB per chunk

struct FusedLmLoss : torch::autograd::Function<FusedLmLoss> {
  // h: [N, d], weight: [V, d], targets: [N] int64 -> mean loss (scalar)
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& weight,
                               const torch::Tensor& targets) {
    const int64_t N = h.size(0), V = weight.size(0);
    auto dh = torch::empty_like(h);
    auto dweight = torch::zeros_like(weight);
    const auto tcont = targets.to(torch::kLong).contiguous();
    double loss = 0;
    for (int64_t r0 = 0; r0 < N; r0 += kChunkRows) {
      const int64_t n = std::min(kChunkRows, N - r0);
      auto hc = h.narrow(0, r0, n);
      auto grad = torch::empty({n, V}, h.options());
      std::vector<double> part(static_cast<size_t>(n / 16 + 1), 0.0);  // per row block, summed in order
      for_row_blocks(n, [&](int64_t a, int64_t b) {
        auto g = grad.narrow(0, a, b - a);
        gemm(g, hc.narrow(0, a, b - a), weight.t());  // [rows, V] logits, then softmax − one-hot
        part[static_cast<size_t>(a / 16)] =
            fast::softmax_xent_grad_rows(g.data_ptr<float>(), tcont.data_ptr<int64_t>() + r0 + a, b - a, V);
        auto dh_rows = dh.narrow(0, r0 + a, b - a);
        gemm(dh_rows, g, weight);  // [rows, d]
      });
      for (double p : part) loss += p;
      for_row_blocks(V, [&](int64_t a, int64_t b) {  // dweight[a:b] += grad[:, a:b]ᵀ · hc
        auto dw = dweight.narrow(0, a, b - a);
        gemm(dw, grad.narrow(1, a, b - a).t(), hc, 1.0f);
      });
    }
    const double inv_n = 1.0 / static_cast<double>(N);
    ctx->save_for_backward({dh.mul_(inv_n), dweight.mul_(inv_n)});
    return torch::tensor(loss * inv_n, h.options());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    return {saved[0] * grads[0], saved[1] * grads[0], torch::Tensor()};
  }
};

}  // namespace

LossSums lm_head_loss_sums(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets,
                           const RowScores& rows) {
  const auto flat = h.reshape({-1, h.size(-1)});
  const auto t = targets.reshape({-1}).to(torch::kLong).contiguous();
  const int64_t N = flat.size(0), V = weight.size(0);
  LossSums sums;
  if (flat.is_cpu() && flat.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32) {
    // Loss and accuracy in one pass over each row of logits (fast_kernels.h); per block of rows
    // (one per thread in split mode, kernels/parallel_gemm.h), added in row order.
    for (int64_t r0 = 0; r0 < N; r0 += kChunkRows) {
      const int64_t n = std::min(kChunkRows, N - r0);
      auto logits = torch::empty({n, V}, flat.options());  // [n, V]
      std::vector<LossSums> part(static_cast<size_t>(n / 16 + 1));
      for_row_blocks(n, [&](int64_t a, int64_t b) {
        auto l = logits.narrow(0, a, b - a);
        gemm(l, flat.narrow(0, r0 + a, b - a), weight.t());
        LossSums& p = part[static_cast<size_t>(a / 16)];
        const int64_t row = r0 + a;
        fast::cross_entropy_rows(l.data_ptr<float>(), t.data_ptr<int64_t>() + row, b - a, V, &p.loss_sum, &p.correct,
                                 rows.loss ? rows.loss + row : nullptr, rows.rank ? rows.rank + row : nullptr);
      });
      for (const LossSums& p : part) {
        sums.loss_sum += p.loss_sum;
        sums.correct += p.correct;
      }
    }
    return sums;
  }
  for (int64_t r0 = 0; r0 < N; r0 += kChunkRows) {  // CUDA, bf16: LibTorch's operations per chunk
    const int64_t n = std::min(kChunkRows, N - r0);
    const auto logits = torch::mm(flat.narrow(0, r0, n), weight.t()).to(torch::kFloat32);  // [n, V]
    const auto tc = t.narrow(0, r0, n);
    if (rows.loss || rows.rank) {
      // Per token: the rows' losses, summed here in double in row order, are the sum.
      const auto loss = torch::nn::functional::cross_entropy(
                            logits, tc, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
                            .to(torch::kCPU, torch::kFloat64)
                            .contiguous();
      const double* l = loss.data_ptr<double>();
      for (int64_t r = 0; r < n; ++r) {
        sums.loss_sum += l[r];
        if (rows.loss) rows.loss[r0 + r] = l[r];
      }
      if (rows.rank) {  // 1 + the logits above the true one + the equal ones at lower ids (as argmax)
        const auto logit = logits.gather(1, tc.unsqueeze(1));
        const auto lower = torch::arange(logits.size(1), tc.options()).unsqueeze(0).lt(tc.unsqueeze(1));
        const auto rank = (logits.gt(logit).logical_or(logits.eq(logit).logical_and(lower)))
                              .sum(1)
                              .add(1)
                              .to(torch::kCPU, torch::kInt32)
                              .contiguous();
        std::copy_n(rank.data_ptr<int32_t>(), n, rows.rank + r0);
      }
    } else {
      sums.loss_sum += torch::nn::functional::cross_entropy(
                           logits, tc, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                           .item<double>();
    }
    sums.correct += logits.argmax(-1).eq(tc).sum().item<int64_t>();
  }
  return sums;
}

LossSums lm_head_loss_sums(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets) {
  return lm_head_loss_sums(h, weight, targets, RowScores{});
}

torch::Tensor lm_head_loss(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets) {
  auto flat = h.reshape({-1, h.size(-1)});
  auto t = targets.reshape({-1});
  const bool needs_grad = torch::GradMode::is_enabled() && (h.requires_grad() || weight.requires_grad());
  if (needs_grad && h.is_cpu() && h.scalar_type() == torch::kFloat32 && weight.scalar_type() == torch::kFloat32)
    return FusedLmLoss::apply(flat.contiguous(), weight, t);
  if (!needs_grad) {  // evaluation: chunked, nothing to keep
    const LossSums sums = lm_head_loss_sums(flat, weight, t);
    return torch::tensor(sums.loss_sum / static_cast<double>(flat.size(0)), flat.options().dtype(torch::kFloat32));
  }
  if (cuda_fused::eligible_lm_loss(flat, weight))  // CUDA under bf16 autocast: one pass over the logits
    return cuda_fused::lm_loss(flat, weight, t);
  auto logits = torch::matmul(flat, weight.t());  // CUDA / bf16: the plain path
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat32), t);
}

}  // namespace hsm
