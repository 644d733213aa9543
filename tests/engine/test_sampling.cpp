// Token choice: temperature, top-k, top-p, seeds.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "hsm/sampling.h"

using namespace hsm;

namespace {
const std::vector<float> kLogits = {2.0f, 1.0f, 0.5f, 0.0f, -1.0f, -3.0f};  // most likely: 0, 1, 2, ...

std::map<int32_t, int> histogram(SampleSettings s, int draws) {
  s.seed = 42;
  Sampler sampler(s);
  std::map<int32_t, int> h;
  for (int i = 0; i < draws; ++i) ++h[sampler.sample(kLogits.data(), kLogits.size()).id];
  return h;
}
}  // namespace

TEST(Sampling, GreedyAtTemperatureZero) {
  SampleSettings s;
  s.temperature = 0;
  const auto h = histogram(s, 50);
  ASSERT_EQ(h.size(), 1u);
  EXPECT_EQ(h.begin()->first, 0);
}

TEST(Sampling, TopKKeepsOnlyTheKMostLikely) {
  SampleSettings s;
  s.temperature = 5.0;  // flat: every token would show up without top-k
  s.top_p = 1.0;
  s.top_k = 2;
  const auto h = histogram(s, 2000);
  EXPECT_EQ(h.size(), 2u);
  EXPECT_TRUE(h.count(0) && h.count(1));
}

TEST(Sampling, TopPKeepsTheSmallestNucleus) {
  // probabilities at T=1: 0.561, 0.206, 0.125, 0.076, ... -> p=0.75 needs tokens 0 and 1
  SampleSettings s;
  s.temperature = 1.0;
  s.top_p = 0.75;
  auto h = histogram(s, 3000);
  EXPECT_EQ(h.size(), 2u);
  s.top_p = 0.5;  // token 0 alone already holds 0.56
  h = histogram(s, 200);
  EXPECT_EQ(h.size(), 1u);
  s.top_p = 1.0;
  h = histogram(s, 5000);
  EXPECT_EQ(h.size(), kLogits.size());
}

TEST(Sampling, FrequenciesFollowTheDistribution) {
  SampleSettings s;
  s.temperature = 1.0;
  s.top_p = 1.0;
  const int n = 20000;
  const auto h = histogram(s, n);
  double z = 0;
  for (float l : kLogits) z += std::exp(l);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(h.at(i) / double(n), std::exp(kLogits[i]) / z, 0.015) << i;
}

TEST(Sampling, ReproducibleWithASeed) {
  SampleSettings s;
  s.seed = 7;
  s.top_p = 1.0;
  Sampler a(s), b(s);
  s.seed = 8;
  Sampler c(s);
  std::vector<int32_t> ra, rb, rc;
  for (int i = 0; i < 100; ++i) {
    ra.push_back(a.sample(kLogits.data(), kLogits.size()).id);
    rb.push_back(b.sample(kLogits.data(), kLogits.size()).id);
    rc.push_back(c.sample(kLogits.data(), kLogits.size()).id);
  }
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
  EXPECT_EQ(a.seed(), 7u);
}

TEST(Sampling, ReportsProbabilitiesAndAlternatives) {
  SampleSettings s;
  s.temperature = 1.0;
  s.seed = 3;
  Sampler sampler(s, 3);
  const auto t = sampler.sample(kLogits.data(), kLogits.size());
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].id, 0);
  EXPECT_EQ(t.top[1].id, 1);
  double z = 0;
  for (float l : kLogits) z += std::exp(l);
  EXPECT_NEAR(t.top[0].prob, std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(t.prob, std::exp(kLogits[t.id]) / z, 1e-6);
}

TEST(Sampling, RejectsBadSettings) {
  SampleSettings s;
  s.top_p = 0;
  EXPECT_THROW(Sampler{s}, std::invalid_argument);
  s = {};
  s.temperature = -1;
  EXPECT_THROW(Sampler{s}, std::invalid_argument);
  s = {};
  s.top_k = -2;
  EXPECT_THROW(Sampler{s}, std::invalid_argument);
}
