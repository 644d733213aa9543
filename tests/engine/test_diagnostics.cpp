// Diagnostics without LibTorch: DA §4.4's indicators on matrices with known values, their
// min-max normalisation across layers, and the (a,b) offset weights of HSM §3.
#include <gtest/gtest.h>

#include <cmath>

#include "hsm/diagnostics.h"

using namespace hsm;

namespace {

// Row i attends uniformly to 0..i.
std::vector<float> uniform_causal(int64_t L) {
  std::vector<float> m(static_cast<size_t>(L * L), 0.0f);
  for (int64_t i = 0; i < L; ++i)
    for (int64_t k = 0; k <= i; ++k) m[static_cast<size_t>(i * L + k)] = 1.0f / static_cast<float>(i + 1);
  return m;
}

std::vector<float> identity(int64_t L) {
  std::vector<float> m(static_cast<size_t>(L * L), 0.0f);
  for (int64_t i = 0; i < L; ++i) m[static_cast<size_t>(i * L + i)] = 1.0f;
  return m;
}

double harmonic(int64_t n) {
  double h = 0;
  for (int64_t i = 1; i <= n; ++i) h += 1.0 / static_cast<double>(i);
  return h;
}

LayerDiagnostics layer_with(double entropy, double conc, double headdiv, double sink) {
  LayerDiagnostics l;
  l.indicators.entropy = entropy;
  l.indicators.conc = conc;
  l.indicators.headdiv = headdiv;
  l.indicators.sink = sink;
  l.indicators.locfoc = {0.5, 0.25, 0.125, 0.0625};
  return l;
}

}  // namespace

TEST(Indicators, UniformCausalAttention) {
  const int64_t L = 10;
  const Indicators r = head_indicators(uniform_causal(L), L);
  EXPECT_NEAR(r.sink, harmonic(L) / L, 1e-6);
  EXPECT_NEAR(r.locfoc[0], harmonic(L) / L, 1e-6);
  // LocFoc_1: rows 1..L-1 give 1/(i+1) at k = i-1.
  EXPECT_NEAR(r.locfoc[1], (harmonic(L) - 1.0) / (L - 1), 1e-6);
  // Row i holds i+1 entries of 1/(i+1): entropy ln(i+1), squares 1/(i+1).
  double entropy = 0, squares = 0;
  for (int64_t i = 0; i < L; ++i) {
    entropy += std::log(static_cast<double>(i + 1));
    squares += 1.0 / static_cast<double>(i + 1);
  }
  EXPECT_NEAR(r.entropy, entropy, 1e-5);
  EXPECT_NEAR(r.conc, std::sqrt(squares), 1e-6);
  EXPECT_EQ(r.headdiv, 0.0);
}

TEST(Indicators, Identity) {
  const int64_t L = 9;
  const Indicators r = head_indicators(identity(L), L);
  EXPECT_DOUBLE_EQ(r.locfoc[0], 1.0);
  EXPECT_DOUBLE_EQ(r.locfoc[1], 0.0);
  EXPECT_DOUBLE_EQ(r.entropy, 0.0);
  EXPECT_NEAR(r.conc, 3.0, 1e-12);  // sqrt(L)
  EXPECT_NEAR(r.sink, 1.0 / L, 1e-12);
}

TEST(Indicators, LocalFocusIsZeroWhenTheDistanceDoesNotFit) {
  const Indicators r = head_indicators(identity(2), 2);
  EXPECT_DOUBLE_EQ(r.locfoc[0], 1.0);
  EXPECT_DOUBLE_EQ(r.locfoc[2], 0.0);
  EXPECT_DOUBLE_EQ(r.locfoc[3], 0.0);
}

TEST(Indicators, RejectsAMatrixOfTheWrongSize) {
  EXPECT_THROW(head_indicators(std::vector<float>(8, 0.0f), 3), std::invalid_argument);
  EXPECT_THROW(head_indicators({}, 0), std::invalid_argument);
  EXPECT_THROW(head_diversity({identity(3), identity(2)}, 3), std::invalid_argument);
}

TEST(Indicators, HeadDiversity) {
  const int64_t L = 3;
  EXPECT_DOUBLE_EQ(head_diversity({uniform_causal(L), uniform_causal(L), uniform_causal(L)}, L), 0.0);
  EXPECT_DOUBLE_EQ(head_diversity({identity(L)}, L), 0.0);
  // Identity vs uniform causal; causal entries (i,k<=i) and |difference| between the heads:
  // (0,0): 1 vs 1 -> 0; (1,0): 0 vs 1/2; (1,1): 1 vs 1/2; (2,0), (2,1): 0 vs 1/3; (2,2): 1 vs 1/3.
  // The population std of two values is |x - y| / 2.
  const double sum = (0 + 0.5 + 0.5 + 1.0 / 3 + 1.0 / 3 + 2.0 / 3) / 2;
  EXPECT_NEAR(head_diversity({identity(L), uniform_causal(L)}, L), 2.0 * sum / (L * (L + 1)), 1e-7);
}

TEST(Indicators, LayerIsTheMeanOverHeadsPlusHeadDiversity) {
  const int64_t L = 4;
  const auto a = identity(L), b = uniform_causal(L);
  const Indicators ia = head_indicators(a, L), ib = head_indicators(b, L), layer = layer_indicators({a, b}, L);
  EXPECT_NEAR(layer.entropy, (ia.entropy + ib.entropy) / 2, 1e-9);
  EXPECT_NEAR(layer.conc, (ia.conc + ib.conc) / 2, 1e-9);
  EXPECT_NEAR(layer.sink, (ia.sink + ib.sink) / 2, 1e-9);
  for (size_t n = 0; n < 4; ++n) EXPECT_NEAR(layer.locfoc[n], (ia.locfoc[n] + ib.locfoc[n]) / 2, 1e-9);
  EXPECT_NEAR(layer.headdiv, head_diversity({a, b}, L), 1e-12);
  EXPECT_GT(layer.headdiv, 0.0);
}

TEST(Indicators, RowNormalisation) {
  std::vector<float> m = {2, 0, -1, 3, 0, 0, 0, 0, 0};  // rows (2, 0, -1), (3, 0, 0), (0, 0, 0)
  normalise_rows(m, 3);
  EXPECT_FLOAT_EQ(m[0], 2.0f / 3);
  EXPECT_FLOAT_EQ(m[2], 1.0f / 3);
  EXPECT_FLOAT_EQ(m[3], 1.0f);
  for (size_t i = 6; i < 9; ++i) EXPECT_EQ(m[i], 0.0f);  // a zero row stays zero
}

TEST(Indicators, MinMaxNormalisationAcrossLayers) {
  std::vector<LayerDiagnostics> layers = {layer_with(1, 5, 0.2, 0.3), layer_with(3, 1, 0.2, 0.7),
                                          layer_with(2, 3, 0.2, 0.1)};
  normalise_across_layers(layers);
  EXPECT_DOUBLE_EQ(layers[0].normalised.entropy, 0.0);
  EXPECT_DOUBLE_EQ(layers[1].normalised.entropy, 1.0);
  EXPECT_DOUBLE_EQ(layers[2].normalised.entropy, 0.5);
  EXPECT_DOUBLE_EQ(layers[0].normalised.conc, 1.0);
  EXPECT_DOUBLE_EQ(layers[1].normalised.conc, 0.0);
  EXPECT_DOUBLE_EQ(layers[2].normalised.conc, 0.5);
  for (const auto& l : layers) {
    EXPECT_DOUBLE_EQ(l.normalised.headdiv, 0.0);             // all equal
    EXPECT_DOUBLE_EQ(l.normalised.sink, l.indicators.sink);  // copied raw
    EXPECT_EQ(l.normalised.locfoc, l.indicators.locfoc);
  }
  std::vector<LayerDiagnostics> none;
  normalise_across_layers(none);  // no layers: nothing to do
}

TEST(Indicators, MatrixKindNames) {
  EXPECT_STREQ(matrix_kind_name(MatrixKind::kAttention), "attention");
  EXPECT_STREQ(matrix_kind_name(MatrixKind::kLinear), "linear");
  EXPECT_STREQ(matrix_kind_name(MatrixKind::kJacobian), "jacobian");
  EXPECT_EQ(matrix_kind(MixerKind::Attention), MatrixKind::kAttention);
  for (auto k : {MixerKind::ShiftAB, MixerKind::ShiftABVector, MixerKind::ShiftABMatrix, MixerKind::ShiftABMultihead,
                 MixerKind::ShiftABMultiheadExt})
    EXPECT_EQ(matrix_kind(k), MatrixKind::kLinear) << mixer_info(k).id;
  for (auto k : {MixerKind::ShiftGate1, MixerKind::ShiftGate2, MixerKind::ShiftFusion})
    EXPECT_EQ(matrix_kind(k), MatrixKind::kJacobian) << mixer_info(k).id;
}

TEST(OffsetWeights, ThreeLayersByHand) {
  const std::vector<double> a = {0.5, -0.25, 2.0}, b = {0.1, 3.0, -0.5};
  const auto w = offset_weights(a, b);
  ASSERT_EQ(w.size(), 8u);
  const double r0 = 1.5, r1 = 0.75, r2 = 3.0;  // residual branches 1 + a_l
  EXPECT_DOUBLE_EQ(w[0], r0 * r1 * r2);
  EXPECT_DOUBLE_EQ(w[1], 0.1 * r1 * r2);  // bit 0: layer 0 shifted
  EXPECT_DOUBLE_EQ(w[2], r0 * 3.0 * r2);
  EXPECT_DOUBLE_EQ(w[3], 0.1 * 3.0 * r2);
  EXPECT_DOUBLE_EQ(w[4], r0 * r1 * -0.5);
  EXPECT_DOUBLE_EQ(w[5], 0.1 * r1 * -0.5);
  EXPECT_DOUBLE_EQ(w[6], r0 * 3.0 * -0.5);
  EXPECT_DOUBLE_EQ(w[7], 0.1 * 3.0 * -0.5);
  EXPECT_EQ(offset_weights(std::vector<double>{}, std::vector<double>{}), std::vector<double>{1.0});
  EXPECT_THROW(offset_weights(std::vector<double>{1.0}, std::vector<double>{}), std::invalid_argument);
}

TEST(OffsetWeights, FromMixerWeightsOnlyForAnAllHsmAbModel) {
  std::vector<MixerWeights> layers(2);
  layers[0] = {0, "hsm_ab", {1}, {0.5f}, {2.0f}};
  layers[1] = {1, "hsm_ab", {2}, {1.0f}, {0.25f}};
  EXPECT_EQ(offset_weights(layers), (std::vector<double>{1.5 * 2.0, 2.0 * 2.0, 1.5 * 0.25, 2.0 * 0.25}));
  // One head of a multihead shift layer has scalar a and b too, but its shift is 2^head, not
  // the stack position's: the product does not hold.
  layers[1] = {1, "hsm_ab_mh", {1}, {1.0f}, {0.25f}};
  EXPECT_TRUE(offset_weights(layers).empty());
  layers[1] = {1, "attn", {}, {}, {}};
  EXPECT_FALSE(layers[1].has_weights());
  EXPECT_TRUE(offset_weights(layers).empty());
}
