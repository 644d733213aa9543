// The lab table's statistics (hsm/lab_stats.h), from their textbook definitions.
#include "hsm/lab_stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace hsm {

SeedStats seed_stats(const std::vector<double>& values) {
  SeedStats s;
  s.n = static_cast<int64_t>(values.size());
  if (values.empty()) {
    s.mean = s.sd = NAN;
    return s;
  }
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(s.n);
  if (s.n < 2) {
    s.sd = NAN;
    return s;
  }
  double ss = 0;
  for (double v : values) ss += (v - s.mean) * (v - s.mean);
  s.sd = std::sqrt(ss / static_cast<double>(s.n - 1));
  return s;
}

double binomial_upper_tail(int64_t k, int64_t n, double p) {
  if (n < 0 || p < 0 || p > 1) throw std::invalid_argument("binomial_upper_tail: n >= 0 and p in [0, 1]");
  if (k <= 0) return 1;
  if (k > n) return 0;
  if (p == 0) return 0;
  if (p == 1) return 1;
  // P(X = i) from its logarithm at i = k, then term by term upwards: P(i+1) = P(i) (n-i)/(i+1) p/(1-p).
  const double ratio = p / (1 - p);
  double term = std::exp(std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
                         std::lgamma(static_cast<double>(n - k) + 1) + static_cast<double>(k) * std::log(p) +
                         static_cast<double>(n - k) * std::log1p(-p));
  double sum = 0;
  for (int64_t i = k; i <= n; ++i) {
    sum += term;
    if (static_cast<double>(i) > static_cast<double>(n) * p && term < sum * 1e-17) break;  // past the mode: the rest is below rounding
    term *= static_cast<double>(n - i) / static_cast<double>(i + 1) * ratio;
  }
  return std::min(1.0, sum);
}

double normal_upper_tail(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

namespace {

// The continued fraction of the incomplete beta function (modified Lentz).
double beta_fraction(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-15) break;
  }
  return h;
}

}  // namespace

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

double student_t_upper_tail(double t, double df) {
  if (!(df > 0)) throw std::invalid_argument("student_t_upper_tail: df > 0");
  if (std::isinf(t)) return t > 0 ? 0 : 1;
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));  // P(T > |t|)
  return t >= 0 ? tail : 1 - tail;
}

double welch_p_greater(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() < 2 || b.size() < 2) throw std::invalid_argument("welch_p_greater: two values or more in each");
  const SeedStats sa = seed_stats(a), sb = seed_stats(b);
  const double va = sa.sd * sa.sd / static_cast<double>(sa.n), vb = sb.sd * sb.sd / static_cast<double>(sb.n);
  const double se2 = va + vb;
  if (se2 == 0) return sa.mean > sb.mean ? 0 : sa.mean < sb.mean ? 1 : 0.5;
  const double t = (sa.mean - sb.mean) / std::sqrt(se2);
  // Welch–Satterthwaite degrees of freedom.
  const double df = se2 * se2 / (va * va / static_cast<double>(sa.n - 1) + vb * vb / static_cast<double>(sb.n - 1));
  return student_t_upper_tail(t, df);
}

double two_proportion_p_greater(int64_t k1, int64_t n1, int64_t k2, int64_t n2) {
  if (n1 <= 0 || n2 <= 0) throw std::invalid_argument("two_proportion_p_greater: n1, n2 > 0");
  const double p1 = static_cast<double>(k1) / static_cast<double>(n1), p2 = static_cast<double>(k2) / static_cast<double>(n2);
  const double pooled = static_cast<double>(k1 + k2) / static_cast<double>(n1 + n2);
  const double se2 = pooled * (1 - pooled) * (1.0 / static_cast<double>(n1) + 1.0 / static_cast<double>(n2));
  if (se2 <= 0) return 0.5;
  return normal_upper_tail((p1 - p2) / std::sqrt(se2));
}

}  // namespace hsm
