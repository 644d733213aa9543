#pragma once
// Matrix products split over LibTorch's threads, with OpenBLAS on one thread (issue 9).
//
// With OpenBLAS on every core and LibTorch on one, each element-wise pass between two GEMMs
// runs on one core while OpenBLAS's worker spins on the other, and the two pools fight when
// both are busy. In "split" mode (set_cpu_threads) LibTorch's pool has every core and OpenBLAS
// one thread: the matrix products of the linear layers and the output layer are cut into one
// block of rows per thread here, so GEMMs and element-wise work share one pool.
#include <torch/torch.h>

#include <functional>

namespace hsm {

// True when the products below split over LibTorch's threads: more than one LibTorch thread
// and OpenBLAS (when present) on one.
bool split_gemms();

// Calls f(begin, end) on consecutive row ranges covering [0, rows), one per LibTorch thread
// in split mode (boundaries at multiples of 16 rows), else once with [0, rows). The ranges do
// not depend on anything but rows and the thread count.
void for_row_blocks(int64_t rows, const std::function<void(int64_t, int64_t)>& f);

// out = a · b: a [M, K], b [K, N], out [M, N], split over M.
void mm_rows(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b);

// y = x · weightᵀ + bias for x [..., in], weight [out, in], bias [out] (may be undefined):
// torch::nn::functional::linear, with the forward and backward GEMMs split in split mode on
// the CPU in fp32 (the rows of x for y and dx, the rows of weight for its gradient).
torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
// The same through a Linear module's weight and bias: what module->forward(x) computes.
torch::Tensor linear(const torch::nn::Linear& module, const torch::Tensor& x);

}  // namespace hsm
