#pragma once
// Causal sums over lags, the Extractors' core (EX §5), computed without any intermediate that
// grows with the number of lags times the batch (issue 26):
//   dense:     e[b, t] = Σ_{k=0}^{min(t, K−1)} x[b, t−k] · W[k]          (SHE: W [K, d, d])
//   depthwise: e[b, t] = Σ_{k=0}^{min(t, K−1)} u[b, t−k] ⊙ w[k]          (HE, WE: w [K, d])
// Both are autograd functions with their own backward passes. On the CPU in fp32 the dense
// sum runs as blocks of lags: per sequence one small window matrix A[r, i] = x[r − i]
// (T × L·d, L lags side by side), and for each block of L lags one GEMM of its rows into the
// output (β = 1); the depthwise sum runs as plain vectorised loops over exactly the products
// it needs. Elsewhere (CUDA, other dtypes) LibTorch's operations compute the same values.
#include <torch/torch.h>

namespace hsm {

// x [B, T, d], W [K, d, d] -> [B, T, d]; K may exceed T (the lags past T read zeros).
torch::Tensor dense_lag_mix(const torch::Tensor& x, const torch::Tensor& W);

// u [B, T, d], w [K, d] -> [B, T, d].
torch::Tensor depthwise_lag_mix(const torch::Tensor& u, const torch::Tensor& w);

}  // namespace hsm
