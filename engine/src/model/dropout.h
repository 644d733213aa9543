#pragma once
// Dropout whose random mask comes from a counter-based hash instead of LibTorch's CPU
// generator. LibTorch 1.13 draws CPU dropout masks one element at a time from its Mersenne
// Twister (about 10 ns per element): with attention weights, residual and embedding dropout
// that was a third of a training step of the paper's models (docs/performance.md). A hash of
// (seed, stream, element index) costs under 1 ns, and any part of a mask can be drawn again
// from the same numbers, which the blocked attention's backward pass needs.
#include <torch/torch.h>

#include <cstdint>

namespace hsm {

// A fresh seed from LibTorch's default generator, so torch::manual_seed makes masks repeatable.
uint64_t draw_dropout_seed();

// Keep-mask scaled for dropout p: 1/(1-p) with probability 1-p, else 0, float32 on the CPU,
// a pure function of (sizes, p, seed, stream). Element i of the mask is element offset + i of
// the stream's sequence, so a slice of a large mask can be drawn on its own (the blocked
// attention splits its batch over threads this way and draws the same masks).
torch::Tensor dropout_mask(at::IntArrayRef sizes, double p, uint64_t seed, uint64_t stream = 0, int64_t offset = 0);

// x * dropout_mask in training (p > 0), x otherwise. CUDA tensors use the same hashed masks
// (model/cuda_fused.h) where the fused kernels are built, else torch::dropout. On the
// CPU in fp32 the mask is never stored: the forward pass applies the hash as it goes and the
// backward pass draws it again from the seed (one pass each way, vectorised).
torch::Tensor fast_dropout(const torch::Tensor& x, double p, bool training);

// h + fast_dropout(y, p, training): a block's residual connection in one pass (the same values).
torch::Tensor residual_dropout(const torch::Tensor& h, const torch::Tensor& y, double p, bool training);

}  // namespace hsm
