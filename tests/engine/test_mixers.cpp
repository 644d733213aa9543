// Every mixer: shape, strict causality, forward + backward; exact formulas on hand-set
// weights; per-head shifts of the multihead variants.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "hsm/mixer_kind.h"
#include "hsm/params.h"
#include "model/dropout.h"
#include "model/mixers/attention.h"
#include "model/mixers/blocked_attention.h"
#include "model/mixers/extractors.h"
#include "model/mixers/gated_mlp.h"
#include "model/mixers/linear_attention.h"
#include "model/mixers/qk_source_attention.h"
#include "model/mixers/shift.h"

using namespace hsm;

namespace {

constexpr int64_t kD = 16, kT = 20, kB = 2;

std::shared_ptr<MixerImpl> build(const std::string& id, int64_t layer) {
  LayerSpec spec{id, 32, mixer_info(id).multi_head ? 4 : 1};
  auto m = make_mixer(spec, layer, kD, 0.0, kT);  // context kT: the extractors' l
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

// The registry's parameter count is the module's, for every registered mixer.
TEST_P(EveryMixer, ParameterCountIsTheRegistrys) {
  auto m = build(GetParam(), 1);
  int64_t n = 0;
  for (const auto& p : m->parameters()) n += p.numel();
  EXPECT_EQ(n, mixer_params(GetParam(), kD, mixer_info(GetParam()).multi_head ? 4 : 1, kT)) << GetParam();
}

// Each mixer owns its decoding state's type (make_state, issue 35): a shift layer's ring, an
// attention layer's keys and values, and so on, never fields of a catch-all struct. Its own
// state takes a prefix as forward does; a state of another type is refused, never read.
TEST_P(EveryMixer, DecodesWithAStateOfItsOwnType) {
  torch::manual_seed(3);
  auto m = build(GetParam(), 1);
  const std::unique_ptr<MixerState> state = m->make_state();
  ASSERT_TRUE(state);
  const MixerState* s = state.get();
  const std::string id = GetParam();
  switch (mixer_info(id).family) {
    case MixerFamily::kAttention:
      EXPECT_NE(dynamic_cast<const AttentionState*>(s), nullptr) << id;
      break;
    case MixerFamily::kShift:
      EXPECT_NE(dynamic_cast<const ShiftState*>(s), nullptr) << id;
      break;
    case MixerFamily::kExtractor:
      EXPECT_NE(dynamic_cast<const ExtractorState*>(s), nullptr) << id;
      break;
    case MixerFamily::kDeconstructedAttention:
      EXPECT_TRUE(dynamic_cast<const LinearAttentionState*>(s) || dynamic_cast<const QkSourceState*>(s) ||
                  dynamic_cast<const GatedMlpImpl::State*>(s))
          << id;
      break;
  }
  EXPECT_EQ(dynamic_cast<const AttentionState*>(s) != nullptr, mixer_info(id).family == MixerFamily::kAttention)
      << id << ": only attention keeps attention's keys and values";
  torch::NoGradGuard no_grad;
  auto x = torch::randn({kB, 6, kD}, torch::kFloat64);
  EXPECT_TRUE(torch::allclose(m->prefill(x, *state, kT), m->forward(x), 1e-10, 1e-10)) << id;
  struct Foreign : MixerState {};
  Foreign foreign;
  EXPECT_THROW(m->prefill(x, foreign, kT), std::logic_error) << id;
  EXPECT_THROW(m->step(x.select(1, 0), foreign, 0, kT), std::logic_error) << id;
}

// Every mixer the registry has (hsm/mixer_kind.h): a new one is tested here once registered.
std::vector<std::string> every_mixer_id() {
  std::vector<std::string> ids;
  for (const MixerInfo& m : all_mixers()) ids.push_back(m.id);
  return ids;
}
INSTANTIATE_TEST_SUITE_P(Registry, EveryMixer, ::testing::ValuesIn(every_mixer_id()),
                         [](const auto& info) { return info.param; });

TEST(ShiftRight, MovesTimeAndZeroFills) {
  auto x = torch::arange(1, 7, torch::kFloat64).view({1, 6, 1});
  EXPECT_TRUE(torch::equal(shift_right(x, 2).flatten(), torch::tensor({0., 0., 1., 2., 3., 4.}, torch::kFloat64)));
  EXPECT_TRUE(torch::equal(shift_right(x, 0), x));
  EXPECT_TRUE(torch::equal(shift_right(x, 6), torch::zeros_like(x)));
  EXPECT_TRUE(torch::equal(shift_right(x, 9), torch::zeros_like(x)));
}

// On the CPU in fp32, HSM (a,b) and (a,b) vector run one fused pass each way (shift.cpp): the
// same values and gradients as the formula written with LibTorch operations, for shifts
// inside the sequence and past its end.
TEST(Formula, FusedShiftMixEqualsTheFormulaWithGradients) {
  for (const std::string kind : {"hsm_ab", "hsm_ab_vec"}) {
    for (int64_t layer : {0, 2, 5}) {  // shifts 1, 4, 32 (> T = 20)
      auto m = std::dynamic_pointer_cast<ShiftMixerImpl>(build(kind, layer));
      torch::manual_seed(layer);
      {
        torch::NoGradGuard g;
        for (auto& p : m->parameters()) p.uniform_(-2, 2);
      }
      auto x0 = torch::randn({3, 20, kD}), up = torch::randn({3, 20, kD});
      auto run = [&](bool fused) {
        for (auto& p : m->parameters()) p.mutable_grad() = torch::Tensor();
        auto x = x0.clone().requires_grad_();
        auto y = fused ? m->forward(x) : m->mix(x, m->shifted(x));
        (y * up).sum().backward();
        std::vector<torch::Tensor> out{y.detach(), x.grad()};
        for (auto& p : m->parameters()) out.push_back(p.grad().clone());
        return out;
      };
      const auto ref = run(false), got = run(true);
      ASSERT_EQ(ref.size(), 4U);
      const char* names[] = {"y", "dx", "da", "db"};
      for (size_t i = 0; i < ref.size(); ++i)
        EXPECT_TRUE(torch::allclose(got[i], ref[i], 1e-4, 1e-4))
            << kind << " layer " << layer << " " << names[i] << ": max diff " << (got[i] - ref[i]).abs().max().item<double>();
    }
  }
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

// A context of several attention tiles (torch_compat.cpp picks the blocked path): equal to the
// explicit softmax, gradients included, and cached decoding still agrees.
TEST(Attention, LongContextMatchesExplicitSoftmaxWithGradients) {
  auto m = std::dynamic_pointer_cast<AttentionImpl>(build("attn", 0));
  const int64_t T = 300;
  auto x = torch::randn({2, T, kD}, torch::kFloat64).requires_grad_(true);
  auto x2 = x.detach().clone().requires_grad_(true);
  auto w = m->attention_weights(x2);  // explicit [B, H, T, T]
  auto v = m->qkv->forward(x2).chunk(3, -1)[2].view({2, T, 4, 4}).transpose(1, 2);
  auto y_ref = m->proj->forward(torch::matmul(w, v).transpose(1, 2).reshape({2, T, kD}));
  auto y = m->forward(x);
  EXPECT_TRUE(torch::allclose(y, y_ref, 1e-10, 1e-10));
  auto g = torch::randn_like(y);
  (y * g).sum().backward();
  (y_ref * g).sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), x2.grad(), 1e-9, 1e-9));
  torch::NoGradGuard no_grad;
  auto cache_state = m->make_state();
  MixerState& cache = *cache_state;
  auto prefix = m->prefill(x.narrow(1, 0, 200), cache, T);
  EXPECT_TRUE(torch::allclose(prefix, y.narrow(1, 0, 200), 1e-10, 1e-10));
  for (int64_t pos = 200; pos < 203; ++pos)
    EXPECT_TRUE(torch::allclose(m->step(x.select(1, pos), cache, pos, T), y.select(1, pos), 1e-10, 1e-10));
}

namespace {

// The plain path: the whole [T, T] softmax, masked.
torch::Tensor explicit_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const int64_t T = q.size(-2);
  auto s = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  auto future = torch::ones({T, T}, torch::kBool).triu(1);
  return torch::matmul(torch::softmax(s.masked_fill(future, -INFINITY), -1), v);
}

struct Qkv {
  torch::Tensor q, k, v;
};

Qkv random_qkv(int64_t T, torch::Dtype dtype, int64_t seed) {
  torch::manual_seed(seed);
  auto make = [&] { return (2 * torch::randn({2, 3, T, 8}, dtype)).requires_grad_(true); };
  return {make(), make(), make()};
}

}  // namespace

// Tiles of every shape: one tile, square tiles, ragged edges, keys narrower than queries.
TEST(BlockedAttention, ForwardAndGradientsEqualTheExplicitSoftmax) {
  for (const auto& [T, bq, bk] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 4, 4}, {20, 128, 512}, {20, 4, 4}, {37, 8, 16}, {37, 16, 5}, {64, 7, 64}}) {
    auto a = random_qkv(T, torch::kFloat32, T);
    auto b = random_qkv(T, torch::kFloat32, T);
    auto y_ref = explicit_attention(a.q, a.k, a.v);
    auto y = blocked_causal_attention(b.q, b.k, b.v, 0.0, true, {bq, bk});
    EXPECT_TRUE(torch::allclose(y, y_ref, 1e-5, 1e-5)) << "T=" << T << " blocks " << bq << "x" << bk;
    auto g = torch::randn_like(y_ref);
    (y_ref * g).sum().backward();
    (y * g).sum().backward();
    EXPECT_TRUE(torch::allclose(b.q.grad(), a.q.grad(), 1e-4, 1e-5)) << "dq, T=" << T;
    EXPECT_TRUE(torch::allclose(b.k.grad(), a.k.grad(), 1e-4, 1e-5)) << "dk, T=" << T;
    EXPECT_TRUE(torch::allclose(b.v.grad(), a.v.grad(), 1e-4, 1e-5)) << "dv, T=" << T;
  }
}

// With dropout the masks are random, so the check is against the function's own finite
// differences (the same seed draws the same masks), in double precision.
TEST(BlockedAttention, DropoutGradientMatchesFiniteDifferences) {
  auto x = random_qkv(19, torch::kFloat64, 5);
  auto dir = random_qkv(19, torch::kFloat64, 6);
  auto g = torch::randn({2, 3, 19, 8}, torch::kFloat64);
  auto f = [&](double eps) {
    torch::NoGradGuard no_grad;
    torch::manual_seed(42);
    return (blocked_causal_attention(x.q + eps * dir.q, x.k + eps * dir.k, x.v + eps * dir.v, 0.3, true, {4, 8}) * g)
        .sum()
        .item<double>();
  };
  torch::manual_seed(42);
  auto y = blocked_causal_attention(x.q, x.k, x.v, 0.3, true, {4, 8});
  (y * g).sum().backward();
  const double analytic = ((x.q.grad() * dir.q).sum() + (x.k.grad() * dir.k).sum() + (x.v.grad() * dir.v).sum())
                              .item<double>();
  const double eps = 1e-6, numeric = (f(eps) - f(-eps)) / (2 * eps);
  EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric)));
  // Some weights were dropped: the output differs from the dropout-free one.
  torch::NoGradGuard no_grad;
  EXPECT_FALSE(torch::allclose(y, explicit_attention(x.q, x.k, x.v)));
}

TEST(BlockedAttention, EvalModeIgnoresDropout) {
  auto x = random_qkv(30, torch::kFloat64, 7);
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(blocked_causal_attention(x.q, x.k, x.v, 0.5, false, {8, 8}),
                              explicit_attention(x.q, x.k, x.v), 1e-10, 1e-10));
}

TEST(HashedDropout, KeepsOneMinusPScaledAndRepeatsPerSeedAndStream) {
  const double p = 0.1;
  auto m = dropout_mask({64, 1000}, p, 7, 3);
  const double kept = m.gt(0).to(torch::kFloat64).mean().item<double>();
  EXPECT_NEAR(kept, 1 - p, 0.005);  // 64k draws: 4 standard deviations ≈ 0.005
  EXPECT_TRUE((m.eq(0) | m.eq(static_cast<float>(1 / (1 - p)))).all().item<bool>());
  EXPECT_TRUE(torch::equal(m, dropout_mask({64, 1000}, p, 7, 3)));
  EXPECT_FALSE(torch::equal(m, dropout_mask({64, 1000}, p, 7, 4)));
  EXPECT_FALSE(torch::equal(m, dropout_mask({64, 1000}, p, 8, 3)));
  // Neighbouring elements are independent: P(both kept) ≈ (1-p)².
  auto keep = m.gt(0).flatten().to(torch::kFloat64);
  const double both = (keep.narrow(0, 0, keep.numel() - 1) * keep.narrow(0, 1, keep.numel() - 1)).mean().item<double>();
  EXPECT_NEAR(both, (1 - p) * (1 - p), 0.006);
  auto x = torch::ones({10, 10});
  EXPECT_TRUE(torch::equal(fast_dropout(x, p, false), x));
  EXPECT_TRUE(torch::equal(fast_dropout(x, 0.0, true), x));
}

TEST(HashedDropout, FusedPassesApplyTheMaskAndDrawItAgainForTheGradient) {
  const double p = 0.3;
  // Any slice drawn on its own (offset) equals that slice of the whole mask: vector lanes and
  // scalar tails (1003 = 125·8 + 3; 500 is not a multiple of 8) hash alike.
  auto whole = dropout_mask({1003}, p, 7, 0);
  EXPECT_TRUE(torch::equal(whole.narrow(0, 500, 503), dropout_mask({503}, p, 7, 0, 500)));
  EXPECT_TRUE(torch::equal(whole.narrow(0, 3, 17), dropout_mask({17}, p, 7, 0, 3)));

  auto x0 = torch::randn({5, 201}), h0 = torch::randn({5, 201}), up = torch::randn({5, 201});
  torch::manual_seed(5);
  const auto mask = dropout_mask({5, 201}, p, draw_dropout_seed());  // the seed the next call draws
  {
    auto x = x0.clone().requires_grad_();
    torch::manual_seed(5);
    auto y = fast_dropout(x, p, true);
    EXPECT_TRUE(torch::equal(y, x0 * mask));
    (y * up).sum().backward();
    EXPECT_TRUE(torch::equal(x.grad(), up * mask));
  }
  {
    auto x = x0.clone().requires_grad_(), h = h0.clone().requires_grad_();
    torch::manual_seed(5);
    auto out = residual_dropout(h, x, p, true);
    EXPECT_TRUE(torch::equal(out, h0 + x0 * mask));
    (out * up).sum().backward();
    EXPECT_TRUE(torch::equal(x.grad(), up * mask));
    EXPECT_TRUE(torch::equal(h.grad(), up));
  }
  EXPECT_TRUE(torch::equal(residual_dropout(h0, x0, p, false), h0 + x0));
}
