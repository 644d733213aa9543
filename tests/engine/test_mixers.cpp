// Every mixer: shape, strict causality, forward + backward; exact formulas on hand-set
// weights; per-head shifts of the multihead variants.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "hsm/mixer_kind.h"
#include "model/mixers/attention.h"
#include "model/mixers/shift.h"

using namespace hsm;

namespace {

constexpr int64_t kD = 16, kT = 20, kB = 2;

std::shared_ptr<MixerImpl> build(const std::string& id, int64_t layer) {
  LayerSpec spec{id, 32, mixer_info(id).multi_head ? 4 : 1};
  auto m = make_mixer(spec, layer, kD, 0.0);
  m->to(torch::kFloat64);
  m->eval();
  return m;
}

class EveryMixer : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(EveryMixer, ShapeIsPreserved) {
  torch::manual_seed(0);
  auto m = build(GetParam(), 1);
  auto x = torch::randn({kB, kT, kD}, torch::kFloat64);
  EXPECT_EQ(m->forward(x).sizes(), x.sizes());
}

TEST_P(EveryMixer, StrictlyCausal) {
  torch::manual_seed(1);
  for (int64_t layer : {0, 2}) {
    auto m = build(GetParam(), layer);
    auto x = torch::randn({1, kT, kD}, torch::kFloat64);
    auto y = m->forward(x);
    for (int64_t j : {int64_t{0}, int64_t{5}, kT - 1}) {
      auto x2 = x.clone();
      x2.index_put_({0, j}, torch::randn({kD}, torch::kFloat64));
      auto y2 = m->forward(x2);
      if (j > 0) EXPECT_TRUE(torch::equal(y.narrow(1, 0, j), y2.narrow(1, 0, j))) << GetParam() << " j=" << j;
      EXPECT_FALSE(torch::allclose(y.select(1, j), y2.select(1, j))) << "position j itself must change";
    }
  }
}

TEST_P(EveryMixer, ForwardBackwardReachesEveryParameter) {
  torch::manual_seed(2);
  auto m = build(GetParam(), 1);
  m->train();
  auto x = torch::randn({kB, kT, kD}, torch::kFloat64).requires_grad_(true);
  m->forward(x).pow(2).sum().backward();
  EXPECT_TRUE(x.grad().defined());
  for (const auto& p : m->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << GetParam() << " " << p.key();
  }
}

INSTANTIATE_TEST_SUITE_P(Mixers, EveryMixer,
                         ::testing::Values("attn", "hsm_ab", "hsm_ab_vec", "hsm_AB", "hsm_gate1", "hsm_gate2",
                                           "hsm_fusion", "hsm_ab_mh", "hsm_ab_mh_ext"),
                         [](const auto& info) { return info.param; });

TEST(ShiftRight, MovesTimeAndZeroFills) {
  auto x = torch::arange(1, 7, torch::kFloat64).view({1, 6, 1});
  EXPECT_TRUE(torch::equal(shift_right(x, 2).flatten(), torch::tensor({0., 0., 1., 2., 3., 4.}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(shift_right(x, 0), x));
  EXPECT_TRUE(torch::equal(shift_right(x, 6), torch::zeros_like(x)));
  EXPECT_TRUE(torch::equal(shift_right(x, 9), torch::zeros_like(x)));
}

TEST(Formula, HsmAbIsEquationOne) {
  auto m = std::dynamic_pointer_cast<ShiftABImpl>(build("hsm_ab", 2));  // shift 4
  ASSERT_EQ(m->shift, 4);
  {
    torch::NoGradGuard g;
    m->a.fill_(-0.3847);
    m->b.fill_(3.3964);
  }
  auto x = torch::randn({kB, kT, kD}, torch::kFloat64);
  auto y = m->forward(x);
  for (int64_t t = 0; t < kT; ++t) {
    auto expect = -0.3847 * x.select(1, t) + (t >= 4 ? 3.3964 * x.select(1, t - 4) : torch::zeros_like(x.select(1, t)));
    EXPECT_TRUE(torch::allclose(y.select(1, t), expect, 1e-12, 1e-12)) << "t=" << t;
  }
}

TEST(Formula, HsmAbVectorIsEquationTwo) {
  auto m = std::dynamic_pointer_cast<ShiftABVectorImpl>(build("hsm_ab_vec", 1));  // shift 2
  auto a = torch::randn({kD}, torch::kFloat64), b = torch::randn({kD}, torch::kFloat64);
  {
    torch::NoGradGuard g;
    m->a.copy_(a);
    m->b.copy_(b);
  }
  auto x = torch::randn({kB, kT, kD}, torch::kFloat64);
  auto y = m->forward(x);
  for (int64_t t = 0; t < kT; ++t)
    for (int64_t c = 0; c < kD; ++c) {
      double expect = a[c].item<double>() * x[1][t][c].item<double>() +
                      (t >= 2 ? b[c].item<double>() * x[1][t - 2][c].item<double>() : 0.0);
      EXPECT_NEAR(y[1][t][c].item<double>(), expect, 1e-12);
    }
}

TEST(Formula, HsmABMatrixIsEquationThreeThenProjection) {
  auto m = std::dynamic_pointer_cast<ShiftABMatrixImpl>(build("hsm_AB", 0));
  {
    torch::NoGradGuard g;
    m->bias.normal_();
    m->proj->bias.normal_();
  }
  auto x = torch::randn({1, kT, kD}, torch::kFloat64);
  auto y = m->forward(x);
  auto A = m->A->weight, B = m->B->weight, W = m->proj->weight;
  for (int64_t t : {0, 1, 7}) {
    auto xs = t >= 1 ? x[0][t - 1] : torch::zeros({kD}, torch::kFloat64);
    auto u = torch::mv(A, x[0][t]) + torch::mv(B, xs) + m->bias;
    EXPECT_TRUE(torch::allclose(y[0][t], torch::mv(W, u) + m->proj->bias, 1e-10, 1e-10));
  }
}

TEST(Formula, Gate1IsEquationFour) {
  auto m = std::dynamic_pointer_cast<ShiftGate1Impl>(build("hsm_gate1", 1));
  {
    torch::NoGradGuard g;
    for (auto& p : m->parameters()) p.normal_();
  }
  auto x = torch::randn({1, kT, kD}, torch::kFloat64);
  auto y = m->forward(x);
  for (int64_t t : {0, 3, 9}) {
    auto g = torch::tanh(m->fc2->forward(torch::relu(m->fc1->forward(x[0][t]))));
    auto xs = t >= 2 ? x[0][t - 2] : torch::zeros({kD}, torch::kFloat64);
    EXPECT_TRUE(torch::allclose(y[0][t], g * x[0][t] + (1 - g) * xs, 1e-10, 1e-10));
  }
}

TEST(Formula, Gate2AndFusionWorkPerHead) {
  auto gate = std::dynamic_pointer_cast<ShiftGate2Impl>(build("hsm_gate2", 0));
  auto fusion = std::dynamic_pointer_cast<ShiftFusionImpl>(build("hsm_fusion", 0));
  {
    torch::NoGradGuard g;
    for (auto& p : gate->parameters()) p.normal_();
    for (auto& p : fusion->parameters()) p.normal_();
  }
  const int64_t hd = kD / 4;
  auto x = torch::randn({1, kT, kD}, torch::kFloat64);
  auto yg = gate->forward(x), yf = fusion->forward(x);
  for (int64_t t : {0, 4}) {
    for (int64_t h = 0; h < 4; ++h) {
      auto xh = x[0][t].narrow(0, h * hd, hd);
      auto xsh = t >= 1 ? x[0][t - 1].narrow(0, h * hd, hd) : torch::zeros({hd}, torch::kFloat64);
      auto both = torch::cat({xh, xsh});
      auto g = torch::tanh(torch::mv(gate->weight[h], both) + gate->bias[h]);
      EXPECT_TRUE(torch::allclose(yg[0][t].narrow(0, h * hd, hd), g * xh + (1 - g) * xsh, 1e-10, 1e-10));
      auto hidden = torch::relu(torch::mv(fusion->w1[h], both) + fusion->b1[h]);
      EXPECT_TRUE(torch::allclose(yf[0][t].narrow(0, h * hd, hd), torch::mv(fusion->w2[h], hidden) + fusion->b2[h],
                                  1e-10, 1e-10));
    }
  }
}

TEST(Multihead, EachHeadUsesItsOwnShift) {
  const int64_t H = 4, hd = kD / H;
  for (const char* id : {"hsm_ab_mh", "hsm_ab_mh_ext"}) {
    for (int64_t layer : {0, 1, 3}) {
      auto m = std::dynamic_pointer_cast<ShiftABMultiheadImpl>(build(id, layer));
      auto a = torch::randn({H}, torch::kFloat64), b = torch::randn({H}, torch::kFloat64);
      {
        torch::NoGradGuard g;
        m->a.copy_(a);
        m->b.copy_(b);
      }
      auto x = torch::randn({1, kT, kD}, torch::kFloat64);
      auto y = m->forward(x);
      for (int64_t j = 0; j < H; ++j) {
        const int64_t s = std::string(id) == "hsm_ab_mh" ? (int64_t{1} << j) : (int64_t{1} << ((j + layer) % H));
        EXPECT_EQ(m->shifts[j], s);
        for (int64_t t = 0; t < kT; ++t) {
          auto xs = t >= s ? x[0][t - s].narrow(0, j * hd, hd) : torch::zeros({hd}, torch::kFloat64);
          auto expect = a[j] * x[0][t].narrow(0, j * hd, hd) + b[j] * xs;
          EXPECT_TRUE(torch::allclose(y[0][t].narrow(0, j * hd, hd), expect, 1e-12, 1e-12))
              << id << " layer " << layer << " head " << j << " t " << t;
        }
      }
    }
  }
}

TEST(Attention, MatchesExplicitSoftmax) {
  auto m = std::dynamic_pointer_cast<AttentionImpl>(build("attn", 0));
  auto x = torch::randn({1, kT, kD}, torch::kFloat64);
  auto w = m->attention_weights(x);  // [1, H, T, T]
  EXPECT_TRUE(torch::allclose(w.sum(-1), torch::ones({1, 4, kT}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(w.triu(1), torch::zeros_like(w)));  // no weight on the future
  auto qkv = m->qkv->forward(x).chunk(3, -1);
  auto v = qkv[2].view({1, kT, 4, 4}).transpose(1, 2);
  auto y = m->proj->forward(torch::matmul(w, v).transpose(1, 2).reshape({1, kT, kD}));
  EXPECT_TRUE(torch::allclose(m->forward(x), y, 1e-10, 1e-10));
}
