// The fused kernels' device code (issue 49), apart from their launches (fused_kernels.cu), so
// that the same source also runs on the CPU: tests/engine/simt_emulation.h supplies the CUDA
// names these use (threadIdx, __shfl_xor_sync, __syncthreads, __nv_bfloat16, ...) with one
// thread per CUDA thread, and test_kernel_emulation runs every kernel below against LibTorch
// on any machine, every CI run, where the GPU's own check runs only on a GPU machine.
//
// Include it after <cuda_runtime.h> and <cuda_bf16.h> (nvcc) or after the emulation header.
// Only what both provide: warp shuffles of a whole warp (every lane of a warp takes the same
// branches around them), __syncthreads in kernels whose every thread reaches it, __shared__
// arrays, bf16 as __nv_bfloat16 with __bfloat162float/__float2bfloat16, and the float maths of
// <cmath> (expf, logf, erff, fmaxf, rsqrtf).
//
// Row kernels (LayerNorm, the shift mix's backward pass) give each warp whole rows: lane l holds
// columns l, l + 32, ... of a row in registers (d ≤ 1024: at most 32 per lane), so a row is read
// once, its sums are warp shuffles, and the weight gradients accumulate per lane over the warp's
// rows before one partial row per warp is written. Column kernels (the FFN's bias + GELU) give
// each thread one column of a block of rows, so its bias gradient is a sum in a register.
// Element kernels (dropout) are grid-stride loops.
//
// Loads in flight: a GPU thread waits for a load only where its value is first used, so a loop that
// loads a value, uses it and stores the result keeps one load per thread in flight, far fewer than
// the memory needs to stream at full bandwidth, and nvcc does not reorder such loops by itself (the
// PTX showed it: docs/performance.md, "Loads in flight"). So every loop below loads first and uses
// after: a lane's whole row in the row kernels (before the dropout hash and the stores), several
// rows, elements, columns or values at a time in the column, element, shift and cross-entropy
// kernels (kColumnRows, kElementsAtOnce, kShiftAtOnce, kXentAtOnce).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/dropout_hash.h"

namespace hsm::cuda_kernels {
namespace {

constexpr int kThreads = 256;  // 8 warps per block
constexpr int kWarpsPerBlock = kThreads / 32;
// Column kernels take this many rows at a time, element kernels this many elements per thread at a
// time, and the cross-entropy this many values per thread: loads issued together, then used.
constexpr int kColumnRows = 8;
constexpr int kElementsAtOnce = 4;
constexpr int kXentAtOnce = 8;
constexpr int kShiftAtOnce = 8;

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ __forceinline__ float load(const void* p, bool bf16, int64_t i) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]) : static_cast<const float*>(p)[i];
}
__device__ __forceinline__ void store(void* p, bool bf16, int64_t i, float v) {
  if (bf16)
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16(v);
  else
    static_cast<float*>(p)[i] = v;
}

// ---- dropout with hashed masks (kernels/dropout_hash.h, as the CPU draws them) --------------------
// The keys of (*seed, stream 0), read on the device: a CUDA graph replays with the seed of the day.
__device__ __forceinline__ dropout_hash::Keys keys_of(const int64_t* seed_ptr) {
  return dropout_hash::keys(static_cast<uint64_t>(*seed_ptr), 0);
}
__device__ __forceinline__ float keep(const dropout_hash::Keys& k, uint32_t i, uint32_t threshold, float scale) {
  return dropout_hash::kept(k, i, threshold) ? scale : 0.0f;
}

// ---- LayerNorm, alone or after a block's residual add with dropout ------------------------------
// One warp per row. The add: h = h_in + y · mask (the dropout mask above; threshold 0 keeps every
// element), written out for the stream, then x = LN(h) for the FFN, from one read of h_in and y.
// LayerNorm alone is the same with no y. Null pointers: y (no add), h_out (not written), w and b
// (1 and 0), seed (no mask).
template <int kPerLane>
__device__ __forceinline__ void norm_rows_forward(const float* __restrict__ h_in, const void* __restrict__ y,
                                                  bool y_bf16, const int64_t* __restrict__ seed, uint32_t threshold,
                                                  float scale, const float* __restrict__ w,
                                                  const float* __restrict__ b, float* __restrict__ h_out,
                                                  void* __restrict__ x_out, bool x_bf16, float* __restrict__ mean,
                                                  float* __restrict__ rstd, int64_t rows, int d, float eps) {
  const dropout_hash::Keys keys = seed ? keys_of(seed) : dropout_hash::Keys{0, 0};
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t r = warp; r < rows; r += warps) {
    float v[kPerLane], yv[kPerLane];
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {  // the row's loads first, all in flight together
      const int c = lane + 32 * k;
      const int64_t i = r * d + c;
      v[k] = c < d ? h_in[i] : 0.0f;
      yv[k] = y && c < d ? load(y, y_bf16, i) : 0.0f;
    }
    float s = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < d) {
        const int64_t i = r * d + c;
        if (y) v[k] += yv[k] * keep(keys, static_cast<uint32_t>(i), threshold, scale);
        if (h_out) h_out[i] = v[k];
      }
      s += v[k];
    }
    const float m = warp_sum(s) * inv_d;
    float q = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      const float t = c < d ? v[k] - m : 0.0f;
      q += t * t;
    }
    const float rs = rsqrtf(warp_sum(q) * inv_d + eps);  // the biased variance, as torch's layer_norm
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < d) store(x_out, x_bf16, r * d + c, (v[k] - m) * rs * (w ? w[c] : 1.0f) + (b ? b[c] : 0.0f));
    }
    if (lane == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
  }
}

// dx = rstd · (g·w − mean(g·w) − x̂ · mean(g·w·x̂)) per row (g: x's gradient, fp32 or bf16; null:
// zero), plus gh (the stream's own gradient, null: zero), into dh_in; dy = dh_in · mask in y's type
// (dy null: not written); per lane dw += g·x̂, db += g over the warp's rows, one partial row per warp.
// h: the normalised rows (h_out of the add, or LayerNorm's input).
template <int kPerLane>
__device__ __forceinline__ void norm_rows_backward(const void* __restrict__ g, bool g_bf16,
                                                   const float* __restrict__ gh, const float* __restrict__ h,
                                                   const float* __restrict__ mean, const float* __restrict__ rstd,
                                                   const float* __restrict__ w, const int64_t* __restrict__ seed,
                                                   uint32_t threshold, float scale, float* __restrict__ dh_in,
                                                   void* __restrict__ dy, bool dy_bf16, float* __restrict__ dw_part,
                                                   float* __restrict__ db_part, int64_t rows, int d) {
  const dropout_hash::Keys keys = seed ? keys_of(seed) : dropout_hash::Keys{0, 0};
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const float inv_d = 1.0f / static_cast<float>(d);
  float acc_w[kPerLane], acc_b[kPerLane];
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) acc_w[k] = acc_b[k] = 0.0f;
  for (int64_t r = warp; r < rows; r += warps) {
    const float m = mean[r], rs = rstd[r];
    float xh[kPerLane], gw[kPerLane];
    float s1 = 0, s2 = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < d) {
        const int64_t i = r * d + c;
        const float gv = g ? load(g, g_bf16, i) : 0.0f;
        xh[k] = (h[i] - m) * rs;
        gw[k] = gv * (w ? w[c] : 1.0f);
        acc_w[k] += gv * xh[k];
        acc_b[k] += gv;
      } else {
        xh[k] = gw[k] = 0.0f;
      }
      s1 += gw[k];
      s2 += gw[k] * xh[k];
    }
    s1 = warp_sum(s1) * inv_d;
    s2 = warp_sum(s2) * inv_d;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < d) {
        const int64_t i = r * d + c;
        const float total = rs * (gw[k] - s1 - xh[k] * s2) + (gh ? gh[i] : 0.0f);
        dh_in[i] = total;
        if (dy) store(dy, dy_bf16, i, total * keep(keys, static_cast<uint32_t>(i), threshold, scale));
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + 32 * k;
    if (c < d) {
      dw_part[warp * d + c] = acc_w[k];
      db_part[warp * d + c] = acc_b[k];
    }
  }
}

// y = (x − mean) · rstd · w + b per row; mean and rstd kept for the backward pass.
template <int kPerLane>
__global__ void layer_norm_forward_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, float* __restrict__ mean,
                                          float* __restrict__ rstd, int64_t rows, int d, float eps) {
  norm_rows_forward<kPerLane>(x, nullptr, false, nullptr, 0, 1.0f, w, b, nullptr, y, false, mean, rstd, rows, d, eps);
}

// dx, and per-warp partials of dw = Σ g·x̂ and db = Σ g.
template <int kPerLane>
__global__ void layer_norm_backward_kernel(const float* __restrict__ g, const float* __restrict__ x,
                                           const float* __restrict__ mean, const float* __restrict__ rstd,
                                           const float* __restrict__ w, float* __restrict__ dx,
                                           float* __restrict__ dw_part, float* __restrict__ db_part, int64_t rows,
                                           int d) {
  norm_rows_backward<kPerLane>(g, false, nullptr, x, mean, rstd, w, nullptr, 0, 1.0f, dx, nullptr, false, dw_part,
                               db_part, rows, d);
}

// h_out = h_in + y · mask, x_out = LN(h_out) (fp32, or bf16 for a product under autocast).
template <int kPerLane>
__global__ void add_norm_forward_kernel(const float* __restrict__ h_in, const void* __restrict__ y, bool y_bf16,
                                        const int64_t* __restrict__ seed, uint32_t threshold, float scale,
                                        const float* __restrict__ w, const float* __restrict__ b,
                                        float* __restrict__ h_out, void* __restrict__ x_out, bool x_bf16,
                                        float* __restrict__ mean, float* __restrict__ rstd, int64_t rows, int d,
                                        float eps) {
  norm_rows_forward<kPerLane>(h_in, y, y_bf16, seed, threshold, scale, w, b, h_out, x_out, x_bf16, mean, rstd, rows,
                              d, eps);
}

// From x's gradient gx and h_out's gh (either null: zero): dh_in = gh + LN's input gradient,
// dy = dh_in · mask in y's type, LN's weight partials. h: the forward pass's h_out.
template <int kPerLane>
__global__ void add_norm_backward_kernel(const void* __restrict__ gx, bool gx_bf16, const float* __restrict__ gh,
                                         const float* __restrict__ h, const float* __restrict__ mean,
                                         const float* __restrict__ rstd, const float* __restrict__ w,
                                         const int64_t* __restrict__ seed, uint32_t threshold, float scale,
                                         float* __restrict__ dh_in, void* __restrict__ dy, bool dy_bf16,
                                         float* __restrict__ dw_part, float* __restrict__ db_part, int64_t rows,
                                         int d) {
  norm_rows_backward<kPerLane>(gx, gx_bf16, gh, h, mean, rstd, w, seed, threshold, scale, dh_in, dy, dy_bf16,
                               dw_part, db_part, rows, d);
}

// ---- dropout: y · mask, or the residual add h + y · mask ------------------------------------------
// Grid-stride loops taking kElementsAtOnce elements per thread at a time (i, i + stride, ...: each a
// warp's neighbouring elements), all loaded before any is used.
__global__ void dropout_forward_kernel(const float* __restrict__ h, const void* __restrict__ y, bool y_bf16,
                                       void* __restrict__ out, bool out_bf16, const int64_t* __restrict__ seed,
                                       uint32_t threshold, float scale, int64_t n) {
  const dropout_hash::Keys k = keys_of(seed);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i0 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i0 < n;
       i0 += stride * kElementsAtOnce) {
    float yv[kElementsAtOnce], hv[kElementsAtOnce];
#pragma unroll
    for (int j = 0; j < kElementsAtOnce; ++j) {
      const int64_t i = i0 + j * stride;
      yv[j] = i < n ? load(y, y_bf16, i) : 0.0f;
      hv[j] = h && i < n ? h[i] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kElementsAtOnce; ++j) {
      const int64_t i = i0 + j * stride;
      if (i < n) store(out, out_bf16, i, hv[j] + yv[j] * keep(k, static_cast<uint32_t>(i), threshold, scale));
    }
  }
}

__global__ void dropout_backward_kernel(const void* __restrict__ g, bool g_bf16, void* __restrict__ dy, bool dy_bf16,
                                        const int64_t* __restrict__ seed, uint32_t threshold, float scale, int64_t n) {
  const dropout_hash::Keys k = keys_of(seed);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i0 = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i0 < n;
       i0 += stride * kElementsAtOnce) {
    float gv[kElementsAtOnce];
#pragma unroll
    for (int j = 0; j < kElementsAtOnce; ++j) {
      const int64_t i = i0 + j * stride;
      gv[j] = i < n ? load(g, g_bf16, i) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kElementsAtOnce; ++j) {
      const int64_t i = i0 + j * stride;
      if (i < n) store(dy, dy_bf16, i, gv[j] * keep(k, static_cast<uint32_t>(i), threshold, scale));
    }
  }
}

// ---- the shift mix (HSM (a,b), (a,b) vector) ---------------------------------------------------
// One warp per row (a row's position t = r mod T, read once per row, not per element); a lane's
// columns kShiftAtOnce at a time, loaded before any is used.
__global__ void shift_mix_forward_kernel(const float* __restrict__ x, const float* __restrict__ a,
                                         const float* __restrict__ b, bool vector, float* __restrict__ y, int64_t rows,
                                         int64_t T, int64_t d, int64_t s) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const float a0 = a[0], b0 = b[0];
  for (int64_t r = warp; r < rows; r += warps) {
    const float* xr = x + r * d;
    const bool shifted = r % T >= s;  // the row has a partner s rows up, in its own sequence
    const float* xs = shifted ? xr - s * d : xr;
    float* yr = y + r * d;
    for (int64_t c0 = lane; c0 < d; c0 += 32 * kShiftAtOnce) {
      float xv[kShiftAtOnce], sv[kShiftAtOnce], av[kShiftAtOnce], bv[kShiftAtOnce];
#pragma unroll
      for (int j = 0; j < kShiftAtOnce; ++j) {
        const int64_t c = c0 + 32 * j;
        const bool in = c < d;
        xv[j] = in ? xr[c] : 0.0f;
        sv[j] = in && shifted ? xs[c] : 0.0f;
        av[j] = in && vector ? a[c] : a0;
        bv[j] = in && vector ? b[c] : b0;
      }
#pragma unroll
      for (int j = 0; j < kShiftAtOnce; ++j) {
        const int64_t c = c0 + 32 * j;
        if (c < d) yr[c] = shifted ? av[j] * xv[j] + bv[j] * sv[j] : av[j] * xv[j];
      }
    }
  }
}

template <int kPerLane>
__global__ void shift_mix_backward_kernel(const float* __restrict__ g, const float* __restrict__ x,
                                          const float* __restrict__ a, const float* __restrict__ b, bool vector,
                                          float* __restrict__ dx, float* __restrict__ da_part,
                                          float* __restrict__ db_part, int64_t rows, int64_t T, int d, int64_t s) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  float av[kPerLane], bv[kPerLane], acc_a[kPerLane], acc_b[kPerLane];
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + 32 * k;
    av[k] = c < d ? a[vector ? c : 0] : 0.0f;
    bv[k] = c < d ? b[vector ? c : 0] : 0.0f;
    acc_a[k] = acc_b[k] = 0.0f;
  }
  for (int64_t r = warp; r < rows; r += warps) {
    const int64_t t = r % T;
    const float* gr = g + r * d;
    const float* xr = x + r * d;
    float* dxr = dx + r * d;
    const bool later = t + s < T, earlier = t >= s;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < d) {
        const float gv = gr[c];
        dxr[c] = later ? av[k] * gv + bv[k] * gr[s * d + c] : av[k] * gv;
        acc_a[k] += gv * xr[c];
        if (earlier) acc_b[k] += gv * xr[c - s * d];
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int c = lane + 32 * k;
    if (c < d) {
      da_part[warp * d + c] = acc_a[k];
      db_part[warp * d + c] = acc_b[k];
    }
  }
}

// ---- cross-entropy over bf16 logits, in place ----------------------------------------------------
__device__ __forceinline__ float block_reduce(float v, bool take_max, float* scratch) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float other = __shfl_xor_sync(0xffffffffu, v, o);
    v = take_max ? fmaxf(v, other) : v + other;
  }
  __syncthreads();  // scratch may still be read from the previous reduction
  if (lane == 0) scratch[w] = v;
  __syncthreads();
  float r = scratch[0];
  for (int i = 1; i < kWarpsPerBlock; ++i) r = take_max ? fmaxf(r, scratch[i]) : r + scratch[i];
  return r;
}

// One block per row, two passes over it: the row's maximum and its sum of exponentials together
// (each thread keeps a running maximum and rescales its sum when the maximum grows), then the
// gradient written in place (the row, 10 KB at V = 5,000, read again from L2). kXentAtOnce values
// per thread at a time, loaded before they are used.
__global__ void softmax_xent_kernel(__nv_bfloat16* __restrict__ logits, const int64_t* __restrict__ targets,
                                    float* __restrict__ row_loss, int64_t V) {
  __shared__ float scratch[kWarpsPerBlock];
  __shared__ float target_logit;
  const int64_t r = blockIdx.x;
  __nv_bfloat16* row = logits + r * V;
  const int64_t target = targets[r];
  const bool valid = target >= 0 && target < V;
  const int64_t step = static_cast<int64_t>(blockDim.x) * kXentAtOnce;
  float m = -INFINITY, s = 0.0f;  // this thread's running maximum, and Σ exp(value − m) of its values
  for (int64_t c0 = threadIdx.x; c0 < V; c0 += step) {
    float v[kXentAtOnce];
#pragma unroll
    for (int j = 0; j < kXentAtOnce; ++j) {
      const int64_t c = c0 + static_cast<int64_t>(j) * blockDim.x;
      v[j] = c < V ? __bfloat162float(row[c]) : -INFINITY;
    }
    float m_new = m;
#pragma unroll
    for (int j = 0; j < kXentAtOnce; ++j) m_new = fmaxf(m_new, v[j]);
    if (m_new > -INFINITY) {  // else every value so far is padding: nothing to add
      s *= expf(m - m_new);   // m = −∞: exp(−∞) = 0, s was 0
#pragma unroll
      for (int j = 0; j < kXentAtOnce; ++j) s += expf(v[j] - m_new);
      m = m_new;
    }
  }
  const float row_max = block_reduce(m, true, scratch);
  if (threadIdx.x == 0) target_logit = valid ? __bfloat162float(row[target]) : NAN;
  // each thread's sum moved to the row's maximum (a thread with no values: m = −∞, s = 0)
  const float sum = block_reduce(m > -INFINITY ? s * expf(m - row_max) : 0.0f, false, scratch);
  // block_reduce's __syncthreads also orders target_logit before the writes below
  const float inv_sum = 1.0f / sum;
  if (threadIdx.x == 0) row_loss[r] = row_max + logf(sum) - target_logit;
  for (int64_t c0 = threadIdx.x; c0 < V; c0 += step) {
    float v[kXentAtOnce];
#pragma unroll
    for (int j = 0; j < kXentAtOnce; ++j) {
      const int64_t c = c0 + static_cast<int64_t>(j) * blockDim.x;
      v[j] = c < V ? __bfloat162float(row[c]) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kXentAtOnce; ++j) {
      const int64_t c = c0 + static_cast<int64_t>(j) * blockDim.x;
      if (c < V) {
        const float p = expf(v[j] - row_max) * inv_sum;
        row[c] = __float2bfloat16(c == target ? p - 1.0f : p);
      }
    }
  }
}

// ---- the FFN's bias + GELU (erf form, torch::gelu's default) over bf16 [rows, f] -------------------
// Block (x, y) takes column x·kThreads + threadIdx.x of the rows of chunks y, y + gridDim.y, ...
// (chunk k: rows k·kColumnRows to k·kColumnRows + kColumnRows − 1): a warp reads 32 neighbouring
// values of a row, and a thread's share of the bias gradient stays in a register.
__device__ __forceinline__ float gelu_erf(float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)); }
// d/dv GELU(v) = Φ(v) + v · φ(v)
__device__ __forceinline__ float gelu_erf_grad(float v) {
  return 0.5f * (1.0f + erff(v * 0.70710678118654752f)) + v * 0.39894228040143268f * expf(-0.5f * v * v);
}

// a = GELU(u + bias), u and a bf16 [rows, f], bias fp32 [f]. A block takes kColumnRows rows at a
// time, every value loaded before any is used: a thread has kColumnRows loads in flight instead of
// one (one 2-byte load per thread at a time keeps about a sixth of the GPU's memory bandwidth busy).
__global__ void bias_gelu_forward_kernel(const __nv_bfloat16* __restrict__ u, const float* __restrict__ bias,
                                         __nv_bfloat16* __restrict__ a, int64_t rows, int64_t f) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= f) return;
  const float bc = bias[c];
  for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * kColumnRows; r0 < rows;
       r0 += static_cast<int64_t>(gridDim.y) * kColumnRows) {
    float v[kColumnRows];
#pragma unroll
    for (int j = 0; j < kColumnRows; ++j) v[j] = r0 + j < rows ? __bfloat162float(u[(r0 + j) * f + c]) : 0.0f;
#pragma unroll
    for (int j = 0; j < kColumnRows; ++j)
      if (r0 + j < rows) a[(r0 + j) * f + c] = __float2bfloat16(gelu_erf(v[j] + bc));
  }
}

// du = g · GELU'(u + bias) (bf16), and per block row y the partial bias gradient Σ du over its rows
// (fp32, before du's rounding) into db_part[y, c]. Rows kColumnRows at a time, as the forward pass.
__global__ void bias_gelu_backward_kernel(const __nv_bfloat16* __restrict__ g, const __nv_bfloat16* __restrict__ u,
                                          const float* __restrict__ bias, __nv_bfloat16* __restrict__ du,
                                          float* __restrict__ db_part, int64_t rows, int64_t f) {
  const int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= f) return;
  const float bc = bias[c];
  float acc = 0.0f;
  for (int64_t r0 = static_cast<int64_t>(blockIdx.y) * kColumnRows; r0 < rows;
       r0 += static_cast<int64_t>(gridDim.y) * kColumnRows) {
    float gv[kColumnRows], uv[kColumnRows];
#pragma unroll
    for (int j = 0; j < kColumnRows; ++j) {
      const bool in = r0 + j < rows;
      gv[j] = in ? __bfloat162float(g[(r0 + j) * f + c]) : 0.0f;
      uv[j] = in ? __bfloat162float(u[(r0 + j) * f + c]) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kColumnRows; ++j) {
      if (r0 + j < rows) {
        const float d = gv[j] * gelu_erf_grad(uv[j] + bc);
        du[(r0 + j) * f + c] = __float2bfloat16(d);
        acc += d;
      }
    }
  }
  db_part[static_cast<int64_t>(blockIdx.y) * f + c] = acc;
}

}  // namespace
}  // namespace hsm::cuda_kernels
