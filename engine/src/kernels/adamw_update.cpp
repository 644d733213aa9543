// One AdamW update over a tensor's values in one pass (fast_kernels.h; train/adamw.cpp).
#include <cmath>

#include "kernels/fast_kernels.h"

namespace hsm::fast {

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

}  // namespace hsm::fast
