#include "model/mixers/lag_mix.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm.h"

namespace hsm {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool cpu_fp32(const torch::Tensor& a, const torch::Tensor& b) {
  return a.is_cpu() && b.is_cpu() && a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32;
}

// Runs f(i) for i in [0, n) over LibTorch's threads, each with the caller's thread-local state
// (grad mode above all).
template <typename F>
void parallel(int64_t n, const F& f) {
  const at::ThreadLocalState state;
  at::parallel_for(0, n, 1, [&](int64_t begin, int64_t end) {
    const at::ThreadLocalStateGuard guard(state);
    for (int64_t i = begin; i < end; ++i) f(i);
  });
}

// ---- dense (SHE) ---------------------------------------------------------------------------

// Lags per block: L·d ≈ 2048 columns, a product shape BLAS runs near its peak while the
// window matrix (T × L·d) stays a few MB.
int64_t lags_per_block(int64_t d, int64_t K) { return std::clamp<int64_t>(2048 / std::max<int64_t>(d, 1), 1, K); }

// A[r, i] = src[r + sign·i] for i < L (a zero row where that leaves [0, T)): the window matrix
// of one sequence src [T, d], [T, L·d] row-major. sign −1 looks back (x[r − i]), +1 ahead.
void window_matrix(const float* src, int64_t T, int64_t d, int64_t L, int sign, float* A) {
  for (int64_t r = 0; r < T; ++r)
    for (int64_t i = 0; i < L; ++i) {
      const int64_t s = r + sign * i;
      float* dst = A + (r * L + i) * d;
      if (s < 0 || s >= T)
        std::memset(dst, 0, sizeof(float) * d);
      else
        std::memcpy(dst, src + s * d, sizeof(float) * d);
    }
}

// out[b, first + r] += A_b[r] · W[block] for every block of lags: e[t] = Σ_k x[t − k] W[k] with
// the block g = lags [gL, gL + Lg): rows t ≥ gL, A row r = t − gL. sign −1 and W: the forward;
// sign +1 and W transposed per lag, rows read ahead: the input gradient (x[j] gets g[j + k] Wᵀ[k]).
void dense_blocks(const torch::Tensor& src, const torch::Tensor& maps, int sign, torch::Tensor& out) {
  const int64_t B = src.size(0), T = src.size(1), d = src.size(2), K = std::min(maps.size(0), T);
  const int64_t L = lags_per_block(d, K);
  parallel(B, [&](int64_t b) {
    auto A = torch::empty({T, L * d}, src.options());
    window_matrix(src[b].data_ptr<float>(), T, d, L, sign, A.data_ptr<float>());
    auto ob = out[b];
    for (int64_t g0 = 0; g0 < K; g0 += L) {
      const int64_t Lg = std::min(L, K - g0), rows = T - g0;
      // Forward: output rows [g0, T) from A rows [0, T − g0); backward: output rows [0, T − g0)
      // from A rows [g0, T) (g[j + g0 + i] sits at A[j + g0, i]).
      auto o = sign < 0 ? ob.narrow(0, g0, rows) : ob.narrow(0, 0, rows);
      auto a = (sign < 0 ? A.narrow(0, 0, rows) : A.narrow(0, g0, rows)).narrow(1, 0, Lg * d);
      gemm(o, a, maps.narrow(0, g0, Lg).reshape({Lg * d, d}), 1.0f);
    }
  });
}

struct DenseLagMix : torch::autograd::Function<DenseLagMix> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& W) {
    auto xc = x.contiguous(), Wc = W.contiguous();
    ctx->save_for_backward({xc, Wc});
    auto e = torch::zeros_like(xc);
    dense_blocks(xc, Wc, -1, e);
    return e;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &W = saved[1];
    const auto g = grads[0].contiguous();
    const int64_t B = x.size(0), T = x.size(1), d = x.size(2), K = std::min(W.size(0), T);
    const int64_t L = lags_per_block(d, K);
    torch::Tensor grad_x, grad_W;
    if (ctx->needs_input_grad(0)) {
      grad_x = torch::zeros_like(x);
      dense_blocks(g, W.narrow(0, 0, K).transpose(1, 2).contiguous(), +1, grad_x);
    }
    if (ctx->needs_input_grad(1)) {
      // ∂W[k] = Σ_b Σ_{t ≥ k} x[t − k]ᵀ g[t]: for the block g0, A_bᵀ (rows [0, T − g0)) times
      // g_b rows [g0, T); sequence after sequence, the blocks of lags over the threads (each
      // owns its rows of ∂W, so the sums do not depend on the threads).
      grad_W = torch::zeros_like(W);
      auto A = torch::empty({T, L * d}, x.options());
      for (int64_t b = 0; b < B; ++b) {
        window_matrix(x[b].data_ptr<float>(), T, d, L, -1, A.data_ptr<float>());
        parallel((K + L - 1) / L, [&](int64_t block) {
          const int64_t g0 = block * L, Lg = std::min(L, K - g0), rows = T - g0;
          auto dw = grad_W.narrow(0, g0, Lg).view({Lg * d, d});
          gemm(dw, A.narrow(0, 0, rows).narrow(1, 0, Lg * d).t(), g[b].narrow(0, g0, rows), 1.0f);
        });
      }
    }
    return {grad_x, grad_W};
  }
};

// LibTorch's operations (CUDA, other dtypes): every lag's map at once, Y[b, j, k] = x_j W_k,
// then the sums along the anti-diagonals e_t = Σ_k Y[t − k, k] as a strided view.
torch::Tensor dense_lag_mix_libtorch(const torch::Tensor& x, const torch::Tensor& W) {
  const int64_t B = x.size(0), T = x.size(1), d = x.size(2), K = std::min(T, W.size(0));
  auto Y = torch::matmul(x, W.narrow(0, 0, K).permute({1, 0, 2}).reshape({d, K * d}));  // [B, T, K·d]
  auto P = torch::constant_pad_nd(Y, {0, 0, K - 1, 0});                                   // [B, T+K−1, K·d]
  return P.as_strided({B, T, K, d}, {P.stride(0), K * d, (K - 1) * d, 1}, (K - 1) * d).sum(2);
}

// ---- depthwise (HE, WE) --------------------------------------------------------------------

// out[b, t] = Σ_{k ≤ min(t, K−1)} w[k] ⊙ src[b, t − k]   (sign −1, the forward), or
// out[b, j] = Σ_{k < min(T − j, K)} w[k] ⊙ src[b, j + k] (sign +1, the input gradient).
void depthwise_rows(const torch::Tensor& src, const torch::Tensor& w, int sign, torch::Tensor& out) {
  const int64_t B = src.size(0), T = src.size(1), d = src.size(2), K = std::min(w.size(0), T);
  const float* s = src.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  float* o = out.data_ptr<float>();
  parallel(B * T, [&](int64_t row) {
    const int64_t b = row / T, t = row % T;
    const int64_t lags = sign < 0 ? std::min(t + 1, K) : std::min(T - t, K);
    float* dst = o + row * d;
    std::fill(dst, dst + d, 0.0f);
    for (int64_t k = 0; k < lags; ++k) {
      const float* in = s + (b * T + t + sign * k) * d;
      const float* wk = wp + k * d;
#pragma omp simd
      for (int64_t c = 0; c < d; ++c) dst[c] += wk[c] * in[c];
    }
  });
}

struct DepthwiseLagMix : torch::autograd::Function<DepthwiseLagMix> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& u, const torch::Tensor& w) {
    auto uc = u.contiguous(), wc = w.contiguous();
    ctx->save_for_backward({uc, wc});
    auto e = torch::empty_like(uc);
    depthwise_rows(uc, wc, -1, e);
    return e;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &u = saved[0], &w = saved[1];
    const auto g = grads[0].contiguous();
    const int64_t B = u.size(0), T = u.size(1), d = u.size(2), K = std::min(w.size(0), T);
    torch::Tensor grad_u, grad_w;
    if (ctx->needs_input_grad(0)) {
      grad_u = torch::empty_like(u);
      depthwise_rows(g, w, +1, grad_u);
    }
    if (ctx->needs_input_grad(1)) {
      // ∂w[k] = Σ_b Σ_{t ≥ k} g[b, t] ⊙ u[b, t − k]; the lags over the threads.
      grad_w = torch::zeros_like(w);
      const float* gp = g.data_ptr<float>();
      const float* up = u.data_ptr<float>();
      float* dw = grad_w.data_ptr<float>();
      parallel(K, [&](int64_t k) {
        float* acc = dw + k * d;
        for (int64_t b = 0; b < B; ++b)
          for (int64_t t = k; t < T; ++t) {
            const float* gr = gp + (b * T + t) * d;
            const float* ur = up + (b * T + t - k) * d;
#pragma omp simd
            for (int64_t c = 0; c < d; ++c) acc[c] += gr[c] * ur[c];
          }
      });
    }
    return {grad_u, grad_w};
  }
};

// LibTorch's operations: a depthwise causal convolution (conv1d, one group per channel, the
// kernel w flipped in time over u left-padded with K − 1 zeros).
torch::Tensor depthwise_lag_mix_libtorch(const torch::Tensor& u, const torch::Tensor& w) {
  const int64_t T = u.size(1), d = u.size(2), K = std::min(T, w.size(0));
  auto x = torch::constant_pad_nd(u.transpose(1, 2), {K - 1, 0});  // [B, d, T + K − 1]
  auto kernel = w.narrow(0, 0, K).flip({0}).t().unsqueeze(1);      // [d, 1, K]: lag K−1 first
  const std::vector<int64_t> one{1}, zero{0};
  return torch::conv1d(x, kernel, torch::Tensor(), one, zero, one, d).transpose(1, 2);  // [B, T, d]
}

}  // namespace

torch::Tensor dense_lag_mix(const torch::Tensor& x, const torch::Tensor& W) {
  return cpu_fp32(x, W) ? DenseLagMix::apply(x, W) : dense_lag_mix_libtorch(x, W);
}

torch::Tensor depthwise_lag_mix(const torch::Tensor& u, const torch::Tensor& w) {
  return cpu_fp32(u, w) ? DepthwiseLagMix::apply(u, w) : depthwise_lag_mix_libtorch(u, w);
}

}  // namespace hsm
