#pragma once
// fp32 vector kernels of the batch-1 decoding path (fast_decoder.cpp), llama2.c style: plain
// arrays, no allocation, no LibTorch. The AVX2+FMA versions are picked at run time when the
// CPU has them; every kernel has a portable fallback with the same results to rounding.
// One file per operation: matvec.cpp (and dot, axpy, LayerNorm, halves), gelu.cpp,
// softmax_loss.cpp, adamw_update.cpp; kernel_set.cpp picks the set (HSM_KERNELS).
#include <cstdint>
#include <string>

namespace hsm::fast {

// y[o] = bias[o] + Σ_i W[o, i] · x[i] for a row-major W [out, in]; bias may be null.
void matvec(const float* W, const float* x, const float* bias, float* y, int64_t out, int64_t in);

// The same with W stored as IEEE half floats (exact copies of weights that are fp16 values,
// as in checkpoints saved in F16): half the bytes to stream per token, the same products.
void matvec_f16(const uint16_t* W, const float* x, const float* bias, float* y, int64_t out, int64_t in);
// fp32 -> IEEE half (round to nearest even) and back, for building such copies.
uint16_t to_half(float f);
float from_half(uint16_t h);

// y = (x - mean) / sqrt(var + eps) · gain + shift over n values (biased variance, as LayerNorm).
void layer_norm(const float* x, const float* gain, const float* shift, float* y, int64_t n, float eps);

// x = GELU(x) in place, the exact (erf) form torch::gelu uses by default.
void gelu(float* x, int64_t n);

float dot(const float* a, const float* b, int64_t n);

// y += alpha · x
void axpy(float alpha, const float* x, float* y, int64_t n);

// x = softmax(x) in place over n values.
void softmax(float* x, int64_t n);

// For each of `rows` rows of x [rows, n] (row stride n) and its target id: adds
// logsumexp(row) - row[target] to *loss_sum and counts rows whose first maximum is at the
// target into *correct. One pass per row (it stays in L1), where cross_entropy + argmax make
// four over [rows, n] and a [rows, n] temporary: the output layer of evaluation.
void cross_entropy_rows(const float* x, const int64_t* targets, int64_t rows, int64_t n, double* loss_sum,
                        int64_t* correct);

// The output layer's loss and its gradient in one go (training, lm_head.cpp): for each of
// `rows` rows of logits x [rows, n] and its target id, replaces the row by
// softmax(row) - onehot(target) and returns Σ_rows logsumexp(row) - row[target]. Three
// passes per row while it is in L1, where max + sub + exp + sum + div + scatter made six
// passes over the whole [rows, n] chunk.
double softmax_xent_grad_rows(float* x, const int64_t* targets, int64_t rows, int64_t n);

// x[r, i] = GELU(x[r, i] + bias[i]) in place over rows × n (bias may be null): the first FFN
// layer's bias and activation in one pass (forward without gradients).
void bias_gelu_rows(float* x, const float* bias, int64_t rows, int64_t n);

// y = GELU(x) over n values (y may equal x), and its derivative for the backward pass:
// dx = g · GELU'(x). These and the kernels above run on the calling thread; the model splits
// large calls over LibTorch's threads (kernels/parallel_gemm.h: for_row_blocks). With OpenBLAS
// on the other cores instead, that split was slower (GELU's backward 36-47 -> 57-74 ms per
// step): OpenBLAS's worker spins between calls (docs/performance.md).
void gelu_rows(const float* x, float* y, int64_t n);
void gelu_backward(const float* x, const float* g, float* dx, int64_t n);

// One AdamW update (decoupled weight decay, as train/adamw.cpp) over n values in one pass:
//   p *= decay;  m = b1·m + (1−b1)·g;  v = b2·v + (1−b2)·g²;  p −= step · m / (√(v·inv_bias2) + eps)
// where decay = 1 − lr·wd (1 for tensors without decay) and step = lr / (1 − b1^t).
void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, float decay, float b1, float b2,
                  float inv_bias2, float eps, float step);

// HSM_KERNELS=avx2 (or generic, avx512) caps the kernels for the whole process, as a CPU
// without the wider sets would run them; CI runs the engine suites once more that way.
// Throws std::invalid_argument naming the variable when it holds no set's name.
void check_kernels_env();
// "avx512", "avx2" or "generic": which kernels run on this CPU. The matrix-vector products
// of the decoder are AVX2 on both x86 sets; GELU, its gradient and the loss's exp sums have
// AVX-512 versions.
const char* kernel_set();
// Caps the kernels at a set ("avx512", "avx2", "generic"; never above what the CPU has nor
// above HSM_KERNELS) for every thread, so tests can check each set's results on one machine;
// returns the set now in use. An unknown name throws std::invalid_argument.
const char* limit_kernel_set(const std::string& name);

}  // namespace hsm::fast
