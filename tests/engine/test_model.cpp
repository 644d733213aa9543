// The full model: shapes and causality for every preset; receptive fields by gradient;
// parameter counts against LibTorch.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/receptive_field.h"
#include "model/model.h"
#include "model_test_util.h"

using namespace hsm;

namespace {
class EveryPreset : public ::testing::TestWithParam<std::string> {};
}  // namespace

TEST_P(EveryPreset, ParameterCountMatchesLibTorch) {
  const auto c = load_preset(GetParam());
  Gpt model(c);
  EXPECT_EQ(test::numel(*model), count_params(c).total());
}

TEST_P(EveryPreset, ShapeCausalityAndBackward) {
  torch::manual_seed(3);
  auto c = load_preset(GetParam());
  c.vocab_size = 300;  // keep the test light; the mixers are what is under test
  Gpt model(c);
  model->eval();
  const int64_t T = c.context;  // full context: shorter inputs give the 2^6 shift nothing to read
  auto idx = torch::randint(0, c.vocab_size, {2, T}, torch::kLong);
  auto logits = model->forward(idx);
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, T, c.vocab_size}));
  for (int64_t j : {int64_t{1}, int64_t{17}, T - 1}) {
    auto idx2 = idx.clone();
    idx2.index_put_({0, j}, (idx[0][j].item<int64_t>() + 1) % c.vocab_size);
    auto logits2 = model->forward(idx2);
    EXPECT_TRUE(torch::equal(logits.narrow(1, 0, j), logits2.narrow(1, 0, j))) << GetParam() << " j=" << j;
    EXPECT_FALSE(torch::equal(logits[0][j], logits2[0][j]));
  }
  model->train();
  auto loss = torch::nn::functional::cross_entropy(model->forward(idx).view({-1, c.vocab_size}), idx.view({-1}));
  loss.backward();
  EXPECT_TRUE(std::isfinite(loss.item<double>()));
  int64_t with_grad = 0;
  for (const auto& p : model->parameters()) with_grad += p.grad().defined() && p.grad().abs().sum().item<double>() > 0;
  EXPECT_EQ(with_grad, static_cast<int64_t>(model->parameters().size()));
}

TEST_P(EveryPreset, RejectsSequencesLongerThanContext) {
  auto c = load_preset(GetParam());
  c.vocab_size = 10;
  Gpt model(c);
  EXPECT_THROW(model->forward(torch::zeros({1, c.context + 1}, torch::kLong)), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(Presets, EveryPreset, ::testing::ValuesIn(preset_names()),
                         [](const auto& info) { return info.param; });

// For each HSM mixer and 1..7 layers: the input positions whose gradient at output t is
// non-zero are exactly the receptive field of HSM §3 (zero outside, non-zero inside).
class GradientReceptiveField : public ::testing::TestWithParam<std::string> {};

TEST_P(GradientReceptiveField, MatchesTheComputedSet) {
  const std::string mixer = GetParam();
  const int64_t heads = mixer_info(mixer).multi_head ? 4 : 1;
  for (int64_t layers = 1; layers <= 7; ++layers) {
    ModelConfig c;
    c.vocab_size = 11;
    c.d_model = 16;
    c.context = 128;
    c.dropout = 0.0;
    for (int64_t l = 0; l < layers; ++l) c.layers.push_back({mixer, 16, heads});
    torch::manual_seed(10 + layers);
    Gpt model(c);
    model->to(torch::kFloat64);
    model->eval();
    {
      // Scalar/vector (a,b) weights well away from zero, so no path vanishes by accident
      // (the gates keep their small initial weights: a saturated tanh would close a branch).
      torch::NoGradGuard g;
      for (auto& p : model->named_parameters()) {
        const auto& k = p.key();
        if (k.size() > 8 && (k.substr(k.size() - 8) == ".mixer.a" || k.substr(k.size() - 8) == ".mixer.b"))
          p.value().uniform_(0.5, 1.5);
      }
    }
    const auto rf = receptive_field(c);
    auto idx = torch::randint(0, c.vocab_size, {1, c.context}, torch::kLong);
    for (int64_t t : {int64_t{5}, int64_t{77}, c.context - 1}) {
      auto h = model->embed(idx).detach().requires_grad_(true);  // [1, T, d]
      model->forward_embedded(h)[0][t].sum().backward();
      auto reach = h.grad()[0].abs().sum(-1);  // [T]
      std::vector<bool> expected(c.context, false);
      for (int64_t k : rf.offsets(layers - 1, t)) expected[t - k] = true;
      for (int64_t j = 0; j < c.context; ++j) {
        const double g = reach[j].item<double>();
        if (expected[j])
          EXPECT_GT(g, 0.0) << mixer << " layers=" << layers << " t=" << t << " j=" << j;
        else
          EXPECT_EQ(g, 0.0) << mixer << " layers=" << layers << " t=" << t << " j=" << j;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HsmMixers, GradientReceptiveField,
                         ::testing::Values("hsm_ab", "hsm_ab_vec", "hsm_AB", "hsm_gate1", "hsm_gate2", "hsm_fusion",
                                           "hsm_ab_mh", "hsm_ab_mh_ext"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(DeconstructingAttention, GradientReceptiveField,
                         ::testing::Values("mlp", "taylor", "nonapprox", "rnd_emb_qk", "fixed_seq_qk", "static_emb_qk"),
                         [](const auto& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Extractors, GradientReceptiveField, ::testing::Values("she", "he", "we", "me"),
                         [](const auto& info) { return info.param; });

// The fused, chunked output layer + loss (lm_head.cpp) against the plain formula, with more
// rows than one chunk, in training (gradients) and evaluation.
TEST(LmHeadLoss, EqualsPlainCrossEntropyWithGradients) {
  torch::manual_seed(3);
  auto h = torch::randn({3, 700, 16}).requires_grad_(true);  // 2100 rows: three chunks
  auto w = (0.5 * torch::randn({50, 16})).requires_grad_(true);
  auto y = torch::randint(0, 50, {3, 700}, torch::kLong);
  auto h2 = h.detach().clone().requires_grad_(true), w2 = w.detach().clone().requires_grad_(true);
  auto loss = hsm::lm_head_loss(h, w, y);
  auto ref = torch::nn::functional::cross_entropy(torch::matmul(h2, w2.t()).view({-1, 50}), y.view({-1}));
  EXPECT_NEAR(loss.item<double>(), ref.item<double>(), 1e-5);
  (2.5 * loss).backward();
  (2.5 * ref).backward();
  EXPECT_TRUE(torch::allclose(h.grad(), h2.grad(), 1e-4, 1e-6));
  EXPECT_TRUE(torch::allclose(w.grad(), w2.grad(), 1e-4, 1e-6));
  torch::NoGradGuard no_grad;
  EXPECT_NEAR(hsm::lm_head_loss(h, w, y).item<double>(), ref.item<double>(), 1e-5);
}

// MixerImpl::reads_input_through_products_only() lets the LayerNorm before a mixer write its output
// in bf16 under autocast (model.cpp, add_then_norm): it must be true only where forward(x) reads x
// through matrix products alone. What that means, checked: with column j of every weight that reads
// a d-wide input zeroed, x[..., j] no longer moves the output. Every mixer of the registry that
// claims it is checked, and the check itself tells hsm_ab (which mixes x itself) apart.
TEST(MixerInput, OnlyMixersThatReadItThroughProductsClaimSo) {
  constexpr int64_t kD = 32, kT = 16, kChannel = 3;
  auto build = [&](const std::string& id) {
    const LayerSpec spec{id, 64, mixer_info(id).multi_head ? 4 : 1};
    torch::manual_seed(5);
    auto m = make_mixer(spec, 1, kD, 0.0, kT);
    m->eval();
    return m;
  };
  auto ignores_a_channel_no_weight_reads = [&](const std::shared_ptr<MixerImpl>& m) {
    torch::NoGradGuard no_grad;
    for (auto& p : m->parameters())
      if (p.dim() == 2 && p.size(1) == kD) p.select(1, kChannel).zero_();
    const auto x = torch::randn({2, kT, kD});
    auto moved = x.clone();
    moved.select(2, kChannel).add_(5.0);
    return torch::allclose(m->forward(x), m->forward(moved), 1e-6, 1e-6);
  };
  int claimed = 0;
  for (const MixerInfo& info : all_mixers()) {
    const auto m = build(info.id);
    if (!m->reads_input_through_products_only()) continue;
    ++claimed;
    EXPECT_TRUE(ignores_a_channel_no_weight_reads(m)) << info.id << " claims to read x only through products";
  }
  EXPECT_GT(claimed, 0) << "attention claims it";
  EXPECT_TRUE(build("attn")->reads_input_through_products_only());
  const auto hsm_ab = build("hsm_ab");
  EXPECT_FALSE(hsm_ab->reads_input_through_products_only());
  EXPECT_FALSE(ignores_a_channel_no_weight_reads(hsm_ab)) << "the check tells a mixer that reads x itself apart";
}

// The stack a CUDA step that learns runs (GptImpl::run_blocks_joined: each residual add joined to
// the LayerNorm after it, BlockImpl::forward_joined) is the plain one, run_blocks then ln_f: the
// same output and the same gradients, with dropout drawing the same masks in the same order. On the
// CPU both take the unjoined operations, so this checks the wiring: which LayerNorm follows which
// add, the last one ln_f, the dropout of each residual, mixers of three kinds.
TEST(JoinedStack, IsTheBlocksThenTheFinalNormWithTheSameGradients) {
  ModelConfig c;
  c.name = "joined";
  c.vocab_size = 40;
  c.d_model = 24;
  c.context = 16;
  c.dropout = 0.2;
  c.layers = {LayerSpec{"hsm_ab", 48, 1}, LayerSpec{"attn", 48, 2}, LayerSpec{"hsm_ab_vec", 48, 1}};
  torch::manual_seed(5);
  Gpt model(c);
  {  // LayerNorms apart from one another (at init every one is the identity map, weight 1, bias 0)
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.add_(torch::randn_like(p) * 0.2);
  }
  model->train();
  const auto h0 = torch::randn({3, 16, 24});
  const auto up = torch::randn({3, 16, 24});
  auto blocks_then_norm = [&](torch::Tensor h) {  // run_blocks' loop for a plain stack, then ln_f
    for (auto& block : model->blocks) h = block->forward(h);
    return model->ln_f->forward(h);
  };
  auto run = [&](bool joined) {
    model->zero_grad();
    torch::manual_seed(9);  // the same dropout seeds, drawn in the same order
    const auto h = h0.clone().requires_grad_(true);
    const auto out = joined ? model->run_blocks_joined(h) : blocks_then_norm(h);
    (out * up).sum().backward();
    std::vector<torch::Tensor> grads = {out.detach().clone(), h.grad().clone()};
    for (const auto& p : model->parameters())  // the embeddings get none: h is given
      grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return grads;
  };
  const auto joined = run(true), plain = run(false);
  ASSERT_EQ(joined.size(), plain.size());
  EXPECT_GT((joined[0] - model->ln_f->forward(h0)).abs().max().item<double>(), 1e-3) << "the blocks did something";
  for (size_t i = 0; i < joined.size(); ++i)
    EXPECT_TRUE(torch::allclose(joined[i], plain[i], 1e-5, 1e-6)) << (i == 0 ? "output" : i == 1 ? "input gradient" : "a parameter's gradient");
  model->eval();
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(torch::allclose(model->run_blocks_joined(h0), blocks_then_norm(h0), 1e-5, 1e-6))
      << "evaluation (no dropout)";
}
