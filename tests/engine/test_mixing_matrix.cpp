// Diagnostics' matrices (docs/diagnostics.md): the effective matrix of every shift mixer against the
// full autograd Jacobian of its real forward(); hand-set (a,b) maps; attention rows;
// a whole model's diagnosis and its learned weights.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "eval/mixing_matrix.h"
#include "model/mixers/attention.h"
#include "model/model.h"

using namespace hsm;

namespace {

constexpr int64_t kD = 16, kL = 8;

LayerSpec spec_of(const std::string& id) { return {id, 32, mixer_info(id).multi_head ? 4 : 1}; }

std::shared_ptr<MixerImpl> build(const std::string& id, int64_t layer) {
  auto m = make_mixer(spec_of(id), layer, kD, 0.0, kL);  // context kL: the extractors' l
  m->to(torch::kFloat64);
  m->eval();
  // The (a,b) weights start at 0.5 everywhere: give every value its own size and sign.
  torch::NoGradGuard no_grad;
  for (auto& p : m->named_parameters())
    if (p.key() == "a" || p.key() == "b") p.value().copy_(torch::randn_like(p.value()));
  return m;
}

// ‖∂y_i/∂x_k‖_F over head h's channels from the full Jacobian of mixer.forward at x [1, L, d]
// (L·d backward passes): [H, L, L], rows normalised. Also returns the largest derivative
// between different heads' channels (the per-head view assumes there is none).
std::pair<torch::Tensor, double> reference_matrices(MixerImpl& mixer, const torch::Tensor& x, int64_t H) {
  const int64_t L = x.size(1), d = x.size(2), hd = d / H;
  auto xin = x.clone().requires_grad_(true);
  auto y = mixer.forward(xin);
  auto J = torch::zeros({L, d, L, d}, torch::kFloat64);  // J[i, c, k, c'] = ∂y[i, c] / ∂x[k, c']
  for (int64_t i = 0; i < L; ++i)
    for (int64_t c = 0; c < d; ++c)
      J[i][c] = torch::autograd::grad({y[0][i][c]}, {xin}, {}, /*retain_graph=*/true)[0][0];
  auto M = torch::zeros({H, L, L}, torch::kFloat64);
  double cross = 0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t g = 0; g < H; ++g) {
      auto block = J.narrow(1, h * hd, hd).narrow(3, g * hd, hd);  // [L, hd, L, hd]
      if (g == h)
        M[h] = block.pow(2).sum({1, 3}).sqrt();
      else
        cross = std::max(cross, block.abs().max().item<double>());
    }
  return {M / M.sum(-1, true).clamp_min(1e-300), cross};
}

class ShiftMixers : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(ShiftMixers, EffectiveMatrixEqualsTheJacobianOfTheRealMixer) {
  torch::manual_seed(3);
  for (int64_t layer : {0, 1, 3}) {  // shifts 1, 2 and 8 (>= L: nothing to mix in)
    auto mixer = build(GetParam(), layer);
    auto x = torch::randn({1, kL, kD}, torch::kFloat64);
    const LayerDiagnostics diag = diagnose_layer(*mixer, spec_of(GetParam()), static_cast<int>(layer), x);
    EXPECT_EQ(diag.kind, matrix_kind(mixer_info(GetParam()).kind));
    const auto H = static_cast<int64_t>(diag.heads.size());
    auto [reference, cross] = reference_matrices(*mixer, x, H);
    EXPECT_LT(cross, 1e-12) << "no derivative between heads";
    auto* shift = dynamic_cast<ShiftMixerImpl*>(mixer.get());  // null for an extractor
    for (int64_t h = 0; h < H; ++h) {
      const auto& head = diag.heads[static_cast<size_t>(h)];
      EXPECT_EQ(head.shift, shift ? head_shift(*shift, h) : -1);
      auto got = torch::tensor(head.matrix, torch::kFloat64).view({kL, kL});
      EXPECT_TRUE(torch::allclose(got, reference[h], 1e-4, 1e-6))
          << GetParam() << " layer " << layer << " head " << h << "\n"
          << got << "\n"
          << reference[h];
      // Rows sum to 1, or stay 0 where nothing reaches the output (fusion: every ReLU of the
      // head off at that position).
      auto sums = got.sum(-1);
      EXPECT_TRUE(torch::allclose(sums, (sums > 0.5).to(torch::kFloat64), 1e-5, 1e-6)) << sums;
    }
    if (diag.kind == MatrixKind::kLinear && shift) {  // and the same through the other path
      auto jac = jacobian_norms(*shift, x);
      auto lin = linear_maps(*shift, kL).abs().to(torch::kFloat64);
      EXPECT_TRUE(torch::allclose(jac / jac.sum(-1, true), lin / lin.sum(-1, true), 1e-5, 1e-7)) << GetParam();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Diagnostics, ShiftMixers,
                         ::testing::Values("hsm_ab", "hsm_ab_vec", "hsm_AB", "hsm_gate1", "hsm_gate2", "hsm_fusion",
                                           "hsm_ab_mh", "hsm_ab_mh_ext"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Extractors, ShiftMixers, ::testing::Values("she", "he", "we", "me"),
                         [](const auto& info) { return info.param; });

// DA mixers (docs/mixers.md): the diagnosed matrices are the mixer's own weights: per head,
// y_h = A_h · v_h reproduces forward() exactly (taylor: its normalised linear-attention weights;
// nonapprox and *_qk, here with Q, K from x itself: softmax weights); mlp: the identity.
class DaMixerMatrices : public ::testing::TestWithParam<std::string> {};

TEST_P(DaMixerMatrices, MatricesReproduceTheMixersOutput) {
  torch::manual_seed(4);
  auto mixer = build(GetParam(), 0);
  auto x = torch::randn({1, kL, kD}, torch::kFloat64);
  const LayerDiagnostics diag = diagnose_layer(*mixer, spec_of(GetParam()), 0, x);
  EXPECT_EQ(diag.kind, matrix_kind(mixer_info(GetParam()).kind));
  if (GetParam() == "mlp") {
    ASSERT_EQ(diag.heads.size(), 1u);
    EXPECT_TRUE(torch::equal(torch::tensor(diag.heads[0].matrix, torch::kFloat64).view({kL, kL}),
                             torch::eye(kL, torch::kFloat64)));
    return;
  }
  const auto H = static_cast<int64_t>(diag.heads.size());
  ASSERT_EQ(H, 4);
  torch::NoGradGuard no_grad;
  torch::Tensor v, proj_w, proj_b;
  for (const auto& p : mixer->named_parameters()) {
    if (p.key() == "qkv.weight") v = torch::matmul(x[0], p.value().narrow(0, 2 * kD, kD).t());
    if (p.key() == "qkv.bias") v = v + p.value().narrow(0, 2 * kD, kD);
    if (p.key() == "v.weight") v = torch::matmul(x[0], p.value().t());
    if (p.key() == "v.bias") v = v + p.value();
    if (p.key() == "proj.weight") proj_w = p.value();
    if (p.key() == "proj.bias") proj_b = p.value();
  }
  const int64_t hd = kD / H;
  auto out = torch::zeros({kL, kD}, torch::kFloat64);
  for (int64_t h = 0; h < H; ++h) {
    auto A = torch::tensor(diag.heads[static_cast<size_t>(h)].matrix, torch::kFloat64).view({kL, kL});
    out.narrow(1, h * hd, hd).copy_(torch::matmul(A, v.narrow(1, h * hd, hd)));
  }
  auto expect = mixer->forward(x)[0];
  EXPECT_TRUE(torch::allclose(torch::matmul(out, proj_w.t()) + proj_b, expect, 1e-5, 1e-6)) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(DeconstructingAttention, DaMixerMatrices,
                         ::testing::Values("mlp", "taylor", "nonapprox", "rnd_emb_qk", "fixed_seq_qk", "static_emb_qk"),
                         [](const auto& info) { return info.param; });

TEST(MixingMatrix, HandSetAbIsADiagonalAndASubDiagonal) {
  auto mixer = std::make_shared<ShiftABImpl>(MixerKind::ShiftAB, kD, 2);
  {
    torch::NoGradGuard no_grad;
    mixer->a.fill_(0.3);
    mixer->b.fill_(-0.9);
  }
  auto raw = linear_maps(*mixer, 5)[0];  // signed: a on the diagonal, b two below
  auto expected = torch::eye(5) * 0.3 + torch::diag(torch::full({3}, -0.9), -2);
  EXPECT_TRUE(torch::allclose(raw.to(torch::kFloat32), expected, 1e-6, 1e-7)) << raw;
  const LayerDiagnostics d = diagnose_layer(*mixer, spec_of("hsm_ab"), 1, torch::randn({1, 5, kD}));
  ASSERT_EQ(d.heads.size(), 1u);
  EXPECT_EQ(d.heads[0].shift, 2);
  const auto& m = d.heads[0].matrix;
  EXPECT_FLOAT_EQ(m[0], 1.0f);                 // row 0: only itself
  EXPECT_FLOAT_EQ(m[4 * 5 + 4], 0.3f / 1.2f);  // row 4: |a| / (|a| + |b|)
  EXPECT_FLOAT_EQ(m[4 * 5 + 2], 0.9f / 1.2f);
  EXPECT_NEAR(d.indicators.locfoc[2], 3 * 0.75 / 3, 1e-6);  // rows 2..4 put 0.75 at distance 2
  EXPECT_EQ(d.indicators.headdiv, 0.0);
}

TEST(MixingMatrix, AttentionRowsAreCausalDistributions) {
  torch::manual_seed(5);
  auto mixer = make_mixer(spec_of("attn"), 0, kD, 0.0);
  mixer->eval();
  const LayerDiagnostics d = diagnose_layer(*mixer, spec_of("attn"), 0, torch::randn({1, kL, kD}));
  EXPECT_EQ(d.kind, MatrixKind::kAttention);
  ASSERT_EQ(d.heads.size(), 4u);
  for (const auto& h : d.heads) {
    EXPECT_EQ(h.shift, -1);
    ASSERT_EQ(h.matrix.size(), static_cast<size_t>(kL * kL));
    for (int64_t i = 0; i < kL; ++i) {
      double sum = 0;
      for (int64_t k = 0; k < kL; ++k) {
        const float v = h.matrix[static_cast<size_t>(i * kL + k)];
        if (k > i) EXPECT_EQ(v, 0.0f) << "query " << i << " sees key " << k;
        EXPECT_GE(v, 0.0f);
        sum += v;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
  EXPECT_GT(d.indicators.headdiv, 0.0);  // random heads differ
}

namespace {

ModelConfig mixed_model() {
  ModelConfig c;
  c.name = "diag";
  c.vocab_size = 50;
  c.d_model = kD;
  c.context = 12;
  c.dropout = 0.0;
  c.layers = {
      {"hsm_ab", 32, 1}, {"attn", 32, 4}, {"hsm_gate2", 32, 4}, {"hsm_ab_vec", 32, 1}, {"hsm_ab_mh_ext", 32, 4}};
  return c;
}

}  // namespace

TEST(MixingMatrix, ModelDiagnosisHasEveryLayerWithItsKind) {
  torch::manual_seed(6);
  Gpt model(mixed_model());
  model->eval();
  auto idx = torch::randint(0, 50, {1, 10}, torch::kLong);
  const auto layers = diagnose_model(model, idx);
  ASSERT_EQ(layers.size(), 5u);
  const MatrixKind kinds[] = {MatrixKind::kLinear, MatrixKind::kAttention, MatrixKind::kJacobian, MatrixKind::kLinear,
                              MatrixKind::kLinear};
  const size_t heads[] = {1, 4, 4, 1, 4};
  for (size_t l = 0; l < layers.size(); ++l) {
    EXPECT_EQ(layers[l].layer, static_cast<int>(l));
    EXPECT_EQ(layers[l].mixer, model->config.layers[l].mixer);
    EXPECT_EQ(layers[l].kind, kinds[l]) << l;
    EXPECT_EQ(layers[l].heads.size(), heads[l]) << l;
    for (const auto& h : layers[l].heads) EXPECT_EQ(h.matrix.size(), 100u);
    for (double v : {layers[l].normalised.entropy, layers[l].normalised.conc, layers[l].normalised.headdiv}) {
      EXPECT_GE(v, 0.0);
      EXPECT_LE(v, 1.0);
    }
  }
  // hsm_ab_mh_ext at layer 4 with 4 heads: shifts 2^((j + 4) mod 4) = 1, 2, 4, 8.
  EXPECT_EQ(layers[4].heads[3].shift, 8);
  // The diagnosis is read-only: the model's logits do not change.
  torch::NoGradGuard no_grad;
  auto before = model->forward(idx);
  diagnose_model(model, idx);
  EXPECT_TRUE(torch::equal(before, model->forward(idx)));
}

TEST(MixingMatrix, MixerWeightsReturnTheHandSetValues) {
  Gpt model(mixed_model());
  {
    torch::NoGradGuard no_grad;
    auto& ab = dynamic_cast<ShiftABImpl&>(*model->blocks[0]->mixer);
    ab.a.fill_(0.25);
    ab.b.fill_(-1.5);
    auto& vec = dynamic_cast<ShiftABVectorImpl&>(*model->blocks[3]->mixer);
    vec.a.copy_(torch::arange(kD, torch::kFloat32));
    vec.b.fill_(2.0);
    auto& mh = dynamic_cast<ShiftABMultiheadImpl&>(*model->blocks[4]->mixer);
    mh.a.copy_(torch::tensor({1.0f, 2.0f, 3.0f, 4.0f}));
    mh.b.copy_(torch::tensor({-1.0f, -2.0f, -3.0f, -4.0f}));
  }
  const auto w = mixer_weights(model);
  ASSERT_EQ(w.size(), 5u);
  EXPECT_EQ(w[0].a, std::vector<float>{0.25f});
  EXPECT_EQ(w[0].b, std::vector<float>{-1.5f});
  EXPECT_EQ(w[0].shifts, std::vector<int64_t>{1});
  EXPECT_FALSE(w[1].has_weights());
  EXPECT_TRUE(w[1].shifts.empty());
  EXPECT_FALSE(w[2].has_weights());  // gated: no a, b
  EXPECT_EQ(w[2].shifts, std::vector<int64_t>{4});
  ASSERT_EQ(w[3].a.size(), static_cast<size_t>(kD));
  EXPECT_EQ(w[3].a[7], 7.0f);
  EXPECT_EQ(w[3].b, std::vector<float>(kD, 2.0f));
  EXPECT_EQ(w[3].shifts, std::vector<int64_t>{8});
  EXPECT_EQ(w[4].a, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(w[4].b, (std::vector<float>{-1, -2, -3, -4}));
  EXPECT_EQ(w[4].shifts, (std::vector<int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(w[4].mixer, "hsm_ab_mh_ext");
}
