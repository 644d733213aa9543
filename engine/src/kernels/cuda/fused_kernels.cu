// Fused CUDA kernels for the training step (issue 49); see fused_kernels.h for what each computes.
//
// Row kernels (LayerNorm, the shift mix's backward pass) give each warp whole rows: lane l holds
// columns l, l + 32, ... of a row in registers (d ≤ 1024: at most 32 per lane), so a row is read
// once, its sums are warp shuffles, and the weight gradients accumulate per lane over the warp's
// rows before one partial row per warp is written. Element kernels (dropout, the shift mix's
// forward pass) are grid-stride loops. Everything is on the stream the caller passes.
#include "kernels/cuda/fused_kernels.h"
#include "kernels/dropout_hash.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <map>
#include <mutex>
#include <utility>

namespace hsm::cuda_kernels {
namespace {

constexpr int kThreads = 256;                 // 8 warps per block
constexpr int kWarpsPerBlock = kThreads / 32;
constexpr int64_t kMaxElementBlocks = 2048;

cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }

// One wave: the blocks of `kernel` the current GPU holds at once (multiprocessors × blocks each, by
// its registers), cached per device and kernel. A row kernel's warps each take every (warps)th row,
// so a grid of more than one wave would leave its last partial wave running alone.
int64_t wave_blocks(const void* kernel) {
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, int64_t> waves;
  int device = 0;
  cudaGetDevice(&device);
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device, kernel);
  if (const auto it = waves.find(key); it != waves.end()) return it->second;
  int sms = 0, per_sm = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0);
  const int64_t wave = static_cast<int64_t>(sms > 0 ? sms : 1) * (per_sm > 0 ? per_sm : 1);
  waves[key] = wave;
  return wave;
}

int64_t row_blocks(int64_t rows, const void* kernel) {
  const int64_t need = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const int64_t wave = wave_blocks(kernel);
  return need < wave ? (need > 0 ? need : 1) : wave;
}
int64_t element_blocks(int64_t n) {
  const int64_t need = (n + kThreads * 4 - 1) / (kThreads * 4);
  return need < kMaxElementBlocks ? (need > 0 ? need : 1) : kMaxElementBlocks;
}

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

// ---- LayerNorm ---------------------------------------------------------------------------------
template <int kPerLane>
__global__ void layer_norm_forward_kernel(const float* __restrict__ x, const float* __restrict__ w,
                                          const float* __restrict__ b, float* __restrict__ y, float* __restrict__ mean,
                                          float* __restrict__ rstd, int64_t rows, int d, float eps) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const float inv_d = 1.0f / static_cast<float>(d);
  for (int64_t r = warp; r < rows; r += warps) {
    const float* xr = x + r * d;
    float v[kPerLane];
    float s = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      v[k] = c < d ? xr[c] : 0.0f;
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
    float* yr = y + r * d;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < d) yr[c] = (v[k] - m) * rs * (w ? w[c] : 1.0f) + (b ? b[c] : 0.0f);
    }
    if (lane == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
  }
}

// dx = rstd · (g·w − mean(g·w) − x̂ · mean(g·w·x̂)) per row; dw += g·x̂, db += g per lane.
template <int kPerLane>
__global__ void layer_norm_backward_kernel(const float* __restrict__ g, const float* __restrict__ x,
                                           const float* __restrict__ mean, const float* __restrict__ rstd,
                                           const float* __restrict__ w, float* __restrict__ dx,
                                           float* __restrict__ dw_part, float* __restrict__ db_part, int64_t rows,
                                           int d) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const float inv_d = 1.0f / static_cast<float>(d);
  float acc_w[kPerLane], acc_b[kPerLane];
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) acc_w[k] = acc_b[k] = 0.0f;
  for (int64_t r = warp; r < rows; r += warps) {
    const float m = mean[r], rs = rstd[r];
    const float* xr = x + r * d;
    const float* gr = g + r * d;
    float xh[kPerLane], gw[kPerLane];
    float s1 = 0, s2 = 0;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < d) {
        const float gv = gr[c];
        xh[k] = (xr[c] - m) * rs;
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
    float* dxr = dx + r * d;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int c = lane + 32 * k;
      if (c < d) dxr[c] = rs * (gw[k] - s1 - xh[k] * s2);
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

// ---- dropout with hashed masks (kernels/dropout_hash.h, as the CPU draws them) --------------------
// The keys of (*seed, stream 0), read on the device: a CUDA graph replays with the seed of the day.
__device__ __forceinline__ dropout_hash::Keys keys_of(const int64_t* seed_ptr) {
  return dropout_hash::keys(static_cast<uint64_t>(*seed_ptr), 0);
}
__device__ __forceinline__ float keep(const dropout_hash::Keys& k, uint32_t i, uint32_t threshold, float scale) {
  return dropout_hash::kept(k, i, threshold) ? scale : 0.0f;
}

__global__ void dropout_forward_kernel(const float* __restrict__ h, const void* __restrict__ y, bool y_bf16,
                                       void* __restrict__ out, bool out_bf16, const int64_t* __restrict__ seed,
                                       uint32_t threshold, float scale, int64_t n) {
  const dropout_hash::Keys k = keys_of(seed);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = load(y, y_bf16, i) * keep(k, static_cast<uint32_t>(i), threshold, scale);
    store(out, out_bf16, i, h ? h[i] + v : v);
  }
}

__global__ void dropout_backward_kernel(const void* __restrict__ g, bool g_bf16, void* __restrict__ dy, bool dy_bf16,
                                        const int64_t* __restrict__ seed, uint32_t threshold, float scale, int64_t n) {
  const dropout_hash::Keys k = keys_of(seed);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    store(dy, dy_bf16, i, load(g, g_bf16, i) * keep(k, static_cast<uint32_t>(i), threshold, scale));
}

// ---- the shift mix (HSM (a,b), (a,b) vector) ---------------------------------------------------
// One warp per row (a row's position t = r mod T, read once per row, not per element).
__global__ void shift_mix_forward_kernel(const float* __restrict__ x, const float* __restrict__ a,
                                         const float* __restrict__ b, bool vector, float* __restrict__ y, int64_t rows,
                                         int64_t T, int64_t d, int64_t s) {
  const int lane = threadIdx.x & 31;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int64_t warps = (static_cast<int64_t>(gridDim.x) * blockDim.x) >> 5;
  const float a0 = a[0], b0 = b[0];
  for (int64_t r = warp; r < rows; r += warps) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    if (r % T >= s) {
      const float* xs = xr - s * d;
      for (int64_t c = lane; c < d; c += 32) yr[c] = (vector ? a[c] : a0) * xr[c] + (vector ? b[c] : b0) * xs[c];
    } else {
      for (int64_t c = lane; c < d; c += 32) yr[c] = (vector ? a[c] : a0) * xr[c];
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

__global__ void softmax_xent_kernel(__nv_bfloat16* __restrict__ logits, const int64_t* __restrict__ targets,
                                    float* __restrict__ row_loss, int64_t V) {
  __shared__ float scratch[kWarpsPerBlock];
  __shared__ float target_logit;
  const int64_t r = blockIdx.x;
  __nv_bfloat16* row = logits + r * V;
  const int64_t target = targets[r];
  const bool valid = target >= 0 && target < V;
  float m = -INFINITY;
  for (int64_t c = threadIdx.x; c < V; c += blockDim.x) m = fmaxf(m, __bfloat162float(row[c]));
  m = block_reduce(m, true, scratch);
  if (threadIdx.x == 0) target_logit = valid ? __bfloat162float(row[target]) : NAN;
  float s = 0;
  for (int64_t c = threadIdx.x; c < V; c += blockDim.x) s += expf(__bfloat162float(row[c]) - m);
  s = block_reduce(s, false, scratch);  // its __syncthreads also orders target_logit before the writes
  const float inv_s = 1.0f / s;
  if (threadIdx.x == 0) row_loss[r] = m + logf(s) - target_logit;
  for (int64_t c = threadIdx.x; c < V; c += blockDim.x) {
    const float p = expf(__bfloat162float(row[c]) - m) * inv_s;
    row[c] = __float2bfloat16(c == target ? p - 1.0f : p);
  }
}

// Each row kernel in three widths: ≤ 256, ≤ 512, ≤ 1024 values per row (values per lane 8, 16, 32).
template <template <int> class K>
const void* by_width(int64_t d) {
  return d <= 256 ? K<8>::ptr() : d <= 512 ? K<16>::ptr() : K<32>::ptr();
}
template <int N>
struct LayerNormForward {
  static const void* ptr() { return reinterpret_cast<const void*>(&layer_norm_forward_kernel<N>); }
};
template <int N>
struct LayerNormBackward {
  static const void* ptr() { return reinterpret_cast<const void*>(&layer_norm_backward_kernel<N>); }
};
template <int N>
struct ShiftMixBackward {
  static const void* ptr() { return reinterpret_cast<const void*>(&shift_mix_backward_kernel<N>); }
};

}  // namespace

int64_t partial_rows(RowSum kernel, int64_t rows, int64_t d) {
  const void* k = kernel == RowSum::kLayerNormBackward ? by_width<LayerNormBackward>(d) : by_width<ShiftMixBackward>(d);
  return row_blocks(rows, k) * kWarpsPerBlock;
}

#define HSM_BY_WIDTH(kernel, d, ...)                                                                \
  do {                                                                                              \
    if ((d) <= 256)                                                                                 \
      kernel<8><<<grid, kThreads, 0, as_stream(stream)>>>(__VA_ARGS__);                             \
    else if ((d) <= 512)                                                                            \
      kernel<16><<<grid, kThreads, 0, as_stream(stream)>>>(__VA_ARGS__);                            \
    else                                                                                            \
      kernel<32><<<grid, kThreads, 0, as_stream(stream)>>>(__VA_ARGS__);                            \
  } while (0)

void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                        int64_t rows, int64_t d, float eps, void* stream) {
  const auto grid = static_cast<unsigned>(row_blocks(rows, by_width<LayerNormForward>(d)));
  HSM_BY_WIDTH(layer_norm_forward_kernel, d, x, w, b, y, mean, rstd, rows, static_cast<int>(d), eps);
}

void layer_norm_backward(const float* g, const float* x, const float* mean, const float* rstd, const float* w,
                         float* dx, float* dw_part, float* db_part, int64_t rows, int64_t d, void* stream) {
  const auto grid = static_cast<unsigned>(partial_rows(RowSum::kLayerNormBackward, rows, d) / kWarpsPerBlock);
  HSM_BY_WIDTH(layer_norm_backward_kernel, d, g, x, mean, rstd, w, dx, dw_part, db_part, rows, static_cast<int>(d));
}

void dropout_forward(const float* h, const void* y, bool y_bf16, void* out, bool out_bf16, const int64_t* seed,
                     uint32_t threshold, float scale, int64_t n, void* stream) {
  dropout_forward_kernel<<<static_cast<unsigned>(element_blocks(n)), kThreads, 0, as_stream(stream)>>>(
      h, y, y_bf16, out, out_bf16, seed, threshold, scale, n);
}

void dropout_backward(const void* g, bool g_bf16, void* dy, bool dy_bf16, const int64_t* seed, uint32_t threshold,
                      float scale, int64_t n, void* stream) {
  dropout_backward_kernel<<<static_cast<unsigned>(element_blocks(n)), kThreads, 0, as_stream(stream)>>>(
      g, g_bf16, dy, dy_bf16, seed, threshold, scale, n);
}

void shift_mix_forward(const float* x, const float* a, const float* b, bool vector, float* y, int64_t rows,
                       int64_t T, int64_t d, int64_t s, void* stream) {
  const auto grid = row_blocks(rows, reinterpret_cast<const void*>(&shift_mix_forward_kernel));
  shift_mix_forward_kernel<<<static_cast<unsigned>(grid), kThreads, 0, as_stream(stream)>>>(
      x, a, b, vector, y, rows, T, d, s);
}

void shift_mix_backward(const float* g, const float* x, const float* a, const float* b, bool vector, float* dx,
                        float* da_part, float* db_part, int64_t rows, int64_t T, int64_t d, int64_t s, void* stream) {
  const auto grid = static_cast<unsigned>(partial_rows(RowSum::kShiftMixBackward, rows, d) / kWarpsPerBlock);
  HSM_BY_WIDTH(shift_mix_backward_kernel, d, g, x, a, b, vector, dx, da_part, db_part, rows, T, static_cast<int>(d),
               s);
}

void softmax_xent_inplace(void* logits_bf16, const int64_t* targets, float* row_loss, int64_t rows, int64_t V,
                          void* stream) {
  if (rows == 0) return;
  softmax_xent_kernel<<<static_cast<unsigned>(rows), kThreads, 0, as_stream(stream)>>>(
      static_cast<__nv_bfloat16*>(logits_bf16), targets, row_loss, V);
}

const char* last_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace hsm::cuda_kernels
