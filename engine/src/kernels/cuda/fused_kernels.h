// Fused CUDA kernels for the training step (issue 49), on raw device pointers.
//
// A training step at batch 256 × 128 spent most of its GPU time in small memory-bound LibTorch
// kernels around a few matrix products (docs/performance.md, "Where a step's GPU time went"):
// LayerNorm's weight gradients alone 2.2 ms of 14, a residual add that casts 1.3 ms, the shift
// mixers' five kernels forward and eight backward. Each kernel here reads its inputs once and
// writes its outputs once. No torch and no CUDA header: model/cuda_fused.cpp calls these with
// LibTorch's current stream (as void*) and its tensors' pointers; every launch goes on that stream,
// so a CUDA graph records them like LibTorch's own.
//
// Shapes: rows = every position of the batch (B·T), d = the model width. Kernels that sum over
// rows (weight gradients) write one partial row per warp, [warps, d]; the caller adds them up
// with LibTorch (torch::sum over dim 0: deterministic, no atomics).
#pragma once

#include <cstdint>

namespace hsm::cuda_kernels {

// The kernels that sum over rows write one partial row per warp of their grid; the grid is one
// wave of the GPU (as many blocks as its multiprocessors hold at once for that kernel), at most what
// the rows need. How many partial rows each writes, on the current device:
enum class RowSum { kLayerNormBackward, kShiftMixBackward, kBiasGeluBackward, kAddNormBackward };
int64_t partial_rows(RowSum kernel, int64_t rows, int64_t d);
// The largest width the row kernels take (per lane 32 values in registers).
constexpr int64_t kMaxWidth = 1024;

// y = (x − mean) · rstd · w + b per row; mean and rstd [rows] kept for the backward pass.
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                        int64_t rows, int64_t d, float eps, void* stream);
// dx, and per-warp partials of dw = Σ g · x̂ and db = Σ g ([partial_rows(kLayerNormBackward, rows, d), d]).
void layer_norm_backward(const float* g, const float* x, const float* mean, const float* rstd, const float* w,
                         float* dx, float* dw_part, float* db_part, int64_t rows, int64_t d, void* stream);

// A block's residual add with dropout, then LayerNorm, in one pass: h_out = h_in + y · mask (the
// dropout mask below; threshold 0 and scale 1: none), x_out = LN(h_out) with mean and rstd kept.
// h_in, h_out fp32 [rows, d]; y fp32 or bf16; x_out fp32 or bf16 (rounded to nearest even, as
// autocast's cast before a product rounds it); d ≤ 1024.
void add_norm_forward(const float* h_in, const void* y, bool y_bf16, const int64_t* seed, uint32_t threshold,
                      float scale, const float* w, const float* b, float* h_out, void* x_out, bool x_bf16,
                      float* mean, float* rstd, int64_t rows, int64_t d, float eps, void* stream);
// Its backward pass from x's gradient gx (fp32 or bf16, null: zero) and h_out's gh (fp32, null: zero):
// dh_in = gh + LN's input gradient, dy = dh_in · mask in y's type, and partials
// ([partial_rows(kAddNormBackward, rows, d), d]) of LN's weight and bias gradients. h: h_out.
void add_norm_backward(const void* gx, bool gx_bf16, const float* gh, const float* h, const float* mean,
                       const float* rstd, const float* w, const int64_t* seed, uint32_t threshold, float scale,
                       float* dh_in, void* dy, bool dy_bf16, float* dw_part, float* db_part, int64_t rows, int64_t d,
                       void* stream);

// Dropout with the CPU's hashed masks (model/dropout.cpp): element i is kept, scaled by `scale`,
// where mix32(mix32(i ^ key1) + key2) >= threshold, the keys made from *seed (a device int64, so a
// CUDA graph draws a new one each replay) as the CPU makes them from the same seed.
// out = h + y · mask (h null: y · mask). y and out: fp32 (y_bf16 false) or bf16; h fp32.
void dropout_forward(const float* h, const void* y, bool y_bf16, void* out, bool out_bf16, const int64_t* seed,
                     uint32_t threshold, float scale, int64_t n, void* stream);
// dy = g · mask in y's type (g fp32 or bf16).
void dropout_backward(const void* g, bool g_bf16, void* dy, bool dy_bf16, const int64_t* seed, uint32_t threshold,
                      float scale, int64_t n, void* stream);

// HSM (a,b) and (a,b) vector: y[t] = a ⊙ x[t] + b ⊙ x[t − s] (0 for t < s), x [B, T, d] fp32;
// a and b [d] or scalars (vector false: a[0], b[0] for every channel).
void shift_mix_forward(const float* x, const float* a, const float* b, bool vector, float* y, int64_t rows,
                       int64_t T, int64_t d, int64_t s, void* stream);
// dx[t] = a ⊙ g[t] + b ⊙ g[t + s]; partials ([partial_rows(kShiftMixBackward, rows, d), d]) of
// da = Σ g ⊙ x and db = Σ_{t ≥ s} g[t] ⊙ x[t − s].
void shift_mix_backward(const float* g, const float* x, const float* a, const float* b, bool vector, float* dx,
                        float* da_part, float* db_part, int64_t rows, int64_t T, int64_t d, int64_t s, void* stream);

// Cross-entropy over bf16 logits [rows, V], in place: row r's loss (log Σ exp − logit[target])
// into row_loss[r] (NaN for a target outside [0, V)), and the logits replaced by the loss's
// gradient, softmax − one-hot (unscaled), for the backward pass's two matrix products.
void softmax_xent_inplace(void* logits_bf16, const int64_t* targets, float* row_loss, int64_t rows, int64_t V,
                          void* stream);

// The FFN's a = GELU(u + bias) (the erf form), u and a bf16 [rows, f] (the first product's output
// under autocast, without its bias), bias fp32 [f]; any f.
void bias_gelu_forward(const void* u_bf16, const float* bias, void* a_bf16, int64_t rows, int64_t f, void* stream);
// du = g · GELU'(u + bias) in bf16, and partials ([partial_rows(kBiasGeluBackward, rows, f), f], fp32)
// of the bias gradient Σ du over rows.
void bias_gelu_backward(const void* g_bf16, const void* u_bf16, const float* bias, void* du_bf16, float* db_part,
                        int64_t rows, int64_t f, void* stream);

// The last launch's error as text, empty when none (cudaGetLastError).
const char* last_error();

}  // namespace hsm::cuda_kernels
