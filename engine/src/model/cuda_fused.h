#pragma once
// The training step's fused CUDA kernels (kernels/cuda/fused_kernels.h) as autograd functions
// (issue 49). Each has an `eligible` test; where it says no (the CPU, another dtype, a width over
// 1024, a build without them) the caller keeps its LibTorch path. They serve the step that learns:
// evaluation and decoding keep LibTorch's operations.
//
// Built where LibTorch has CUDA and CMake finds a CUDA compiler (HSM_CUDA_KERNELS); HSM_CUDA_FUSED=0
// in the environment turns them off at run time (the A/B of `hsm bench`, a suspected kernel), and
// HSM_CUDA_FUSED=norm,dropout,shift,loss,gelu,addnorm (any of the six) keeps only those on.
#include <torch/torch.h>

#include <string>
#include <utility>

namespace hsm::cuda_fused {

// Built in, and some of them on (HSM_CUDA_FUSED not 0, set_enabled(false) not called).
bool enabled();
// Turns them on or off for the whole process from here on (tests compare both in one run); the
// environment's choice until called. Turning them on where they are not built changes nothing.
void set_enabled(bool on);
// "fused CUDA kernels: on" / "...: off (HSM_CUDA_FUSED=0)" / "...: not built (...)".
std::string describe();
// What the checks at first use (each family against LibTorch, once per device) found so far in this
// process: "norm passed on cuda:0, gelu disagreed on cuda:0 (off by 3.1x the tolerance)", in the
// families' order; empty before any ran. A family that disagreed is off for the process, so a
// figure taken after it is LibTorch's for that family (hsm bench reports this beside its rates).
std::string check_results();

// LayerNorm over the last dimension (fp32 [..., d], d ≤ 1024, weight and bias [d]).
bool eligible_layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
torch::Tensor layer_norm(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, double eps);

// h + dropout(y, p) (h undefined: dropout(y, p)), the mask the CPU's hashed dropout draws from the
// same seed (model/dropout.cpp); y fp32 or bf16, h fp32 of y's shape. The seed is drawn on the
// device from LibTorch's CUDA generator (a CUDA graph draws a new one each replay).
bool eligible_dropout(const torch::Tensor& h, const torch::Tensor& y);
torch::Tensor dropout(const torch::Tensor& h, const torch::Tensor& y, double p);
// The same with the seed given ([1] int64 on y's device): for tests against dropout_mask().
torch::Tensor dropout_with_seed(const torch::Tensor& h, const torch::Tensor& y, double p, const torch::Tensor& seed);

// A block's residual add with dropout and the LayerNorm after it: h = h_in + dropout(y, p) and
// x = LayerNorm(h) (weight, bias, eps), returned as {h, x}, in one kernel each way (the backward
// pass adds h's own gradient to LayerNorm's, and gives y's through the same mask). h_in fp32
// [..., d], d ≤ 1024; y fp32 or bf16 of h_in's shape. The mask is dropout()'s. x_bf16: x comes
// out in bf16, rounded as autocast's cast before a product would round it, for an x that only a
// product under bf16 autocast reads (the FFN): that cast, its backward and half of x's bytes are
// saved; h stays fp32.
bool eligible_add_norm(const torch::Tensor& h_in, const torch::Tensor& y, const torch::Tensor& weight,
                       const torch::Tensor& bias);
std::pair<torch::Tensor, torch::Tensor> add_norm(const torch::Tensor& h_in, const torch::Tensor& y, double p,
                                                 const torch::Tensor& weight, const torch::Tensor& bias, double eps,
                                                 bool x_bf16 = false);
// The same with the seed given ([1] int64 on y's device): for tests against dropout_mask().
std::pair<torch::Tensor, torch::Tensor> add_norm_with_seed(const torch::Tensor& h_in, const torch::Tensor& y, double p,
                                                           const torch::Tensor& weight, const torch::Tensor& bias,
                                                           double eps, const torch::Tensor& seed,
                                                           bool x_bf16 = false);

// HSM (a,b) / (a,b) vector: a ⊙ x[t] + b ⊙ x[t − s]; x fp32 [B, T, d], a and b fp32 scalars or [d].
bool eligible_shift_mix(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b, int64_t s);
torch::Tensor shift_mix(const torch::Tensor& x, const torch::Tensor& a, const torch::Tensor& b, int64_t s);

// The tied output layer's mean cross-entropy, h [N, d] · weightᵀ in bf16 (as autocast computes it),
// the softmax and its gradient in one pass over the logits, kept in bf16 for the backward pass.
bool eligible_lm_loss(const torch::Tensor& h, const torch::Tensor& weight);
torch::Tensor lm_loss(const torch::Tensor& h, const torch::Tensor& weight, const torch::Tensor& targets);

// The FFN's bias + GELU (erf form) after its first product under bf16 autocast: u = x · W1ᵀ without
// the bias (bf16 [..., f], any f), bias fp32 [f] -> GELU(u + bias) in bf16; its backward pass gives
// u's gradient and the bias gradient in one pass over the rows. `x` is the FFN's input (fp32 or,
// from add_norm's x_bf16, bf16 on CUDA) and autocast must be on: the first product then comes out
// in bf16.
bool eligible_bias_gelu(const torch::Tensor& x, const torch::Tensor& bias);
torch::Tensor bias_gelu(const torch::Tensor& u, const torch::Tensor& bias);

}  // namespace hsm::cuda_fused
