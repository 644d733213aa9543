#include "model/dropout.h"
#include "kernels/dropout_hash.h"
#include "model/cuda_fused.h"

#include <immintrin.h>

#include <algorithm>
#include <limits>

#include <ATen/Parallel.h>

namespace hsm {
namespace {

// The keys of (seed, stream) and the keep threshold of p (kernels/dropout_hash.h, shared with the
// CUDA kernels): element i is kept when mix32(mix32(i ^ key1) + key2) >= threshold, and then
// scaled by `scale`.
struct MaskKeys {
  uint32_t key1, key2, threshold;
  float scale;
  MaskKeys(double p, uint64_t seed, uint64_t stream) {
    const dropout_hash::Keys k = dropout_hash::keys(seed, stream);
    key1 = k.key1;
    key2 = k.key2;
    threshold = dropout_hash::threshold(p);
    scale = dropout_hash::scale(p);
  }
  float keep(uint32_t i) const { return dropout_hash::kept({key1, key2}, i, threshold) ? scale : 0.0F; }
};

// out[i] = (h ? h[i] : 0) + x[i] · keep(offset + i); x null: the mask itself.
void apply_mask_generic(const MaskKeys& k, const float* x, const float* h, float* out, int64_t n, int64_t offset) {
  for (int64_t i = 0; i < n; ++i) {
    const float m = k.keep(static_cast<uint32_t>(offset + i));
    const float v = x ? x[i] * m : m;
    out[i] = h ? h[i] + v : v;
  }
}

__attribute__((target("avx2"))) inline __m256i mix32_avx2(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(0x7feb352d));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(static_cast<int>(0x846ca68bU)));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

__attribute__((target("avx2"))) void apply_mask_avx2(const MaskKeys& k, const float* x, const float* h, float* out,
                                                       int64_t n, int64_t offset) {
  const __m256i key1 = _mm256_set1_epi32(static_cast<int>(k.key1)), key2 = _mm256_set1_epi32(static_cast<int>(k.key2));
  const __m256i threshold = _mm256_set1_epi32(static_cast<int>(k.threshold));
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 scale = _mm256_set1_ps(k.scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(offset + i))), lanes);
    const __m256i hash = mix32_avx2(_mm256_add_epi32(mix32_avx2(_mm256_xor_si256(idx, key1)), key2));
    const __m256i kept = _mm256_cmpeq_epi32(_mm256_max_epu32(hash, threshold), hash);  // hash >= threshold
    __m256 v = _mm256_and_ps(_mm256_castsi256_ps(kept), scale);
    if (x) v = _mm256_mul_ps(_mm256_loadu_ps(x + i), v);
    if (h) v = _mm256_add_ps(_mm256_loadu_ps(h + i), v);
    _mm256_storeu_ps(out + i, v);
  }
  apply_mask_generic(k, x ? x + i : nullptr, h ? h + i : nullptr, out + i, n - i, offset + i);
}

void apply_mask(const MaskKeys& k, const float* x, const float* h, float* out, int64_t n, int64_t offset) {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    if (avx2)
      apply_mask_avx2(k, x ? x + begin : nullptr, h ? h + begin : nullptr, out + begin, end - begin, offset + begin);
    else
      apply_mask_generic(k, x ? x + begin : nullptr, h ? h + begin : nullptr, out + begin, end - begin, offset + begin);
  });
}

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// y · mask (h undefined) or h + y · mask, y contiguous fp32 on the CPU.
torch::Tensor masked(const torch::Tensor& y, double p, int64_t seed, const torch::Tensor& h) {
  TORCH_CHECK(y.numel() < (int64_t{1} << 32), "dropout: more than 2^32 elements in one tensor");
  auto out = torch::empty_like(y);
  const torch::Tensor hc = h.defined() ? h.contiguous() : h;
  apply_mask(MaskKeys(p, static_cast<uint64_t>(seed), 0), y.data_ptr<float>(),
             hc.defined() ? hc.data_ptr<float>() : nullptr, out.data_ptr<float>(), y.numel(), 0);
  return out;
}

// The gradient of y · mask: g · mask, the mask drawn again from the seed.
torch::Tensor masked_grad(AutogradContext* ctx, const torch::Tensor& grad) {
  return masked(grad.contiguous(), ctx->saved_data["p"].toDouble(), ctx->saved_data["seed"].toInt(), {});
}

// Two functions because an autograd function cannot take an undefined tensor as an input.
struct HashedDropout : torch::autograd::Function<HashedDropout> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& y, double p, int64_t seed) {
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    return masked(y.contiguous(), p, seed, {});
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {masked_grad(ctx, grads[0]), torch::Tensor(), torch::Tensor()};
  }
};

struct HashedResidualDropout : torch::autograd::Function<HashedResidualDropout> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& h, const torch::Tensor& y, double p,
                               int64_t seed) {
    ctx->saved_data["p"] = p;
    ctx->saved_data["seed"] = seed;
    return masked(y.contiguous(), p, seed, h);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0], masked_grad(ctx, grads[0]), torch::Tensor(), torch::Tensor()};
  }
};

bool fused_on(const torch::Tensor& y) { return y.is_cpu() && y.scalar_type() == torch::kFloat32; }

}  // namespace

uint64_t draw_dropout_seed() {
  return static_cast<uint64_t>(torch::randint(std::numeric_limits<int64_t>::max(), {1}, torch::kLong).item<int64_t>());
}

torch::Tensor dropout_mask(at::IntArrayRef sizes, double p, uint64_t seed, uint64_t stream, int64_t offset) {
  auto mask = torch::empty(sizes, torch::kFloat32);
  const int64_t n = mask.numel();
  TORCH_CHECK(offset >= 0 && offset + n < (int64_t{1} << 32), "dropout_mask: more than 2^32 elements in one mask");
  apply_mask(MaskKeys(p, seed, stream), nullptr, nullptr, mask.data_ptr<float>(), n, offset);
  return mask;
}

torch::Tensor fast_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (cuda_fused::eligible_dropout({}, x)) return cuda_fused::dropout({}, x, p);
  if (!x.is_cpu()) return torch::dropout(x, p, true);
  if (!fused_on(x)) return x * dropout_mask(x.sizes(), p, draw_dropout_seed()).to(x.scalar_type());
  return HashedDropout::apply(x, p, static_cast<int64_t>(draw_dropout_seed()));
}

torch::Tensor residual_dropout(const torch::Tensor& h, const torch::Tensor& y, double p, bool training) {
  // On CUDA in a step that learns, one kernel (also at p = 0: LibTorch's add of a bf16 output to
  // the fp32 stream took its slow casting path, 92 µs at 256 × 128 × 256).
  if (torch::GradMode::is_enabled() && cuda_fused::eligible_dropout(h, y))
    return cuda_fused::dropout(h, y, training ? std::max(p, 0.0) : 0.0);
  if (!training || p <= 0 || !fused_on(y) || !h.is_cpu() || h.scalar_type() != torch::kFloat32 ||
      h.sizes() != y.sizes())
    return h + fast_dropout(y, p, training);
  return HashedResidualDropout::apply(h, y, p, static_cast<int64_t>(draw_dropout_seed()));
}

}  // namespace hsm
