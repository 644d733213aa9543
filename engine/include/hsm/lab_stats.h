#pragma once
// The statistics of the lab's table (docs/lab.md, "The protocol"): the mean and sample standard
// deviation over seeds, and the three tests that mark a cell — a one-sided exact binomial test
// against the task's chance rate ("at chance"), and Welch's t-test over seeds or, when a cell has
// fewer than two seeds, a two-proportion z-test on the pooled test answers ("tied with the row's
// best"). Written from their textbook definitions, no statistics library. Plain C++.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace hsm {

struct SeedStats {
  double mean = 0, sd = 0;  // sd: the sample standard deviation (n - 1); NaN when n < 2
  int64_t n = 0;
};
SeedStats seed_stats(const std::vector<double>& values);

// P(X >= k) for X ~ Binomial(n, p): the one-sided p-value of k successes against rate p.
double binomial_upper_tail(int64_t k, int64_t n, double p);
// P(Z > z) for a standard normal Z.
double normal_upper_tail(double z);
// P(T > t) for Student's t with df > 0 degrees of freedom (df need not be whole).
double student_t_upper_tail(double t, double df);
// The regularized incomplete beta function I_x(a, b) (continued fraction, Numerical Recipes §6.4).
double incomplete_beta(double a, double b, double x);

// Welch's t-test, one-sided: the p-value of "mean(a) > mean(b)" (each at least 2 values). Two
// samples with no spread: 0 when mean(a) > mean(b), 1 when below, 0.5 when equal.
double welch_p_greater(const std::vector<double>& a, const std::vector<double>& b);
// The two-proportion z-test (pooled), one-sided: the p-value of "k1/n1 > k2/n2". 0.5 when the
// pooled rate is 0 or 1 (nothing tells the two apart).
double two_proportion_p_greater(int64_t k1, int64_t n1, int64_t k2, int64_t n2);

// The lab's levels: a cell is "at chance" when the binomial test's p-value is at least
// kChanceAlpha / (learning rates of the grid) (Bonferroni: the cell is the best of that many), and
// "tied with the row's best" when the test of "best > cell" has a p-value of at least kTieAlpha.
inline constexpr double kChanceAlpha = 0.01;
inline constexpr double kTieAlpha = 0.05;

// ---- Not converged (issue 68; docs/lab.md, "Not converged"): a run whose training did not settle
// what it can do. A cell with such a run at its best setting is marked so, and the report draws
// no capability claim from it.

// A validation of a run (an "eval" record of its metrics.jsonl).
struct RunValidation {
  int64_t step = 0;
  double loss = NAN, answer_accuracy = NAN;
};

// How a run's training ended, read from its validations and the settings it trained under.
struct RunConvergence {
  // "converged": reached its stop accuracy (or 0.99 without one), or ran all its steps with its
  //   validation answer accuracy flat;
  // "stalled": ended before its steps by the stall rule, below that accuracy: on a plateau;
  // "rising": ran all its steps with its validation answer accuracy still rising (by at least
  //   kRisingGain over the last window);
  // "unknown": no validations to read (a run folder without metrics.jsonl).
  std::string state = "unknown";
  int64_t last_step = 0;    // the last validation's step
  double last_accuracy = NAN;
  // Validation answer accuracy gained over the last window (the stall rule's steps, else a quarter
  // of the run), per 1,000 steps.
  double last_slope = NAN;
  std::string evidence;     // the stall line or the last slope, in words; "" when converged
  bool not_converged() const { return state == "stalled" || state == "rising"; }
};
inline constexpr double kRisingGain = 0.02;
// The accuracy at which a run counts as done without a stop accuracy (Zoology's 0.99).
inline constexpr double kSolvedAccuracy = 0.99;
RunConvergence run_convergence(const std::vector<RunValidation>& validations, int64_t total_steps,
                               double stop_accuracy, int64_t stall_steps, double stall_gain);

}  // namespace hsm
