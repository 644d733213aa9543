// The Extractors (EX §5): each forward against a naive loop over eq. 23–29; the ring past
// the context; the model's sliding window; parameter counts, cost, receptive fields; the
// "ex" initialisation; EX Table 1's presets; save/load; a tiny model that learns.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <filesystem>

#include "eval/mixing_matrix.h"
#include "hsm/cost.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/receptive_field.h"
#include "model/weights_io.h"
#include "model/mixers/extractors.h"
#include "model/mixers/lag_mix.h"
#include "model/model.h"
#include "model_test_util.h"

using namespace hsm;

namespace {

constexpr int64_t kD = 6, kB = 2;
const std::vector<std::string> kExtractors = {"she", "he", "we", "me"};

std::shared_ptr<ExtractorImpl> build(const std::string& id, int64_t context) {
  auto m = std::dynamic_pointer_cast<ExtractorImpl>(make_mixer({id, 32, 1}, 0, kD, 0.0, context));
  m->to(torch::kFloat64);
  m->eval();
  torch::NoGradGuard no_grad;
  for (auto& p : m->parameters()) p.copy_(torch::randn_like(p) * 0.5);  // away from the small init
  return m;
}

// Eq. 23–29 written out: out_ext_i = Σ_{j ≤ i, i−j < l} f_{i−j+1}(u_j), one position at a time.
torch::Tensor naive(ExtractorImpl& m, const torch::Tensor& x) {
  const int64_t T = x.size(1), l = m.context;
  auto u = x;
  if (auto* he = dynamic_cast<HeImpl*>(&m)) u = torch::matmul(x, he->in_ext->weight.t());  // eq. 27
  std::vector<torch::Tensor> rows;
  for (int64_t i = 0; i < T; ++i) {
    auto e = torch::zeros({x.size(0), x.size(2)}, x.options());
    for (int64_t j = std::max<int64_t>(0, i - l + 1); j <= i; ++j) {
      const int64_t k = i - j;  // w_{k+1}
      if (auto* she = dynamic_cast<SheImpl*>(&m))
        e = e + torch::matmul(u.select(1, j), she->w_ext[k]);  // eq. 23
      else if (auto* we = dynamic_cast<WeImpl*>(&m))
        e = e + u.select(1, j) * we->w_ext[k];  // eq. 26, 28
      else
        e = e + dynamic_cast<MeImpl&>(m).w_ext[k] * u.select(1, j);  // eq. 29
    }
    if (m.adj) {
      auto adjusted = torch::matmul(x.select(1, i), m.adj->weight.t()) * e;  // eq. 24
      e = torch::matmul(adjusted, m.out->weight.t());                        // eq. 25
    }
    rows.push_back(e);
  }
  return torch::stack(rows, 1);
}

ModelConfig tiny(const std::string& mixer, int64_t layers = 2, int64_t context = 8) {
  ModelConfig c;
  c.vocab_size = 23;
  c.d_model = 8;
  c.context = context;
  c.dropout = 0.0;
  for (int64_t l = 0; l < layers; ++l) c.layers.push_back({mixer, 16, 1});
  return c;
}

class Extractor : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(Extractor, ForwardIsTheNaiveLoopOfThePaper) {
  torch::manual_seed(1);
  for (int64_t T : {1, 5, 9}) {  // shorter than, equal to... and longer than l = 5 (a sliding window)
    auto m = build(GetParam(), 5);
    auto x = torch::randn({kB, T, kD}, torch::kFloat64);
    auto got = m->forward(x), want = naive(*m, x);
    EXPECT_TRUE(torch::allclose(got, want, 1e-10, 1e-12)) << GetParam() << " T=" << T << "\n" << got - want;
  }
}

// Past 256 positions WE and HE switch from the Toeplitz product to a convolution: it gives
// the paper's sums and stays causal through its gradient.
TEST_P(Extractor, LongSequencesEqualTheNaiveLoopAndStayCausal) {
  torch::manual_seed(2);
  auto m = build(GetParam(), 300);
  for (int64_t T : {256, 257, 300}) {
    auto x = torch::randn({1, T, kD}, torch::kFloat64).requires_grad_();
    auto got = m->forward(x);
    torch::Tensor want;
    {
      torch::NoGradGuard no_grad;
      want = naive(*m, x.detach());
    }
    EXPECT_TRUE(torch::allclose(got, want, 1e-9, 1e-11)) << GetParam() << " T=" << T;
    // The last input reaches only the last output: the convolution stays causal.
    auto last = torch::autograd::grad({got.select(1, T - 2).sum()}, {x})[0];
    EXPECT_EQ(last.select(1, T - 1).abs().sum().item<double>(), 0.0) << GetParam();
  }
}

TEST_P(Extractor, StepsThroughTheRingEqualTheForwardPastTheContext) {
  // 13 positions through a ring of l = 5: the window slides, old inputs are overwritten.
  torch::manual_seed(2);
  auto m = build(GetParam(), 5);
  torch::NoGradGuard no_grad;
  auto x = torch::randn({kB, 13, kD}, torch::kFloat64);
  auto full = m->forward(x);
  auto cache_state = m->make_state();
  MixerState& cache = *cache_state;
  for (int64_t t = 0; t < 13; ++t)
    ASSERT_TRUE(torch::allclose(m->step(x.select(1, t), cache, t, 5), full.select(1, t), 1e-10, 1e-12)) << t;
  for (int64_t prefix : {3, 5, 8}) {  // prefill leaves the ring as the steps would
    auto c2_state = m->make_state();
    MixerState& c2 = *c2_state;
    ASSERT_TRUE(torch::allclose(m->prefill(x.narrow(1, 0, prefix), c2, 5), full.narrow(1, 0, prefix), 1e-10, 1e-12));
    for (int64_t t = prefix; t < 13; ++t)
      ASSERT_TRUE(torch::allclose(m->step(x.select(1, t), c2, t, 5), full.select(1, t), 1e-10, 1e-12))
          << "prefix " << prefix << " t " << t;
  }
}

TEST_P(Extractor, ModelDecodingSlidesItsWindowLikeTheUncachedForward) {
  // As the session does past the context: drop the oldest tokens, prefill the rest, go on.
  torch::manual_seed(3);
  const auto c = tiny(GetParam(), 3, 8);
  Gpt model(c);
  model->to(torch::kFloat64);
  model->eval();
  torch::NoGradGuard no_grad;
  for (auto& p : model->named_parameters())
    if (p.key().find(".mixer.") != std::string::npos) p.value().copy_(torch::randn_like(p.value()) * 0.5);
  auto idx = torch::randint(0, c.vocab_size, {kB, 21}, torch::kLong);
  const int64_t slide = 3;
  int64_t start = 0;
  DecodeState state;
  model->prefill(idx.narrow(1, 0, 2), state);
  for (int64_t t = 2; t < 21; ++t) {
    if (t - start == c.context) {
      start += slide;
      state = DecodeState();
      model->prefill(idx.narrow(1, start, t - start), state);
    }
    auto cached = model->step(idx.select(1, t), state);
    auto uncached = model->forward(idx.narrow(1, start, t - start + 1)).select(1, -1);
    ASSERT_TRUE(torch::allclose(cached, uncached, 1e-9, 1e-10)) << GetParam() << " t=" << t;
  }
}

TEST_P(Extractor, ParameterCountsAreEXTablesThreeAndFour) {
  const int64_t d = 128, l = 128;
  const std::map<std::string, int64_t> paper = {
      {"she", l * d * d + 2 * d * d}, {"he", l * d + 3 * d * d}, {"we", l * d + 2 * d * d}, {"me", l}};
  EXPECT_EQ(mixer_params(GetParam(), d, 1, l), paper.at(GetParam()));
  EXPECT_THROW(mixer_params(GetParam(), d, 1), std::invalid_argument);  // no context given
  auto m = make_mixer({GetParam(), 512, 1}, 3, 24, 0.1, 10);
  EXPECT_EQ(test::numel(*m), mixer_params(GetParam(), 24, 1, 10));
  for (int64_t layers : {1, 3}) {
    Gpt model(tiny(GetParam(), layers));
    EXPECT_EQ(test::numel(*model), count_params(tiny(GetParam(), layers)).total());
  }
  EXPECT_THROW(make_mixer({GetParam(), 512, 1}, 0, 24, 0.1), std::invalid_argument);
}

TEST_P(Extractor, CostFollowsTheInferenceTables) {
  const int64_t d = 128;
  const std::map<std::string, int64_t> at64 = {{"she", 64 * d * d + 2 * d * d + d},
                                               {"he", 64 * d + 3 * d * d + d},
                                               {"we", 64 * d + 2 * d * d + d},
                                               {"me", 64 * d}};
  EXPECT_EQ(mixer_macs_per_token(GetParam(), d, 1, 64), at64.at(GetParam()));
  const int64_t growth = mixer_macs_per_token(GetParam(), d, 1, 1024) - mixer_macs_per_token(GetParam(), d, 1, 64);
  EXPECT_EQ(growth, (1024 - 64) * (GetParam() == "she" ? d * d : d));  // linear in T like attention
}

TEST_P(Extractor, ReceptiveFieldIsEveryEarlierPositionFromTheFirstLayer) {
  const auto rf = receptive_field(tiny(GetParam(), 2, 16));
  for (size_t l = 0; l < 2; ++l) EXPECT_EQ(rf.coverage(l), 16);
  EXPECT_EQ(rf.offsets(0, 4), (std::vector<int64_t>{0, 1, 2, 3, 4}));
}

// The Weights view's curve: one number per lag k = 1..l, from the layer's own w_k / W_k.
TEST_P(Extractor, MixerWeightsGiveOneWeightPerLag) {
  torch::manual_seed(3);
  Gpt model(tiny(GetParam(), 2, 8));
  const auto weights = mixer_weights(model);
  ASSERT_EQ(weights.size(), 2U);
  for (const MixerWeights& w : weights) {
    ASSERT_EQ(w.lag_weights.size(), 8U) << GetParam();
    EXPECT_TRUE(w.a.empty());
    const auto& mixer = *model->blocks[static_cast<size_t>(w.layer)]->mixer;
    torch::Tensor expected;
    if (auto* me = dynamic_cast<const MeImpl*>(&mixer)) expected = me->w_ext;
    if (auto* we = dynamic_cast<const WeImpl*>(&mixer)) expected = we->w_ext.abs().mean(1);
    if (auto* she = dynamic_cast<const SheImpl*>(&mixer)) expected = she->w_ext.pow(2).mean({1, 2}).sqrt();
    ASSERT_TRUE(expected.defined());
    for (int64_t k = 0; k < 8; ++k) EXPECT_NEAR(w.lag_weights[k], expected[k].item<double>(), 1e-6) << k;
  }
  Gpt attention(tiny("attn", 1, 8));
  EXPECT_TRUE(mixer_weights(attention)[0].lag_weights.empty());
}

TEST_P(Extractor, SaveLoadRoundTrip) {
  torch::manual_seed(4);
  auto c = tiny(GetParam());
  c.init = "ex";
  const std::string dir = ::testing::TempDir() + "/ex_" + GetParam();
  std::filesystem::create_directories(dir);
  Gpt a(c), b(c);
  save_weights(a, dir + "/model.safetensors");
  save_config(c, dir + "/config.json");
  ASSERT_EQ(load_config(dir + "/config.json"), c);
  load_weights(b, dir + "/model.safetensors");
  a->eval();
  b->eval();
  auto idx = torch::randint(0, c.vocab_size, {1, c.context}, torch::kLong);
  EXPECT_TRUE(torch::equal(a->forward(idx), b->forward(idx)));
}

TEST_P(Extractor, TinyModelLearnsARepeatingSequence) {
  // Next token = the token 3 back: only a mixer that reads earlier positions can learn it.
  torch::manual_seed(5);
  auto c = tiny(GetParam(), 2, 12);
  c.d_model = 16;
  Gpt model(c);
  auto base = torch::randint(0, c.vocab_size, {16, 3}, torch::kLong);
  auto seq = base.repeat({1, 5});  // [16, 15]
  const auto [first, last] = test::train_steps(model, seq.narrow(1, 0, 12), seq.narrow(1, 1, 12), 60, 1e-2);
  EXPECT_LT(last, 0.5 * first) << GetParam() << ": " << first << " -> " << last;
}

INSTANTIATE_TEST_SUITE_P(Extractors, Extractor, ::testing::ValuesIn(kExtractors),
                         [](const auto& info) { return info.param; });

TEST(ExtractorInit, ExInitIsNormalPointZeroOneAndZeroBiases) {
  torch::manual_seed(6);
  ModelConfig c = tiny("he", 2, 32);
  c.d_model = 64;
  c.layers.push_back({"attn", 64, 4});
  c.init = "ex";
  Gpt model(c);
  for (const auto& p : model->named_parameters()) {
    const auto& k = p.key();
    const auto& v = p.value();
    if (k.find("ln") != std::string::npos)
      EXPECT_TRUE(torch::equal(v, k.find("weight") != std::string::npos ? torch::ones_like(v) : torch::zeros_like(v)))
          << k;
    else if (k.size() > 4 && k.substr(k.size() - 4) == "bias")
      EXPECT_EQ(v.abs().max().item<double>(), 0.0) << k;
    else if (v.numel() >= 1000)
      EXPECT_NEAR(v.std().item<double>(), 0.01, 0.002) << k;
  }
  // The default keeps GPT-2's init: N(0, 0.02) embeddings.
  c.init = "gpt2";
  Gpt gpt2(c);
  EXPECT_NEAR(gpt2->tok_emb->weight.std().item<double>(), 0.02, 0.003);
}

TEST(ExtractorInit, ConfigFieldRoundTripsAndIsValidated) {
  ModelConfig c = tiny("me");
  EXPECT_EQ(to_json(c).find("\"init\""), std::string::npos);  // default: not written
  c.init = "ex";
  EXPECT_NE(to_json(c).find("\"init\": \"ex\""), std::string::npos);
  EXPECT_EQ(config_from_json(to_json(c)), c);
  c.init = "xavier";
  EXPECT_THROW(validate(c), ConfigError);
  EXPECT_THROW(config_from_json(R"({"init": 3, "layers": [{"mixer": "me"}]})"), ConfigError);
  EXPECT_EQ(config_from_json(R"({"layers": [{"mixer": "she"}]})").layers[0].ffn, 512);  // EX Table 1
}

TEST(ExtractorPresets, AreEXTableOne) {
  const std::map<std::string, std::pair<std::string, int64_t>> want = {
      {"ex_she", {"she", 1}}, {"ex_he", {"he", 1}},      {"ex_we", {"we", 1}},
      {"ex_me", {"me", 1}},   {"ex_attn1", {"attn", 1}}, {"ex_attn32", {"attn", 32}}};
  const auto names = preset_names();
  for (const auto& [name, mixer] : want) {
    ASSERT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    const auto c = load_preset(name);
    EXPECT_EQ(c.vocab_size, 5000);
    EXPECT_EQ(c.context, 128);
    EXPECT_EQ(c.d_model, 128);
    EXPECT_DOUBLE_EQ(c.dropout, 0.1);
    EXPECT_EQ(c.init, "ex");
    ASSERT_EQ(c.layers.size(), 18u);
    for (const auto& l : c.layers) EXPECT_EQ(l, (LayerSpec{mixer.first, 512, mixer.second})) << name;
  }
  // 18 × (mixer + FFN 2·128·512 + 512 + 128 + norms 4·128) + embeddings 5000·128 + 128·128 + 2·128
  const int64_t rest = 18 * (2 * 128 * 512 + 512 + 128 + 4 * 128) + 5000 * 128 + 128 * 128 + 2 * 128;
  EXPECT_EQ(count_params(load_preset("ex_she")).total(), rest + 18 * (128 * 128 * 128 + 2 * 128 * 128));
  EXPECT_EQ(count_params(load_preset("ex_me")).total(), rest + 18 * 128);
  EXPECT_EQ(count_params(load_preset("ex_attn32")).total(), count_params(load_preset("ex_attn1")).total());
}

// The fp32 CPU kernels of the lag sums (lag_mix.h: blocks of lags as GEMMs for SHE, plain
// loops for HE/WE) against LibTorch's form in float64, values and both gradients, on shapes
// that take every edge: more lags than positions, a last block shorter than the others, one
// lag per block (a wide d), a single sequence, and on one and two threads.
TEST(LagMix, TheFp32KernelsEqualLibTorchsFormWithGradients) {
  struct Shape {
    int64_t B, T, d, K;
  };
  const int torch_threads = torch::get_num_threads();
  for (int threads : {1, 2})
    for (const Shape s : {Shape{2, 37, 24, 50}, Shape{3, 40, 16, 7}, Shape{1, 29, 300, 13}, Shape{4, 64, 32, 64}})
      for (const bool dense : {true, false}) {
        torch::set_num_threads(threads);
        torch::manual_seed(4);
        auto x = torch::randn({s.B, s.T, s.d});
        auto W = dense ? torch::randn({s.K, s.d, s.d}) * 0.2 : torch::randn({s.K, s.d});
        auto up = torch::randn({s.B, s.T, s.d});
        auto run = [&](torch::ScalarType type) {
          auto xi = x.to(type).detach().clone().requires_grad_(), Wi = W.to(type).detach().clone().requires_grad_();
          auto e = dense ? dense_lag_mix(xi, Wi) : depthwise_lag_mix(xi, Wi);
          (e * up.to(type)).sum().backward();
          return std::vector<torch::Tensor>{e.to(torch::kFloat64), xi.grad().to(torch::kFloat64),
                                            Wi.grad().to(torch::kFloat64)};
        };
        const auto got = run(torch::kFloat32), want = run(torch::kFloat64);
        const char* names[] = {"value", "input gradient", "weight gradient"};
        for (int i = 0; i < 3; ++i) {
          const double scale = want[i].abs().max().item<double>();
          EXPECT_LT((got[i] - want[i]).abs().max().item<double>(), 2e-5 * scale + 1e-6)
              << (dense ? "dense " : "depthwise ") << names[i] << " B" << s.B << " T" << s.T << " d" << s.d << " K"
              << s.K << " threads " << threads;
        }
      }
  torch::set_num_threads(torch_threads);
}
