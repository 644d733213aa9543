#pragma once
// The hashed dropout mask, one definition for both devices: the CPU's dropout (model/dropout.cpp)
// and the CUDA kernels (kernels/cuda/fused_kernels.cu) include this, so the same (seed, stream)
// drops the same elements on both, and a test can compare them element by element.
//
// Element i of a mask for dropout p is kept, scaled by 1/(1 − p), when
//   mix32(mix32(i ^ key1) + key2) >= threshold(p),
// with key1 and key2 made from the 64-bit seed and stream. No torch, no CUDA header.
#include <algorithm>
#include <cstdint>

#if defined(__CUDACC__)
#define HSM_HOST_DEVICE __host__ __device__
#else
#define HSM_HOST_DEVICE
#endif

namespace hsm::dropout_hash {

// A 32-bit integer finaliser with full avalanche (Wellons' "lowbias32").
HSM_HOST_DEVICE inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

struct Keys {
  uint32_t key1, key2;
};

HSM_HOST_DEVICE inline Keys keys(uint64_t seed, uint64_t stream) {
  Keys k;
  k.key1 = mix32(static_cast<uint32_t>(seed) ^ mix32(static_cast<uint32_t>(stream) + 0x9e3779b9U));
  k.key2 = mix32(static_cast<uint32_t>(seed >> 32) ^ mix32(static_cast<uint32_t>(stream >> 32) + k.key1));
  return k;
}

HSM_HOST_DEVICE inline bool kept(const Keys& k, uint32_t i, uint32_t threshold) {
  return mix32(mix32(i ^ k.key1) + k.key2) >= threshold;
}

// The keep threshold and the scale of dropout p.
inline uint32_t threshold(double p) { return static_cast<uint32_t>(std::min(p, 1.0) * 4294967295.0); }
inline float scale(double p) { return p < 1.0 ? static_cast<float>(1.0 / (1.0 - p)) : 0.0F; }

}  // namespace hsm::dropout_hash
