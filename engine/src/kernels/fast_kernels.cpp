#include "kernels/fast_kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define HSM_FAST_X86 1
#endif

namespace hsm::fast {
namespace {

// A kernel set's level by name (see level()); -1 for an unknown name.
int cap_of(const std::string& name) {
  return name == "avx512" ? 2 : name == "avx2" ? 1 : name == "generic" ? 0 : -1;
}

inline float gelu_scalar(float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752440f)); }

inline float widen(float w) { return w; }
inline float widen(uint16_t w) { return from_half(w); }

// Plain loops; Weight = float, or uint16_t for IEEE halves widened on the fly.
template <typename Weight>
void matvec_generic(const Weight* W, const float* x, const float* bias, float* y, int64_t out, int64_t in) {
  for (int64_t o = 0; o < out; ++o) {
    const Weight* w = W + o * in;
    float s = 0;
    for (int64_t i = 0; i < in; ++i) s += widen(w[i]) * x[i];
    y[o] = s + (bias ? bias[o] : 0.0f);
  }
}

float dot_generic(const float* a, const float* b, int64_t n) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

#ifdef HSM_FAST_X86
__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
// 8 halves, widened by F16C after the load.
__attribute__((target("avx2,fma,f16c"))) inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Four rows at a time share each load of x; two accumulators per row (i unrolled by 16) keep
// eight FMA chains in flight. The weights stream through once per token: memory-bound, which
// is why halves (half the bytes) are faster when the weights are exact in fp16.
template <typename Weight>
__attribute__((target("avx2,fma,f16c"))) void matvec_avx2(const Weight* W, const float* x, const float* bias,
                                                          float* y, int64_t out, int64_t in) {
  const int64_t in16 = in & ~int64_t{15}, in8 = in & ~int64_t{7};
  int64_t o = 0;
  for (; o + 4 <= out; o += 4) {
    const Weight* w0 = W + o * in;
    const Weight* w1 = w0 + in;
    const Weight* w2 = w1 + in;
    const Weight* w3 = w2 + in;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    __m256 c0 = _mm256_setzero_ps(), c1 = _mm256_setzero_ps(), c2 = _mm256_setzero_ps(), c3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i < in16; i += 16) {
      const __m256 xa = _mm256_loadu_ps(x + i), xb = _mm256_loadu_ps(x + i + 8);
      a0 = _mm256_fmadd_ps(load8(w0 + i), xa, a0);
      a1 = _mm256_fmadd_ps(load8(w1 + i), xa, a1);
      a2 = _mm256_fmadd_ps(load8(w2 + i), xa, a2);
      a3 = _mm256_fmadd_ps(load8(w3 + i), xa, a3);
      c0 = _mm256_fmadd_ps(load8(w0 + i + 8), xb, c0);
      c1 = _mm256_fmadd_ps(load8(w1 + i + 8), xb, c1);
      c2 = _mm256_fmadd_ps(load8(w2 + i + 8), xb, c2);
      c3 = _mm256_fmadd_ps(load8(w3 + i + 8), xb, c3);
    }
    for (; i < in8; i += 8) {
      const __m256 xa = _mm256_loadu_ps(x + i);
      a0 = _mm256_fmadd_ps(load8(w0 + i), xa, a0);
      a1 = _mm256_fmadd_ps(load8(w1 + i), xa, a1);
      a2 = _mm256_fmadd_ps(load8(w2 + i), xa, a2);
      a3 = _mm256_fmadd_ps(load8(w3 + i), xa, a3);
    }
    float s0 = hsum(_mm256_add_ps(a0, c0)), s1 = hsum(_mm256_add_ps(a1, c1));
    float s2 = hsum(_mm256_add_ps(a2, c2)), s3 = hsum(_mm256_add_ps(a3, c3));
    for (; i < in; ++i) {
      s0 += widen(w0[i]) * x[i];
      s1 += widen(w1[i]) * x[i];
      s2 += widen(w2[i]) * x[i];
      s3 += widen(w3[i]) * x[i];
    }
    y[o] = s0 + (bias ? bias[o] : 0.0f);
    y[o + 1] = s1 + (bias ? bias[o + 1] : 0.0f);
    y[o + 2] = s2 + (bias ? bias[o + 2] : 0.0f);
    y[o + 3] = s3 + (bias ? bias[o + 3] : 0.0f);
  }
  if (o < out) matvec_generic(W + o * in, x, bias ? bias + o : nullptr, y + o, out - o, in);
}

// exp(x) for 8 floats (Cephes' expf: range reduction by ln 2, degree-5 polynomial; relative
// error ~1e-7 over the clamped range).
__attribute__((target("avx2,fma"))) inline __m256 exp_avx2(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  __m256 fx = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

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

// Index of the first maximum of n values (NaN-free input).
__attribute__((target("avx2,fma"))) int64_t argmax_avx2(const float* x, int64_t n) {
  if (n < 8) return std::max_element(x, x + n) - x;
  __m256 m = _mm256_loadu_ps(x);
  int64_t i = 8;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float mx = *std::max_element(lanes, lanes + 8);
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  const __m256 target = _mm256_set1_ps(mx);
  for (i = 0; i + 8 <= n; i += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), target, _CMP_EQ_OQ));
    if (mask) return i + __builtin_ctz(static_cast<unsigned>(mask));
  }
  for (; i < n; ++i)
    if (x[i] == mx) return i;
  return 0;
}

// Σ exp(x[i] - mx) over n values.
__attribute__((target("avx2,fma"))) float sum_exp_avx2(const float* x, int64_t n, float mx) {
  __m256 acc = _mm256_setzero_ps();
  const __m256 m = _mm256_set1_ps(mx);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_add_ps(acc, exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), m)));
  float s = hsum(acc);
  for (; i < n; ++i) s += std::exp(x[i] - mx);
  return s;
}

// x[i] = exp(x[i] - mx) over n values, returning their sum.
__attribute__((target("avx2,fma"))) float exp_store_avx2(float* x, int64_t n, float mx) {
  __m256 acc = _mm256_setzero_ps();
  const __m256 m = _mm256_set1_ps(mx);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    _mm256_storeu_ps(x + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float s = hsum(acc);
  for (; i < n; ++i) s += (x[i] = std::exp(x[i] - mx));
  return s;
}

__attribute__((target("avx2,fma"))) void scale_avx2(float* x, int64_t n, float a) {
  const __m256 s = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), s));
  for (; i < n; ++i) x[i] *= a;
}

__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// GCC 12 warns inside its own avx512fintrin.h (_mm512_undefined_ps, GCC bug 105593).
#pragma GCC diagnostic push
#ifndef __clang__  // a GCC-only warning group (clang warns about an unknown one)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#pragma GCC diagnostic ignored "-Wuninitialized"

// AVX-512 versions of the element-wise kernels that dominate outside the matrix products
// (GELU forward and backward, the loss's exp sums): 16 lanes, masked tails, and 1/(1 + p·|z|)
// by a reciprocal estimate with one Newton step instead of a division. Same formulas as the
// AVX2 versions above; only AVX512F instructions.
__attribute__((target("avx512f"))) inline __mmask16 tail_mask(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

__attribute__((target("avx512f"))) inline __m512 exp_avx512(__m512 x) {
  x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-87.3f)), _mm512_set1_ps(88.3f));
  const __m512 fx = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
                                         _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(fx), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

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

// Σ exp(x[i] - mx) over n values; with store, x[i] = exp(x[i] - mx) too.
__attribute__((target("avx512f"))) float sum_exp_avx512(float* x, int64_t n, float mx, bool store) {
  __m512 acc = _mm512_setzero_ps();
  const __m512 mv = _mm512_set1_ps(mx);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = tail_mask(n - i);
    const __m512 e = exp_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mv));
    if (store) _mm512_mask_storeu_ps(x + i, m, e);
    acc = _mm512_mask_add_ps(acc, m, acc, e);
  }
  return _mm512_reduce_add_ps(acc);
}

// 16 weights, widened from halves by F16C's 512-bit form, or fp32 as they are; masked.
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 load16(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 load16(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

// The AVX2 kernel's scheme at 16 lanes: four rows share each load of x, two accumulators per
// row (i unrolled by 32), the tail of a row masked instead of looped.
template <typename Weight>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void matvec_avx512(const Weight* W, const float* x,
                                                                        const float* bias, float* y, int64_t out,
                                                                        int64_t in) {
  const __mmask16 all = 0xFFFF;
  const int64_t in32 = in & ~int64_t{31};
  int64_t o = 0;
  for (; o + 4 <= out; o += 4) {
    const Weight* w0 = W + o * in;
    const Weight* w1 = w0 + in;
    const Weight* w2 = w1 + in;
    const Weight* w3 = w2 + in;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    __m512 c0 = _mm512_setzero_ps(), c1 = _mm512_setzero_ps(), c2 = _mm512_setzero_ps(), c3 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i < in32; i += 32) {
      const __m512 xa = _mm512_loadu_ps(x + i), xb = _mm512_loadu_ps(x + i + 16);
      a0 = _mm512_fmadd_ps(load16(w0 + i, all), xa, a0);
      a1 = _mm512_fmadd_ps(load16(w1 + i, all), xa, a1);
      a2 = _mm512_fmadd_ps(load16(w2 + i, all), xa, a2);
      a3 = _mm512_fmadd_ps(load16(w3 + i, all), xa, a3);
      c0 = _mm512_fmadd_ps(load16(w0 + i + 16, all), xb, c0);
      c1 = _mm512_fmadd_ps(load16(w1 + i + 16, all), xb, c1);
      c2 = _mm512_fmadd_ps(load16(w2 + i + 16, all), xb, c2);
      c3 = _mm512_fmadd_ps(load16(w3 + i + 16, all), xb, c3);
    }
    for (; i < in; i += 16) {
      const __mmask16 m = tail_mask(in - i);
      const __m512 xa = _mm512_maskz_loadu_ps(m, x + i);
      a0 = _mm512_fmadd_ps(load16(w0 + i, m), xa, a0);
      a1 = _mm512_fmadd_ps(load16(w1 + i, m), xa, a1);
      a2 = _mm512_fmadd_ps(load16(w2 + i, m), xa, a2);
      a3 = _mm512_fmadd_ps(load16(w3 + i, m), xa, a3);
    }
    y[o] = _mm512_reduce_add_ps(_mm512_add_ps(a0, c0)) + (bias ? bias[o] : 0.0f);
    y[o + 1] = _mm512_reduce_add_ps(_mm512_add_ps(a1, c1)) + (bias ? bias[o + 1] : 0.0f);
    y[o + 2] = _mm512_reduce_add_ps(_mm512_add_ps(a2, c2)) + (bias ? bias[o + 2] : 0.0f);
    y[o + 3] = _mm512_reduce_add_ps(_mm512_add_ps(a3, c3)) + (bias ? bias[o + 3] : 0.0f);
  }
  if (o < out) matvec_generic(W + o * in, x, bias ? bias + o : nullptr, y + o, out - o, in);
}

#pragma GCC diagnostic pop

// F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports does not know "f16c",
// and the fuzz build (fuzz/README.md) compiles this file with clang.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

// Which kernels run: 2 = AVX-512, 1 = AVX2, 0 = plain loops; the CPU's best unless
// HSM_KERNELS or a test (limit_kernel_set) capped it.
int detected_level() {
  static const int level =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") ? 2
      : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && cpu_has_f16c()                           ? 1
                                                                                                                    : 0;
  return level;
}
// The cap HSM_KERNELS sets for the whole process (2 when unset or not a set's name; the
// name is checked by check_kernels_env).
int env_cap() {
  static const int cap = [] {
    const char* env = std::getenv("HSM_KERNELS");
    const int c = env && *env ? cap_of(env) : 2;
    return c < 0 ? 2 : c;
  }();
  return cap;
}
std::atomic<int> level_cap{2};
int level() {
  return std::min({detected_level(), env_cap(), level_cap.load(std::memory_order_relaxed)});
}
bool have_avx2() { return level() >= 1; }
bool have_avx512() { return level() >= 2; }
#else
int level() { return 0; }
bool have_avx2() { return false; }
#endif

}  // namespace

void matvec(const float* W, const float* x, const float* bias, float* y, int64_t out, int64_t in) {
#ifdef HSM_FAST_X86
  if (have_avx512()) return matvec_avx512(W, x, bias, y, out, in);
  if (have_avx2()) return matvec_avx2(W, x, bias, y, out, in);
#endif
  matvec_generic(W, x, bias, y, out, in);
}

void matvec_f16(const uint16_t* W, const float* x, const float* bias, float* y, int64_t out, int64_t in) {
#ifdef HSM_FAST_X86
  if (have_avx512()) return matvec_avx512(W, x, bias, y, out, in);
  if (have_avx2()) return matvec_avx2(W, x, bias, y, out, in);
#endif
  matvec_generic(W, x, bias, y, out, in);
}

uint16_t to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds past the largest half
  if (abs < 0x38800000u) {  // subnormal half (or zero): scale into the 10-bit field, round to even
    float a;
    std::memcpy(&a, &abs, 4);
    const float scaled = a * 16777216.0f;  // 2^24: one unit = the smallest subnormal half
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(scaled)));
  }
  const uint32_t mant_round = abs + 0x0fffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
  return static_cast<uint16_t>(sign | ((mant_round - 0x38000000u) >> 13));
}

float from_half(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    const float v = static_cast<float>(mant) / 16777216.0f;  // subnormal: mant · 2^-24
    std::memcpy(&bits, &v, 4);
    bits |= sign;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float dot(const float* a, const float* b, int64_t n) {
#ifdef HSM_FAST_X86
  if (have_avx2()) return dot_avx2(a, b, n);
#endif
  return dot_generic(a, b, n);
}

void layer_norm(const float* x, const float* gain, const float* shift, float* y, int64_t n, float eps) {
  double mean = 0, var = 0;
  for (int64_t i = 0; i < n; ++i) mean += x[i];
  mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= static_cast<double>(n);
  const auto inv = static_cast<float>(1.0 / std::sqrt(var + eps));
  const auto m = static_cast<float>(mean);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) * inv * gain[i] + shift[i];
}

void gelu(float* x, int64_t n) { gelu_rows(x, x, n); }

void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void softmax(float* x, int64_t n) {
  const float mx = *std::max_element(x, x + n);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - mx));
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void cross_entropy_rows(const float* x, const int64_t* targets, int64_t rows, int64_t n, double* loss_sum,
                        int64_t* correct) {
  double loss = 0;
  int64_t right = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    int64_t best;
    float sum;
#ifdef HSM_FAST_X86
    if (have_avx512()) {
      best = argmax_avx2(row, n);
      sum = sum_exp_avx512(const_cast<float*>(row), n, row[best], false);  // reads only
    } else if (have_avx2()) {
      best = argmax_avx2(row, n);
      sum = sum_exp_avx2(row, n, row[best]);
    } else
#endif
    {
      best = std::max_element(row, row + n) - row;  // the first maximum, as argmax
      double total = 0;  // in double, as above
      for (int64_t i = 0; i < n; ++i) total += std::exp(row[i] - row[best]);
      sum = static_cast<float>(total);
    }
    loss += static_cast<double>(std::log(sum)) + row[best] - row[targets[r]];
    right += best == targets[r] ? 1 : 0;
  }
  *loss_sum += loss;
  *correct += right;
}

double softmax_xent_grad_rows(float* x, const int64_t* targets, int64_t rows, int64_t n) {
  double loss = 0;
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * n;
    const int64_t target = targets[r];
    const float target_logit = row[target];
    float mx, sum;
#ifdef HSM_FAST_X86
    if (have_avx2()) {
      mx = row[argmax_avx2(row, n)];
      sum = have_avx512() ? sum_exp_avx512(row, n, mx, true) : exp_store_avx2(row, n, mx);
      scale_avx2(row, n, 1.0f / sum);
    } else
#endif
    {  // summed in double: 5000 terms one after another in float drift by ~1e-5
      mx = *std::max_element(row, row + n);
      double total = 0;
      for (int64_t i = 0; i < n; ++i) total += (row[i] = std::exp(row[i] - mx));
      sum = static_cast<float>(total);
      const float inv = 1.0f / sum;
      for (int64_t i = 0; i < n; ++i) row[i] *= inv;
    }
    row[target] -= 1.0f;
    loss += static_cast<double>(std::log(sum)) + mx - target_logit;
  }
  return loss;
}

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

void adamw_update(float* p, const float* g, float* m, float* v, int64_t n, float decay, float b1, float b2,
                  float inv_bias2, float eps, float step) {
  const float c1 = 1.0f - b1, c2 = 1.0f - b2;
  // Plain loop: the compiler vectorises it; one pass over p, g, m, v instead of nine.
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = m[i] * b1 + gi * c1;
    const float vi = v[i] * b2 + gi * gi * c2;
    m[i] = mi;
    v[i] = vi;
    p[i] = p[i] * decay - step * mi / (std::sqrt(vi * inv_bias2) + eps);
  }
}

const char* kernel_set() {
  static const char* const names[] = {"generic", "avx2", "avx512"};
  return names[level()];
}

void check_kernels_env() {
  const char* env = std::getenv("HSM_KERNELS");
  if (env && *env && cap_of(env) < 0)
    throw std::invalid_argument("HSM_KERNELS='" + std::string(env) +
                                "' is not a kernel set: use avx512, avx2 or generic (or unset it for the CPU's best)");
}

const char* limit_kernel_set(const std::string& name) {
#ifdef HSM_FAST_X86
  const int cap = cap_of(name);
  if (cap < 0) throw std::invalid_argument("unknown kernel set '" + name + "' (use avx512, avx2 or generic)");
  level_cap.store(cap, std::memory_order_relaxed);
#else
  (void)name;
#endif
  return kernel_set();
}

}  // namespace hsm::fast
