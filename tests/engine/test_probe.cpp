// Probe (issue 22): the logit lens, attention rollout and importance by ablation. The lens's
// last entry is the model's own distribution; rollout is the product of the half-mixed
// diagnosed matrices (identity for identity mixers; the (a,b) offset weights for an (a,b)
// stack); a knock-out equals a copy of the model whose mixer (or head) outputs zero; ablating
// nothing is `evaluate`'s loss.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>

#include "eval/mixing_matrix.h"
#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/knock_out.h"
#include "hsm/model.h"
#include "hsm/probe.h"
#include "hsm/prober.h"
#include "hsm/trainer.h"
#include "model/mixers/attention.h"
#include "model/mixers/shift.h"
#include "model/model.h"
#include "eval/evaluation.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;

namespace {

// A fresh model with `source`'s weights and buffers.
Gpt copy_of(Gpt& source) {
  Gpt copy(source->config);
  torch::NoGradGuard no_grad;
  auto from = source->named_parameters();
  for (auto& p : copy->named_parameters()) p.value().copy_(from[p.key()]);
  auto from_buffers = source->named_buffers();
  for (auto& b : copy->named_buffers()) b.value().copy_(from_buffers[b.key()]);
  copy->eval();
  return copy;
}

// Random token ids and the packed windows over them.
std::vector<uint16_t> random_tokens(int64_t n, int64_t vocab) {
  std::mt19937 rng(5);
  std::vector<uint16_t> t(static_cast<size_t>(n));
  for (auto& v : t) v = static_cast<uint16_t>(rng() % vocab);
  return t;
}

double loss_of(Gpt& model, const std::vector<uint16_t>& tokens) {
  return evaluate_windows(model, tokens, 8, 0, torch::kCPU, false).loss;
}

ModelConfig mixed_model() {
  ModelConfig c = tiny_model("attn", 1);  // 4 heads
  c.layers.push_back({"hsm_ab_mh_ext", 64, 4});
  c.layers.push_back({"hsm_ab", 64, 1});
  return c;
}

// R_l recomputed with LibTorch from the diagnosed matrices: ½ mean_h A + ½ I, multiplied up.
std::vector<torch::Tensor> reference_rollout(const std::vector<LayerDiagnostics>& layers, int64_t L) {
  auto R = torch::eye(L, torch::kFloat64);
  std::vector<torch::Tensor> out;
  for (const auto& layer : layers) {
    auto A = torch::zeros({L, L}, torch::kFloat64);
    for (const auto& h : layer.heads) A += torch::tensor(h.matrix).to(torch::kFloat64).view({L, L});
    A /= static_cast<double>(layer.heads.size());
    R = torch::matmul(0.5 * A + 0.5 * torch::eye(L, torch::kFloat64), R);
    out.push_back(R.clone());
  }
  return out;
}

torch::Tensor as_tensor(const std::vector<float>& m, int64_t L) {
  return torch::tensor(m).to(torch::kFloat64).view({L, L});
}

}  // namespace

// ---- knock-outs on a model ------------------------------------------------------------------
TEST(KnockOut, ParsesLayersAndHeadsAndRefusesAnythingElse) {
  const auto k = parse_knock_outs("3,2:1,0");
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0], (KnockOut{3, -1}));
  EXPECT_EQ(k[1], (KnockOut{2, 1}));
  EXPECT_EQ(k[2], (KnockOut{0, -1}));
  EXPECT_EQ(knock_out_label(k[1]), "layer 2 head 1");
  for (const char* bad : {"", "x", "3:", ":1", "-1", "3,", "1:2:3", "2.5", "+3", "3x", "99999999999999999999"})
    EXPECT_THROW(parse_knock_outs(bad), std::invalid_argument) << bad;
  EXPECT_EQ(parse_knock_outs(" 3 , 2 : 1"), (std::vector<KnockOut>{{3, -1}, {2, 1}}));  // spaces around parts
}

TEST(KnockOut, RefusesLayersAndHeadsTheModelLacks) {
  Gpt model(mixed_model());
  EXPECT_THROW(model->set_knock_outs({{3, -1}}), std::invalid_argument);
  EXPECT_THROW(model->set_knock_outs({{0, 4}}), std::invalid_argument);  // attention has heads 0..3
  try {
    model->set_knock_outs({{0, 1}, {2, 0}});  // hsm_ab: one shift, no heads apart
    FAIL() << "a head of hsm_ab was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("knock the layer out whole"), std::string::npos) << e.what();
  }
  // Refused whole: the valid head 0:1 was not applied either.
  EXPECT_TRUE(model->blocks[0]->mixer->zeroed_heads().empty());
  EXPECT_EQ(model->blocks[0]->mixer->separable_heads(), 4);
  EXPECT_EQ(model->blocks[1]->mixer->separable_heads(), 4);
  EXPECT_EQ(model->blocks[2]->mixer->separable_heads(), 0);
}

// "Zeroing a layer in hsm ablate equals evaluating a copy whose mixer output is zero": the copy
// has its mixer's output weights zeroed, so its forward really outputs zero.
TEST(KnockOut, ALayerKnockedOutEqualsACopyWhoseMixerOutputsZero) {
  torch::manual_seed(1);
  Gpt model(mixed_model());
  model->eval();
  const auto tokens = random_tokens(20 * 32 + 1, 300);
  const double base = loss_of(model, tokens);
  for (int64_t layer = 0; layer < 3; ++layer) {
    Gpt zeroed = copy_of(model);
    torch::NoGradGuard no_grad;
    for (auto& p : zeroed->blocks[static_cast<size_t>(layer)]->mixer->named_parameters())
      if (layer > 0 || p.key().rfind("proj.", 0) == 0) p.value().zero_();  // attention: its output projection
    model->set_knock_outs({{layer, -1}});
    const double knocked = loss_of(model, tokens);
    model->set_knock_outs({});
    EXPECT_EQ(knocked, loss_of(zeroed, tokens)) << "layer " << layer;
    EXPECT_NE(knocked, base) << "layer " << layer;
  }
  EXPECT_EQ(loss_of(model, tokens), base);  // the empty set restores the model
}

TEST(KnockOut, AHeadKnockedOutEqualsACopyWithoutThatHeadsOutput) {
  torch::manual_seed(2);
  Gpt model(mixed_model());
  model->eval();
  const auto tokens = random_tokens(20 * 32 + 1, 300);
  const int64_t hd = model->config.d_model / 4;
  for (int64_t head : {0, 3}) {
    Gpt zeroed = copy_of(model);
    {
      torch::NoGradGuard no_grad;
      // Attention: the output projection's columns that read head `head`.
      auto& attn = dynamic_cast<AttentionImpl&>(*zeroed->blocks[0]->mixer);
      attn.proj->weight.narrow(1, head * hd, hd).zero_();
      // (a,b) multihead: that head's a and b.
      auto& mh = dynamic_cast<ShiftABMultiheadImpl&>(*zeroed->blocks[1]->mixer);
      mh.a[head].zero_();
      mh.b[head].zero_();
    }
    model->set_knock_outs({{0, head}, {1, head}});
    const double knocked = loss_of(model, tokens);
    model->set_knock_outs({});
    EXPECT_NEAR(knocked, loss_of(zeroed, tokens), 1e-6) << "head " << head;
  }
}

TEST(KnockOut, DecodingStepsHonourTheKnockOuts) {
  torch::manual_seed(3);
  Gpt model(mixed_model());
  model->eval();
  model->set_knock_outs({{0, 2}, {2, -1}});
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(0, 300, {1, 12}, torch::kLong);
  const auto full = model->forward(idx);  // [1, 12, V]
  DecodeState state;
  auto logits = model->prefill(idx.narrow(1, 0, 6), state);
  EXPECT_TRUE(torch::allclose(logits, full[0][5].unsqueeze(0), 1e-5, 1e-5));
  for (int64_t t = 6; t < 12; ++t) {
    logits = model->step(idx.select(1, t), state);
    EXPECT_TRUE(torch::allclose(logits, full[0][t].unsqueeze(0), 1e-5, 1e-5)) << t;
  }
}

// ---- rollout --------------------------------------------------------------------------------
TEST(Rollout, IdentityMixersGiveTheIdentity) {
  ModelConfig c = tiny_model("mlp", 3);  // DA's gated MLP mixes nothing: its matrix is I
  Gpt model(c);
  model->eval();
  const int64_t L = 10;
  const auto layers = diagnose_model(model, torch::randint(0, 300, {1, L}, torch::kLong));
  const auto R = attention_rollout(layers, L);
  ASSERT_EQ(R.size(), 3u);
  for (const auto& r : R) EXPECT_TRUE(torch::equal(as_tensor(r.matrix, L), torch::eye(L, torch::kFloat64)));
}

// docs/diagnostics.md: for an all-(a,b) stack of n layers, R[t, t−k] = 2^−n · w_k(α, β), w the
// end-to-end offset weights (HSM §3) with a_l, b_l replaced by their shares
// α = |a|/(|a|+|b|), β = |b|/(|a|+|b|), at every row t ≥ 2^n − 1.
TEST(Rollout, AnABStackGivesTheOffsetWeightsOfItsNormalisedShares) {
  const int n = 3;
  const int64_t L = 12;
  Gpt model(tiny_model("hsm_ab", n));
  model->eval();
  const std::vector<double> a = {0.7, -1.3, 0.2}, b = {0.4, 0.9, -2.0};
  std::vector<double> alpha, beta;
  {
    torch::NoGradGuard no_grad;
    for (int l = 0; l < n; ++l) {
      auto& m = dynamic_cast<ShiftABImpl&>(*model->blocks[static_cast<size_t>(l)]->mixer);
      m.a.fill_(a[l]);
      m.b.fill_(b[l]);
      alpha.push_back(std::abs(a[l]) / (std::abs(a[l]) + std::abs(b[l])));
      beta.push_back(std::abs(b[l]) / (std::abs(a[l]) + std::abs(b[l])));
    }
  }
  const auto R = attention_rollout(diagnose_model(model, torch::randint(0, 300, {1, L}, torch::kLong)), L);
  const auto w = offset_weights(alpha, beta);
  const auto& last = R.back().matrix;
  for (int64_t t = (1 << n) - 1; t < L; ++t)
    for (int64_t k = 0; k <= t; ++k) {
      const double expected = k < (1 << n) ? w[static_cast<size_t>(k)] / (1 << n) : 0.0;
      EXPECT_NEAR(last[static_cast<size_t>(t * L + t - k)], expected, 1e-6) << "t " << t << " k " << k;
    }
}

TEST(Rollout, ProvenanceSumsTheLastLayersRows) {
  Probe p;
  p.length = 2;
  p.rollout = {{0, {1, 0, 0.5f, 0.5f}}, {1, {1, 0, 0.25f, 0.75f}}};
  EXPECT_EQ(rollout_provenance(p, {1}), (std::vector<double>{0.25, 0.75}));
  EXPECT_EQ(rollout_provenance(p, {0, 1}), (std::vector<double>{1.25, 0.75}));
  EXPECT_THROW(rollout_provenance(p, {2}), std::out_of_range);
}

// ---- a trained model: lens, rollout, ablation -----------------------------------------------
class ProbedRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(temp_dir("probe"));
    RunSpec spec = tiny_run(*dir_, make_corpus(*dir_), 30);
    spec.model = mixed_model();
    Trainer(spec).run();
    run_ = new std::string(spec.run_dir);
  }
  static std::string* dir_;
  static std::string* run_;
  static constexpr const char* kPrompt = "Once upon a time, Lily saw a red ball. Lily was very happy.";
};
std::string* ProbedRun::dir_ = nullptr;
std::string* ProbedRun::run_ = nullptr;

TEST_F(ProbedRun, TheLensLastEntryIsTheModelsOwnDistribution) {
  auto model = Model::load(*run_, "cpu");
  const Probe p = Prober(model).probe(kPrompt, 5);
  const int64_t L = p.length, layers = 3;
  ASSERT_GT(L, 5);
  ASSERT_EQ(p.lens.size(), static_cast<size_t>(layers + 1));
  for (int64_t i = 0; i <= layers; ++i) EXPECT_EQ(p.lens[static_cast<size_t>(i)].layer, i - 1);
  EXPECT_EQ(p.token_ids, Prober(model).diagnose(kPrompt).token_ids);  // tokenised as diagnose does
  const LensLayer& last = p.lens.back();
  for (int64_t t = 0; t < L; ++t) {
    // The model's own next-token distribution after tokens 0..t.
    const auto logits = Prober(model).logits(std::vector<int32_t>(p.token_ids.begin(), p.token_ids.begin() + t + 1));
    const auto probs = torch::softmax(torch::tensor(logits).to(torch::kFloat64), 0);
    const auto [top_p, top_id] = torch::topk(probs, 5);
    for (int64_t j = 0; j < 5; ++j) {
      EXPECT_EQ(last.top[t][j].id, top_id[j].item<int64_t>()) << t << " " << j;
      EXPECT_NEAR(last.top[t][j].prob, top_p[j].item<double>(), 1e-5) << t << " " << j;
    }
    EXPECT_EQ(last.kl_to_final[t], 0.0) << t;
    if (t + 1 < L) {
      const double target = logits[static_cast<size_t>(p.token_ids[t + 1])];
      int64_t rank = 1;
      for (float v : logits) rank += v > target;
      EXPECT_EQ(last.target_rank[t], rank) << t;
    } else {
      EXPECT_EQ(last.target_rank[t], -1);
    }
    for (const LensLayer& l : p.lens) EXPECT_GE(l.kl_to_final[t], -1e-9);
  }
  EXPECT_GT(p.lens.front().kl_to_final[0], 0.0);  // the embedding alone predicts otherwise
}

TEST_F(ProbedRun, RolloutIsTheProductOfTheDiagnosedMatrices) {
  auto model = Model::load(*run_, "cpu");
  const Probe p = Prober(model).probe(kPrompt);
  const Diagnosis d = Prober(model).diagnose(kPrompt);
  const auto reference = reference_rollout(d.layers, d.length);
  ASSERT_EQ(p.rollout.size(), reference.size());
  for (size_t l = 0; l < reference.size(); ++l) {
    EXPECT_EQ(p.matrix_kinds[l], d.layers[l].kind);
    EXPECT_LT((as_tensor(p.rollout[l].matrix, p.length) - reference[l]).abs().max().item<double>(), 1e-6) << l;
  }
  // Rows of R are distributions: every A_l row sums to 1.
  const auto row_sums = as_tensor(p.rollout.back().matrix, p.length).sum(1);
  EXPECT_TRUE(torch::allclose(row_sums, torch::ones_like(row_sums), 1e-5, 1e-5));
  EXPECT_THROW(Prober(model).probe(""), std::invalid_argument);
}

TEST_F(ProbedRun, AblatingNothingIsEvaluateAndEachKnockOutIsItsOwnEvaluation) {
  auto model = Model::load(*run_, "cpu");
  EvalOptions o;
  o.cache_dir = *dir_ + "/cache";
  o.max_windows = 24;
  o.batch_size = 16;
  std::vector<double> fractions;
  o.progress = [&](const std::string& stage, double f) {  // the evaluations' stages, not the corpus reading's
    if (stage.find("knocking out") != std::string::npos || stage.find("nothing knocked out") != std::string::npos)
      fractions.push_back(f);
  };
  const AblationReport r = Evaluator(model).ablate(*dir_ + "/stories.txt", o);
  o.progress = {};
  const EvalResult plain = Evaluator(model).evaluate(*dir_ + "/stories.txt", o);
  EXPECT_EQ(r.base_loss, plain.loss);
  EXPECT_EQ(r.tokens, 24 * 32);
  EXPECT_EQ(plain.tokens, 24 * 32);
  // 3 layers, then the 4 heads of attention and the 4 of the (a,b) multihead layer.
  ASSERT_EQ(r.ablations.size(), 3u + 4u + 4u);
  for (size_t i = 0; i < r.ablations.size(); ++i) {
    const Ablation& a = r.ablations[i];
    EXPECT_TRUE(std::isfinite(a.loss)) << knock_out_label(a.knock_out);
    EXPECT_DOUBLE_EQ(a.delta, a.loss - r.base_loss);
    if (i > 0) EXPECT_GE(r.ablations[i - 1].delta, a.delta);  // ranked
  }
  // Each row is `evaluate` with that knock-out (hsm eval --knock-out).
  for (const Ablation& a : {r.ablations.front(), r.ablations.back()}) {
    EvalOptions k = o;
    k.knock_out = {a.knock_out};
    EXPECT_EQ(Evaluator(model).evaluate(*dir_ + "/stories.txt", k).loss, a.loss) << knock_out_label(a.knock_out);
  }
  EXPECT_EQ(Evaluator(model).evaluate(*dir_ + "/stories.txt", o).loss, plain.loss);  // nothing left knocked out
  ASSERT_FALSE(fractions.empty());
  EXPECT_NEAR(fractions.back(), 1.0, 1e-9);
  EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
  o.knock_out = {{0, -1}};
  EXPECT_THROW(Evaluator(model).ablate(*dir_ + "/stories.txt", o), std::invalid_argument);
}

TEST_F(ProbedRun, AblationStopsWhenCancelled) {
  auto model = Model::load(*run_, "cpu");
  CancelFlag cancel{false};
  EvalOptions o;
  o.cache_dir = *dir_ + "/cache";
  o.max_windows = 16;
  o.batch_size = 4;
  o.cancel = &cancel;
  o.progress = [&](const std::string& stage, double) {
    if (stage.find("knocking out") != std::string::npos) cancel = true;
  };
  EXPECT_THROW(Evaluator(model).ablate(*dir_ + "/stories.txt", o), Cancelled);
}
