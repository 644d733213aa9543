// Softmax over one vector (the decoder's attention) and the output layer's loss: the
// cross-entropy rows of evaluation and the fused loss + gradient of training (fast_kernels.h).
#include <algorithm>
#include <cmath>

#include "kernels/fast_kernels.h"
#include "kernels/kernel_set.h"
#include "kernels/token_scores_rows.h"
#include "kernels/simd_math.h"

namespace hsm::fast {
namespace {

using detail::have_avx2;
using detail::have_avx512;

#ifdef HSM_FAST_X86
using detail::exp_avx2;
using detail::exp_avx512;
using detail::hsum;
using detail::tail_mask;

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

HSM_AVX512_CODE_BEGIN

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

HSM_AVX512_CODE_END
#endif

}  // namespace

void softmax(float* x, int64_t n) {
  const float mx = *std::max_element(x, x + n);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += (x[i] = std::exp(x[i] - mx));
  const float inv = 1.0f / sum;
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void cross_entropy_rows(const float* x, const int64_t* targets, int64_t rows, int64_t n, double* loss_sum,
                        int64_t* correct, double* row_loss, int32_t* row_rank) {
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
    const double term = static_cast<double>(std::log(sum)) + row[best] - row[targets[r]];
    loss += term;
    right += best == targets[r] ? 1 : 0;
    if (row_loss) row_loss[r] = term;
    if (row_rank) {
      const int64_t target = targets[r];
      const float logit = row[target];
      int32_t above = 0;
      for (int64_t i = 0; i < target; ++i) above += row[i] >= logit ? 1 : 0;
      for (int64_t i = target + 1; i < n; ++i) above += row[i] > logit ? 1 : 0;
      row_rank[r] = above + 1;
    }
  }
  *loss_sum += loss;
  *correct += right;
}

void cross_entropy_rows(const float* x, const int64_t* targets, int64_t rows, int64_t n, double* loss_sum,
                        int64_t* correct) {
  cross_entropy_rows(x, targets, rows, n, loss_sum, correct, nullptr, nullptr);
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

}  // namespace hsm::fast
