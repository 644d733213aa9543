// The lab table's statistics (hsm/lab_stats.h) against numbers worked by hand or by a different
// computation (direct sums, numerical integration), and the SVG writer's chance line.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hsm/lab_stats.h"
#include "hsm/svg_plot.h"
#include "../stats_by_hand.h"


TEST(LabStats, SeedStatsAreTheMeanAndTheSampleStandardDeviation) {
  const hsm::SeedStats s = hsm::seed_stats({0.2, 0.4, 0.9});
  EXPECT_DOUBLE_EQ(s.mean, 0.5);
  EXPECT_NEAR(s.sd, std::sqrt(0.13), 1e-15);  // (0.09 + 0.01 + 0.16) / (3 - 1)
  EXPECT_EQ(s.n, 3);
  EXPECT_TRUE(std::isnan(hsm::seed_stats({0.7}).sd));  // one seed: no spread to speak of
}

TEST(LabStats, BinomialTailMatchesHandCountedCases) {
  EXPECT_DOUBLE_EQ(hsm::binomial_upper_tail(3, 5, 0.5), 16.0 / 32);                // (10 + 5 + 1) / 2^5
  EXPECT_NEAR(hsm::binomial_upper_tail(2, 4, 0.25), 0.26171875, 1e-15);          // 1 - 0.75^4 - 4 0.25 0.75^3
  EXPECT_NEAR(hsm::binomial_upper_tail(10, 10, 0.5), 1.0 / 1024, 1e-18);
  EXPECT_EQ(hsm::binomial_upper_tail(0, 10, 0.1), 1.0);
  EXPECT_EQ(hsm::binomial_upper_tail(11, 10, 0.1), 0.0);
  // A lab's size: 10,240 answers at chance 1/128, against a direct sum of every term.
  const int64_t n = 10240;
  const double p = 1.0 / 128;
  for (int64_t k : {60, 80, 100, 130}) {
    const double direct = binomial_tail_by_sum(k, n, p);
    EXPECT_NEAR(hsm::binomial_upper_tail(k, n, p), direct, 1e-9 * direct + 1e-15)
        << k;
  }
}

TEST(LabStats, StudentTTailMatchesClosedFormsAndIntegration) {
  EXPECT_NEAR(hsm::student_t_upper_tail(1, 1), 0.25, 1e-12);  // Cauchy: 1/2 - atan(t)/pi
  EXPECT_NEAR(hsm::student_t_upper_tail(2, 2), 0.5 - 1 / std::sqrt(6.0), 1e-12);  // 1/2 - t / (2 sqrt(2 + t^2))
  EXPECT_NEAR(hsm::student_t_upper_tail(-2, 2), 0.5 + 1 / std::sqrt(6.0), 1e-12);
  EXPECT_NEAR(hsm::student_t_upper_tail(3.1305, 1.4706), t_tail_by_integration(3.1305, 1.4706), 1e-7);
}

TEST(LabStats, WelchAndTwoProportionTestsMatchHandComputation) {
  // a {0.9, 1.0}, b {0.5, 0.7}: means 0.95 and 0.6, s^2/n 0.0025 and 0.01, t = 0.35 / sqrt(0.0125)
  // = 3.1305, Welch-Satterthwaite df = 0.0125^2 / (0.0025^2 + 0.01^2) = 1.4706.
  const double t = 0.35 / std::sqrt(0.0125), df = 0.0125 * 0.0125 / (0.0025 * 0.0025 + 0.01 * 0.01);
  EXPECT_NEAR(hsm::welch_p_greater({0.9, 1.0}, {0.5, 0.7}), t_tail_by_integration(t, df), 1e-7);
  EXPECT_NEAR(hsm::welch_p_greater({0.5, 0.7}, {0.9, 1.0}), 1 - t_tail_by_integration(t, df), 1e-7);
  EXPECT_EQ(hsm::welch_p_greater({1, 1}, {1, 1}), 0.5);  // no spread, equal: nothing tells them apart
  EXPECT_EQ(hsm::welch_p_greater({1, 1}, {0.5, 0.5}), 0);
  // 60/100 against 40/100: pooled 0.5, z = 0.2 / sqrt(0.25 x 0.02) = 2 sqrt 2, P(Z > z) = erfc(2) / 2.
  EXPECT_NEAR(hsm::two_proportion_p_greater(60, 100, 40, 100), 0.0023388674905236, 1e-12);
  EXPECT_EQ(hsm::two_proportion_p_greater(0, 50, 0, 80), 0.5);
}

TEST(SvgPlot, ChanceLineAndBarsAreDrawnWithEscapedText) {
  hsm::SvgPanel p;
  p.title = "mqar <8 pairs>";
  p.categories = {"gpt", "hsm_ab"};
  hsm::SvgSeries s;
  s.y = {0.9, 0.1};
  s.err = {0.05, NAN};
  p.series = {s};
  p.lines = {{0.25, "chance 0.25"}};
  const std::string svg = hsm::svg_figure("t & u", {p});
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("mqar &lt;8 pairs&gt;"), std::string::npos);
  EXPECT_NE(svg.find("t &amp; u"), std::string::npos);
  EXPECT_NE(svg.find("class=\"ref\""), std::string::npos);  // the chance line
  EXPECT_NE(svg.find("chance 0.25"), std::string::npos);
  EXPECT_EQ(svg.find("<script"), std::string::npos);
}

// Not converged (issue 68): how a run ended, read from synthetic validations. Each case is the
// stall rule or the slope worked by hand.
TEST(LabStats, ARunThatStalledBelowItsStopAccuracyIsNotConvergedWithTheStallLine) {
  // Validations every 100 steps to step 800 of 2,000; the loss 3.51 at step 300 and at best 3.47 by
  // step 800: (3.51 - 3.47) / 3.51 = 1.14 % < 3 %, so the stall rule ended it at 800.
  std::vector<hsm::RunValidation> v;
  for (int64_t s = 100; s <= 800; s += 100) v.push_back({s, s <= 300 ? 3.6 - 0.03 * (s / 100) : 3.51 - (s - 300) * 0.00008, 0.10});
  v[7].answer_accuracy = 0.102;
  const hsm::RunConvergence c = hsm::run_convergence(v, 2000, 0.99, 500, 0.03);
  EXPECT_EQ(c.state, "stalled");
  EXPECT_TRUE(c.not_converged());
  EXPECT_EQ(c.last_step, 800);
  EXPECT_NE(c.evidence.find("stall rule at step 800 of 2000"), std::string::npos) << c.evidence;
  EXPECT_NE(c.evidence.find("by step 300 (3.51)"), std::string::npos) << c.evidence;
  EXPECT_NE(c.evidence.find("1.14 %"), std::string::npos) << c.evidence;  // (3.51 - 3.47) / 3.51
  // The slope over the last 500 steps (300 -> 800): +0.002 accuracy, +0.004 per 1,000 steps.
  EXPECT_NEAR(c.last_slope, 0.002 * 1000 / 500, 1e-12);
  // The same validations with the run having reached its stop accuracy at 800: done, converged.
  v[7].answer_accuracy = 0.995;
  EXPECT_EQ(hsm::run_convergence(v, 2000, 0.99, 500, 0.03).state, "converged");
}

TEST(LabStats, ARunStillRisingAtTheEndOfItsStepsIsNotConvergedAndAFlatOneIs) {
  // 1,000 steps, no stall rule: the window is a quarter, 250 steps; validations every 250.
  std::vector<hsm::RunValidation> rising = {{250, 2.0, 0.20}, {500, 1.8, 0.30}, {750, 1.5, 0.45}, {1000, 1.2, 0.62}};
  const hsm::RunConvergence r = hsm::run_convergence(rising, 1000, 0, 0, 0.03);
  EXPECT_EQ(r.state, "rising");
  EXPECT_NEAR(r.last_slope, (0.62 - 0.45) * 1000 / 250, 1e-9);
  EXPECT_NE(r.evidence.find("+0.170 over steps 750–1000"), std::string::npos) << r.evidence;
  // Flat at the end (gained 0.01 < kRisingGain over the last window): converged, at this budget.
  std::vector<hsm::RunValidation> flat = {{250, 2.0, 0.20}, {500, 1.8, 0.36}, {750, 1.79, 0.37}, {1000, 1.79, 0.38}};
  EXPECT_EQ(hsm::run_convergence(flat, 1000, 0, 0, 0.03).state, "converged");
  // Rising but at 0.99 or above (no stop accuracy: Zoology's 0.99): solved, converged.
  rising.back().answer_accuracy = 0.995;
  EXPECT_EQ(hsm::run_convergence(rising, 1000, 0, 0, 0.03).state, "converged");
  // A run that ended before its steps without the stall rule's condition, or with no validations:
  // nothing to say.
  EXPECT_EQ(hsm::run_convergence({{250, 2.0, 0.2}, {500, 1.0, 0.4}}, 1000, 0.99, 200, 0.03).state, "unknown");
  EXPECT_EQ(hsm::run_convergence({}, 1000, 0.99, 500, 0.03).state, "unknown");
}
