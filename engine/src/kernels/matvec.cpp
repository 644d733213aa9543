// The batch-1 decoder's products (fast_kernels.h): matrix-vector with fp32 or half weights,
// dot, axpy, and LayerNorm over one vector; the half conversions its weights are kept in.
#include <cmath>
#include <cstring>

#include "kernels/fast_kernels.h"
#include "kernels/kernel_set.h"
#include "kernels/simd_math.h"

namespace hsm::fast {
namespace {

using detail::have_avx2;
using detail::have_avx512;

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
using detail::hsum;
using detail::tail_mask;

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

__attribute__((target("avx2,fma"))) float dot_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
  float s = hsum(acc);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

HSM_AVX512_CODE_BEGIN

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

HSM_AVX512_CODE_END
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

void axpy(float alpha, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
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

}  // namespace hsm::fast
