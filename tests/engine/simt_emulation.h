#pragma once
// CUDA kernel source run on the CPU, for tests: one std::thread per CUDA thread, so that the
// fused kernels (engine/src/kernels/cuda/fused_kernels.cuh) are checked, index by index, on every
// CI machine, not only where a GPU is lent. What it provides is what those kernels use:
//
//   - threadIdx, blockIdx, blockDim, gridDim (thread-local, set for each thread);
//   - __shfl_xor_sync over a whole warp: the warp's 32 threads meet at a barrier, each leaves its
//     value in the block's slots, then reads its partner's (a warp's lanes must all call it, as
//     on a GPU where a partial mask would be needed otherwise);
//   - __syncthreads: a barrier of the whole block;
//   - __shared__ as static storage: blocks run one after another, so one block's threads share it
//     (a thread that returns early from the kernel waits for the next block outside it);
//   - __nv_bfloat16 with round-to-nearest-even conversions, as the GPU's (and LibTorch's) bf16;
//   - rsqrtf (the others, expf, logf, erff, fmaxf, come from <cmath>).
//
// Not emulated: memory ordering between warps without a barrier (the kernels have none), the
// GPU's float rounding of its fast intrinsics (the tests' tolerances allow a few ulps), and
// speed. Launch with simt::launch(grid, block, [&] { kernel(args...); }).
#include <condition_variable>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

inline thread_local dim3 threadIdx, blockIdx, blockDim, gridDim;

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static

struct __nv_bfloat16 {
  uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 h) {
  const uint32_t u = static_cast<uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline __nv_bfloat16 __float2bfloat16(float f) {
  if (std::isnan(f)) return {0x7fc0};
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  u += 0x7fffU + ((u >> 16) & 1U);  // to nearest, ties to even
  return {static_cast<uint16_t>(u >> 16)};
}
inline float rsqrtf(float v) { return 1.0f / std::sqrt(v); }

namespace simt {

// A reusable barrier for n threads (C++17 has no std::barrier).
class Barrier {
 public:
  explicit Barrier(unsigned n) : n_(n) {}
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t generation = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      all_arrived_.notify_all();
      return;
    }
    all_arrived_.wait(lock, [&] { return generation_ != generation; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_arrived_;
  unsigned n_, arrived_ = 0;
  uint64_t generation_ = 0;
};

struct Block {
  explicit Block(unsigned threads) : all(threads), slots(threads) {
    for (unsigned w = 0; w < threads / 32; ++w) warps.push_back(std::make_unique<Barrier>(32));
  }
  Barrier all;
  std::vector<std::unique_ptr<Barrier>> warps;
  std::vector<float> slots;  // one per thread, for the shuffles
};

inline thread_local Block* current_block = nullptr;

inline unsigned thread_in_block() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }

// Runs kernel() once per thread of the grid, a block at a time, each block's threads together:
// one std::thread per thread of a block, each going through every block in turn and meeting the
// others at a barrier between blocks (so a block's __shared__ storage is its own while it runs).
template <class Kernel>
void launch(dim3 grid, dim3 block, const Kernel& kernel) {
  const unsigned threads = block.x * block.y * block.z;
  if (threads == 0 || threads % 32 != 0) throw std::invalid_argument("simt::launch: threads must be whole warps");
  Block state(threads);
  Barrier next_block(threads);
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      gridDim = grid;
      blockDim = block;
      threadIdx = dim3(t % block.x, (t / block.x) % block.y, t / (block.x * block.y));
      current_block = &state;
      for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
          for (unsigned bx = 0; bx < grid.x; ++bx) {
            blockIdx = dim3(bx, by, bz);
            kernel();
            next_block.wait();
          }
    });
  for (auto& th : pool) th.join();
}

}  // namespace simt

inline float __shfl_xor_sync(unsigned /*mask: the whole warp*/, float v, int lane_mask) {
  simt::Block& b = *simt::current_block;
  const unsigned t = simt::thread_in_block(), warp = t / 32, lane = t % 32;
  b.slots[t] = v;
  b.warps[warp]->wait();
  const float other = b.slots[warp * 32 + (lane ^ static_cast<unsigned>(lane_mask))];
  b.warps[warp]->wait();  // every lane has read before any writes its next value
  return other;
}

inline void __syncthreads() { simt::current_block->all.wait(); }
