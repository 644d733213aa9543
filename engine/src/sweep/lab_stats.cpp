// The lab table's statistics (hsm/lab_stats.h), from their textbook definitions.
#include "hsm/lab_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
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

namespace {

std::string conv_number(double x, const char* format) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

}  // namespace

RunConvergence run_convergence(const std::vector<RunValidation>& validations, int64_t total_steps,
                               double stop_accuracy, int64_t stall_steps, double stall_gain) {
  RunConvergence c;
  std::vector<RunValidation> v;
  for (const RunValidation& x : validations)
    if (std::isfinite(x.answer_accuracy) || std::isfinite(x.loss)) v.push_back(x);
  std::stable_sort(v.begin(), v.end(), [](const RunValidation& a, const RunValidation& b) { return a.step < b.step; });
  if (v.empty()) return c;  // unknown: nothing to read
  const RunValidation& last = v.back();
  c.last_step = last.step;
  c.last_accuracy = last.answer_accuracy;
  // The last window: the stall rule's, else a quarter of the run; its start is the last validation
  // at or before its first step (the run's first validation when none is).
  const int64_t window = stall_steps > 0 ? stall_steps : std::max<int64_t>(1, total_steps / 4);
  const RunValidation* then = &v.front();
  for (const RunValidation& x : v)
    if (x.step <= last.step - window) then = &x;
  const double gained = last.answer_accuracy - then->answer_accuracy;
  if (then->step < last.step && std::isfinite(gained))
    c.last_slope = gained * 1000 / static_cast<double>(last.step - then->step);
  const std::string slope_text =
      std::isfinite(c.last_slope) ? conv_number(gained, "%+.3f") + " over steps " + std::to_string(then->step) + "–" +
                                        std::to_string(last.step) + " (" + conv_number(c.last_slope, "%+.3f") +
                                        " per 1,000 steps)"
                                  : "no earlier validation to compare";
  const double solved = stop_accuracy > 0 ? stop_accuracy : kSolvedAccuracy;
  if (last.answer_accuracy >= solved) {
    c.state = "converged";
    return c;
  }
  if (last.step >= total_steps) {
    if (std::isfinite(gained) && gained >= kRisingGain) {
      c.state = "rising";
      c.evidence = "ran all " + std::to_string(total_steps) + " steps with its validation answer accuracy still rising: " +
                   conv_number(last.answer_accuracy, "%.3f") + " at the end, " + slope_text;
    } else {
      c.state = "converged";
    }
    return c;
  }
  // Ended before its steps, below the accuracy: the stall rule, as the trainer reads it (the best
  // validation loss at or before `last - stall_steps` against the best of all).
  if (stall_steps <= 0) return c;  // no rule that ends it here: unknown
  const int64_t from = last.step - stall_steps;
  double before = INFINITY, now = INFINITY;
  for (const RunValidation& x : v) {
    if (!std::isfinite(x.loss)) continue;
    if (x.step <= from) before = std::min(before, x.loss);
    now = std::min(now, x.loss);
  }
  if (!std::isfinite(before) || !(before > 0)) return c;
  const double gain = (before - now) / before;
  if (gain >= stall_gain) return c;
  c.state = "stalled";
  c.evidence = "stopped by the stall rule at step " + std::to_string(last.step) + " of " + std::to_string(total_steps) +
               " on a plateau: best validation loss " + conv_number(now, "%.4g") + ", " + conv_number(100 * gain, "%.2f") +
               " % below its best by step " + std::to_string(from) + " (" + conv_number(before, "%.4g") +
               "), less than " + conv_number(100 * stall_gain, "%g") + " %; validation answer accuracy " +
               conv_number(last.answer_accuracy, "%.3f") + ", " + slope_text;
  return c;
}

}  // namespace hsm
