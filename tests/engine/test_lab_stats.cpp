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
