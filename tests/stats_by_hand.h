#pragma once
// Statistics computed the long way, for the tests of the lab's table (hsm/lab_stats.h): nothing
// here shares code or method with the engine's (which uses the incomplete beta function and a
// recurrence): a binomial tail summed term by term from the definition, and Student's t tail by
// integrating its density.
#include <cmath>
#include <cstdint>

// P(X >= k), X ~ Binomial(n, p): every term from its factorials, in long double.
inline double binomial_tail_by_sum(int64_t k, int64_t n, double p) {
  long double sum = 0;
  for (int64_t i = k; i <= n; ++i)
    sum += std::exp(static_cast<long double>(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0)) +
                    i * std::log(static_cast<long double>(p)) + (n - i) * std::log1p(-static_cast<long double>(p)));
  return static_cast<double>(sum);
}

// P(T > t) for Student's t with df degrees of freedom (t > 0): Simpson's rule on its density
// from 0 to t.
inline double t_tail_by_integration(double t, double df) {
  const double c = std::exp(std::lgamma((df + 1) / 2) - std::lgamma(df / 2)) / std::sqrt(df * M_PI);
  auto f = [&](double x) { return c * std::pow(1 + x * x / df, -(df + 1) / 2); };
  const int n = 200000;
  const double h = t / n;
  double s = f(0) + f(t);
  for (int i = 1; i < n; ++i) s += f(i * h) * (i % 2 ? 4 : 2);
  return 0.5 - s * h / 3;
}
