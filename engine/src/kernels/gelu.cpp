// GELU (the exact erf form) forward and backward, and the first FFN layer's bias + GELU in
// one pass (fast_kernels.h): AVX2 and AVX-512 versions with a plain-loop fallback.
#include <cmath>

#include "kernels/fast_kernels.h"
#include "kernels/kernel_set.h"
#include "kernels/simd_math.h"

namespace hsm::fast {
namespace {

using detail::have_avx2;
using detail::have_avx512;

inline float gelu_scalar(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752440f)); }

#ifdef HSM_FAST_X86
using detail::exp_avx2;
using detail::exp_avx512;
using detail::tail_mask;

// Φ(x) = (1 + erf(x/√2))/2, the normal CDF, for 8 floats, with erf by Abramowitz & Stegun
// 7.1.26 (absolute error below 1.5e-7, the approximation LibTorch's own vectorised erf uses);
// *gauss gets e^{−x²/2}, which the formula computes anyway (GELU's derivative needs it).
__attribute__((target("avx2,fma"))) inline __m256 normal_cdf_avx2(__m256 x, __m256* gauss) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f), one = _mm256_set1_ps(1.0f);
  const __m256 z = _mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752440f));
  const __m256 az = _mm256_andnot_ps(sign_mask, z);
  const __m256 t = _mm256_div_ps(one, _mm256_fmadd_ps(az, _mm256_set1_ps(0.3275911f), one));
  __m256 poly = _mm256_set1_ps(1.061405429f);
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-1.453152027f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(1.421413741f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(-0.284496736f));
  poly = _mm256_fmadd_ps(poly, t, _mm256_set1_ps(0.254829592f));
  poly = _mm256_mul_ps(poly, t);
  const __m256 e = exp_avx2(_mm256_mul_ps(_mm256_xor_ps(az, sign_mask), az));  // exp(-z²) = exp(-x²/2)
  __m256 erf = _mm256_fnmadd_ps(poly, e, one);                                 // erf(|z|)
  erf = _mm256_or_ps(erf, _mm256_and_ps(z, sign_mask));                        // odd function
  *gauss = e;
  return _mm256_mul_ps(_mm256_set1_ps(0.5f), _mm256_add_ps(one, erf));
}

// y = GELU(x + bias) = (x + bias) · Φ(x + bias) over n values (bias may be null); y may equal x.
__attribute__((target("avx2,fma"))) void gelu_avx2(const float* in, const float* bias, float* out, int64_t n) {
  int64_t i = 0;
  __m256 unused;
  for (; i + 8 <= n; i += 8) {
    __m256 x = _mm256_loadu_ps(in + i);
    if (bias) x = _mm256_add_ps(x, _mm256_loadu_ps(bias + i));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(x, normal_cdf_avx2(x, &unused)));
  }
  for (; i < n; ++i) out[i] = gelu_scalar(in[i] + (bias ? bias[i] : 0.0f));
}

// dx = g · GELU'(x) = g · (Φ(x) + x·φ(x)), φ(x) = e^{−x²/2}/√(2π).
__attribute__((target("avx2,fma"))) void gelu_backward_avx2(const float* xp, const float* gp, float* dx, int64_t n) {
  const __m256 inv_sqrt_2pi = _mm256_set1_ps(0.39894228040143267794f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(xp + i);
    __m256 gauss;
    const __m256 cdf = normal_cdf_avx2(x, &gauss);
    const __m256 d = _mm256_fmadd_ps(_mm256_mul_ps(x, inv_sqrt_2pi), gauss, cdf);
    _mm256_storeu_ps(dx + i, _mm256_mul_ps(_mm256_loadu_ps(gp + i), d));
  }
  for (; i < n; ++i) {
    const float x = xp[i];
    const float cdf = 0.5f * (1.0f + std::erf(x * 0.70710678118654752440f));
    dx[i] = gp[i] * (cdf + x * 0.39894228040143267794f * std::exp(-0.5f * x * x));
  }
}

HSM_AVX512_CODE_BEGIN

// AVX-512 versions (GELU forward and backward dominate outside the matrix products): 16
// lanes, masked tails, and 1/(1 + p·|z|) by a reciprocal estimate with one Newton step
// instead of a division. Same formulas as the AVX2 versions above; only AVX512F instructions.
__attribute__((target("avx512f"))) inline __m512 normal_cdf_avx512(__m512 x, __m512* gauss) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 z = _mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752440f));
  const __m512 az = _mm512_abs_ps(z);
  const __m512 d = _mm512_fmadd_ps(az, _mm512_set1_ps(0.3275911f), one);
  __m512 t = _mm512_rcp14_ps(d);                                          // relative error < 2^-14
  t = _mm512_mul_ps(t, _mm512_fnmadd_ps(d, t, _mm512_set1_ps(2.0f)));  // one Newton step: < 2^-27
  __m512 poly = _mm512_set1_ps(1.061405429f);
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(-1.453152027f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(1.421413741f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(-0.284496736f));
  poly = _mm512_fmadd_ps(poly, t, _mm512_set1_ps(0.254829592f));
  poly = _mm512_mul_ps(poly, t);
  const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_mul_ps(az, az)));  // exp(-x²/2)
  __m512 erf = _mm512_fnmadd_ps(poly, e, one);                                             // erf(|z|)
  erf = _mm512_mask_sub_ps(erf, _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ), _mm512_setzero_ps(), erf);
  *gauss = e;
  return _mm512_mul_ps(_mm512_set1_ps(0.5f), _mm512_add_ps(one, erf));
}

__attribute__((target("avx512f"))) void gelu_avx512(const float* in, const float* bias, float* out, int64_t n) {
  __m512 unused;
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    __m512 x = _mm512_maskz_loadu_ps(m, in + i);
    if (bias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, bias + i));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(x, normal_cdf_avx512(x, &unused)));
  }
}

__attribute__((target("avx512f"))) void gelu_backward_avx512(const float* xp, const float* gp, float* dx, int64_t n) {
  const __m512 inv_sqrt_2pi = _mm512_set1_ps(0.39894228040143267794f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 x = _mm512_maskz_loadu_ps(m, xp + i);
    __m512 gauss;
    const __m512 cdf = normal_cdf_avx512(x, &gauss);
    const __m512 d = _mm512_fmadd_ps(_mm512_mul_ps(x, inv_sqrt_2pi), gauss, cdf);
    _mm512_mask_storeu_ps(dx + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, gp + i), d));
  }
}

HSM_AVX512_CODE_END
#endif

}  // namespace

void gelu(float* x, int64_t n) { gelu_rows(x, x, n); }

void bias_gelu_rows(float* x, const float* bias, int64_t rows, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
#ifdef HSM_FAST_X86
    if (have_avx512()) {
      gelu_avx512(row, bias, row, n);
      continue;
    }
    if (have_avx2()) {
      gelu_avx2(row, bias, row, n);
      continue;
    }
#endif
    for (int64_t i = 0; i < n; ++i) row[i] = gelu_scalar(row[i] + (bias ? bias[i] : 0.0f));
  }
}

void gelu_rows(const float* x, float* y, int64_t n) {
#ifdef HSM_FAST_X86
  if (have_avx512()) return gelu_avx512(x, nullptr, y, n);
  if (have_avx2()) return gelu_avx2(x, nullptr, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = gelu_scalar(x[i]);
}

void gelu_backward(const float* x, const float* g, float* dx, int64_t n) {
#ifdef HSM_FAST_X86
  if (have_avx512()) return gelu_backward_avx512(x, g, dx, n);
  if (have_avx2()) return gelu_backward_avx2(x, g, dx, n);
#endif
  for (int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.0f + std::erf(x[i] * 0.70710678118654752440f));
    dx[i] = g[i] * (cdf + x[i] * 0.39894228040143267794f * std::exp(-0.5f * x[i] * x[i]));
  }
}

}  // namespace hsm::fast
