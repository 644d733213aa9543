// Fused CUDA kernels for the training step (issue 49): their launches. What each computes:
// fused_kernels.h; the kernels themselves: fused_kernels.cuh (shared with the CPU's emulation in
// the tests). Every launch is on the stream the caller passes; grids are sized here.
#include "kernels/cuda/fused_kernels.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/cuda/fused_kernels.cuh"

#include <cmath>
#include <map>
#include <mutex>
#include <utility>

namespace hsm::cuda_kernels {
namespace {

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
// Column kernels: blocks of kThreads columns across, and as many blocks of rows down as fill one wave
// (each takes every (down)th chunk of kColumnRows rows), at most one per chunk and within CUDA's
// 65,535 grid rows.
dim3 column_grid(int64_t rows, int64_t cols, const void* kernel) {
  const int64_t across = (cols + kThreads - 1) / kThreads;
  const int64_t chunks = (rows + kColumnRows - 1) / kColumnRows;
  int64_t down = wave_blocks(kernel) / (across > 0 ? across : 1);
  down = down < chunks ? down : chunks;
  down = down < 65535 ? down : 65535;
  return dim3(static_cast<unsigned>(across > 0 ? across : 1), static_cast<unsigned>(down > 0 ? down : 1));
}
// Element kernels: enough blocks for kElementsAtOnce elements per thread, at most kMaxElementBlocks.
int64_t element_blocks(int64_t n) {
  const int64_t need = (n + kThreads * kElementsAtOnce - 1) / (kThreads * kElementsAtOnce);
  return need < kMaxElementBlocks ? (need > 0 ? need : 1) : kMaxElementBlocks;
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
struct AddNormForward {
  static const void* ptr() { return reinterpret_cast<const void*>(&add_norm_forward_kernel<N>); }
};
template <int N>
struct AddNormBackward {
  static const void* ptr() { return reinterpret_cast<const void*>(&add_norm_backward_kernel<N>); }
};
template <int N>
struct ShiftMixBackward {
  static const void* ptr() { return reinterpret_cast<const void*>(&shift_mix_backward_kernel<N>); }
};

}  // namespace

int64_t partial_rows(RowSum kernel, int64_t rows, int64_t d) {
  if (kernel == RowSum::kBiasGeluBackward)
    return column_grid(rows, d, reinterpret_cast<const void*>(&bias_gelu_backward_kernel)).y;
  const void* k = kernel == RowSum::kLayerNormBackward ? by_width<LayerNormBackward>(d)
                  : kernel == RowSum::kAddNormBackward  ? by_width<AddNormBackward>(d)
                                                        : by_width<ShiftMixBackward>(d);
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

void add_norm_forward(const float* h_in, const void* y, bool y_bf16, const int64_t* seed, uint32_t threshold,
                      float scale, const float* w, const float* b, float* h_out, void* x_out, bool x_bf16,
                      float* mean, float* rstd, int64_t rows, int64_t d, float eps, void* stream) {
  const auto grid = static_cast<unsigned>(row_blocks(rows, by_width<AddNormForward>(d)));
  HSM_BY_WIDTH(add_norm_forward_kernel, d, h_in, y, y_bf16, seed, threshold, scale, w, b, h_out, x_out, x_bf16, mean,
               rstd, rows, static_cast<int>(d), eps);
}

void add_norm_backward(const void* gx, bool gx_bf16, const float* gh, const float* h, const float* mean,
                       const float* rstd, const float* w, const int64_t* seed, uint32_t threshold, float scale,
                       float* dh_in, void* dy, bool dy_bf16, float* dw_part, float* db_part, int64_t rows, int64_t d,
                       void* stream) {
  const auto grid = static_cast<unsigned>(partial_rows(RowSum::kAddNormBackward, rows, d) / kWarpsPerBlock);
  HSM_BY_WIDTH(add_norm_backward_kernel, d, gx, gx_bf16, gh, h, mean, rstd, w, seed, threshold, scale, dh_in, dy,
               dy_bf16, dw_part, db_part, rows, static_cast<int>(d));
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

void bias_gelu_forward(const void* u_bf16, const float* bias, void* a_bf16, int64_t rows, int64_t f, void* stream) {
  if (rows == 0 || f == 0) return;
  const dim3 grid = column_grid(rows, f, reinterpret_cast<const void*>(&bias_gelu_forward_kernel));
  bias_gelu_forward_kernel<<<grid, kThreads, 0, as_stream(stream)>>>(static_cast<const __nv_bfloat16*>(u_bf16), bias,
                                                                      static_cast<__nv_bfloat16*>(a_bf16), rows, f);
}

void bias_gelu_backward(const void* g_bf16, const void* u_bf16, const float* bias, void* du_bf16, float* db_part,
                        int64_t rows, int64_t f, void* stream) {
  if (f == 0) return;
  const dim3 grid = column_grid(rows, f, reinterpret_cast<const void*>(&bias_gelu_backward_kernel));
  bias_gelu_backward_kernel<<<grid, kThreads, 0, as_stream(stream)>>>(
      static_cast<const __nv_bfloat16*>(g_bf16), static_cast<const __nv_bfloat16*>(u_bf16), bias,
      static_cast<__nv_bfloat16*>(du_bf16), db_part, rows, f);
}

const char* last_error() {
  const cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? "" : cudaGetErrorString(e);
}

}  // namespace hsm::cuda_kernels
