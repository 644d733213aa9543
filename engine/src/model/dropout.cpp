#include "model/dropout.h"

#include <limits>

namespace hsm {
namespace {

// A 32-bit integer finaliser with full avalanche (Wellons' "lowbias32").
inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

}  // namespace

uint64_t draw_dropout_seed() {
  return static_cast<uint64_t>(torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kLong).item<int64_t>());
}

torch::Tensor dropout_mask(at::IntArrayRef sizes, double p, uint64_t seed, uint64_t stream, int64_t offset) {
  auto mask = torch::empty(sizes, torch::kFloat32);
  const int64_t n = mask.numel();
  TORCH_CHECK(offset >= 0 && offset + n < (int64_t{1} << 32), "dropout_mask: more than 2^32 elements in one mask");
  const uint32_t key1 = mix32(static_cast<uint32_t>(seed) ^ mix32(static_cast<uint32_t>(stream) + 0x9e3779b9U));
  const uint32_t key2 = mix32(static_cast<uint32_t>(seed >> 32) ^ mix32(static_cast<uint32_t>(stream >> 32) + key1));
  // Keep when the hash is at or above p·2^32.
  const auto threshold = static_cast<uint32_t>(std::min(p, 1.0) * 4294967295.0);
  const float scale = p < 1.0 ? static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
  float* out = mask.data_ptr<float>();
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t h = mix32(mix32(static_cast<uint32_t>(offset + i) ^ key1) + key2);
      out[i] = h >= threshold ? scale : 0.0f;
    }
  });
  return mask;
}

torch::Tensor fast_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (!x.is_cpu()) return torch::dropout(x, p, true);
  return x * dropout_mask(x.sizes(), p, draw_dropout_seed()).to(x.scalar_type());
}

}  // namespace hsm
