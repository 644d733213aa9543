// The Deconstructing Attention mixers (DA §3; docs/mixers.md): exact formulas against naive
// loops, the chunked forms past one chunk, numerical stability, the QK-source plumbing of
// the model (rnd / fixed / static), the fixed sequence through save/load, the skip
// configuration, parameter counts, receptive fields, costs, and a tiny model that learns.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "eval/mixing_matrix.h"
#include "hsm/cost.h"
#include "hsm/params.h"
#include "hsm/presets.h"
#include "hsm/receptive_field.h"
#include "model/weights_io.h"
#include "model/mixers/gated_mlp.h"
#include "model/mixers/linear_attention.h"
#include "model/mixers/qk_source_attention.h"
#include "model/model.h"
#include "model_test_util.h"
#include "test_util.h"

using namespace hsm;

namespace {

const std::vector<std::string> kDaIds = {"mlp", "taylor", "nonapprox", "rnd_emb_qk", "fixed_seq_qk", "static_emb_qk"};

template <typename M>
std::shared_ptr<M> build_as(const std::string& id, int64_t d, int64_t heads) {
  auto m = std::dynamic_pointer_cast<M>(make_mixer(LayerSpec{id, 32, heads}, 0, d, 0.0));
  m->to(torch::kFloat64);
  m->eval();
  torch::NoGradGuard no_grad;
  for (auto& p : m->named_parameters()) p.value().normal_(0.0, 0.4);  // away from the tiny init
  return m;
}

// Per-head q, k, v of a fused Linear(d, 3d): [T, d] each, for batch row b.
std::vector<torch::Tensor> project(torch::nn::Linear& lin, const torch::Tensor& x, int64_t b) {
  return lin->forward(x[b]).chunk(3, -1);
}

// φ(x) = [1, x, vec(x ⊗ x)/√2] written out in full (hd² second-order features).
torch::Tensor naive_phi(const torch::Tensor& x) {
  return torch::cat({torch::ones({1}, x.options()), x, torch::outer(x, x).flatten() / std::sqrt(2.0)});
}

ModelConfig tiny(const std::vector<std::string>& mixers, int64_t context = 12) {
  ModelConfig c;
  c.vocab_size = 23;
  c.d_model = 16;
  c.context = context;
  c.dropout = 0.0;
  for (const auto& m : mixers) c.layers.push_back({m, 24, mixer_info(m).multi_head ? 4 : 1});
  return c;
}

Gpt tiny_model(const std::vector<std::string>& mixers, int64_t context = 12, uint64_t seed = 3) {
  torch::manual_seed(seed);
  Gpt model(tiny(mixers, context));
  model->to(torch::kFloat64);
  model->eval();
  return model;
}

}  // namespace

TEST(GatedMlp, IsTheGatedFormulaPositionByPosition) {
  auto m = build_as<GatedMlpImpl>("mlp", 8, 1);
  auto x = torch::randn({2, 5, 8}, torch::kFloat64);
  auto y = m->forward(x);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 5; ++t) {
      auto xt = x[b][t];
      auto g = torch::matmul(m->gate->weight, xt) + m->gate->bias;
      auto u = torch::matmul(m->up->weight, xt) + m->up->bias;
      auto expect = torch::matmul(m->down->weight, g * torch::sigmoid(g) * u) + m->down->bias;
      EXPECT_TRUE(torch::allclose(y[b][t], expect, 1e-10, 1e-12));
    }
}

TEST(GatedMlp, WidthMatchesAttentionsParameterCount) {
  EXPECT_EQ(gated_mlp_width(256), 341);  // 3·256·341 + 2·341 + 256 = 262 826 vs attention's 263 168
  for (int64_t d : {16, 64, 256, 512}) {
    const int64_t attn = mixer_params("attn", d, 8), f = gated_mlp_width(d);
    const int64_t err = std::llabs(mixer_params("mlp", d, 1) - attn);
    EXPECT_LE(err, std::llabs(3 * d * (f + 1) + 2 * (f + 1) + d - attn)) << d;
    EXPECT_LE(err, std::llabs(3 * d * (f - 1) + 2 * (f - 1) + d - attn)) << d;
  }
}

TEST(DaParams, MixerParamsEqualTheBuiltModules) {
  for (const auto& id : kDaIds)
    for (auto [d, h] : {std::pair<int64_t, int64_t>{256, 8}, {16, 4}, {24, 2}}) {
      const int64_t heads = mixer_info(id).multi_head ? h : 1;
      auto m = make_mixer(LayerSpec{id, 32, heads}, 0, d, 0.0);
      int64_t n = 0;
      for (const auto& p : m->parameters()) n += p.numel();
      EXPECT_EQ(mixer_params(id, d, heads), n) << id << " d=" << d;
      if (id != "mlp") EXPECT_EQ(n, mixer_params("attn", d, heads)) << id << ": DA matches attention strictly";
    }
}

// taylor against explicit φ(q)·φ(k) weights with full hd² features, normalised, for T past one
// chunk (the chunked form's state path) and within one.
TEST(Taylor, EqualsExplicitFeatureWeights) {
  const int64_t d = 6, H = 2, hd = 3;
  auto m = build_as<LinearAttentionImpl>("taylor", d, H);
  for (int64_t T : {int64_t{7}, LinearAttentionImpl::kChunk + 22}) {
    auto x = torch::randn({2, T, d}, torch::kFloat64) * 0.7;
    auto y = m->forward(x);
    auto w = m->attention_weights(x);  // [B, H, T, T]
    const double c = std::pow(static_cast<double>(hd), -0.25);
    for (int64_t b = 0; b < 2; ++b) {
      auto qkv = project(m->qkv, x, b);
      auto out = torch::zeros({T, d}, torch::kFloat64);
      for (int64_t h = 0; h < H; ++h) {
        auto q = qkv[0].narrow(1, h * hd, hd) * c, k = qkv[1].narrow(1, h * hd, hd) * c;
        auto v = qkv[2].narrow(1, h * hd, hd);
        for (int64_t i = 0; i < T; i += (T > 20 ? 13 : 1)) {
          auto row = torch::zeros({T}, torch::kFloat64);
          for (int64_t j = 0; j <= i; ++j) row[j] = torch::dot(naive_phi(q[i]), naive_phi(k[j]));
          row = row / row.sum();
          ASSERT_TRUE(torch::allclose(w[b][h][i], row, 1e-10, 1e-12)) << "T=" << T << " i=" << i;
          out[i].narrow(0, h * hd, hd).copy_(torch::matmul(row, v));
        }
      }
      auto expect = m->proj->forward(out);
      for (int64_t i = 0; i < T; i += (T > 20 ? 13 : 1))
        ASSERT_TRUE(torch::allclose(y[b][i], expect[i], 1e-9, 1e-11)) << "T=" << T << " i=" << i;
    }
  }
}

TEST(Taylor, FeatureMapKeepsTheDotProductWithFewerFeatures) {
  auto q = torch::randn({5}, torch::kFloat64), k = torch::randn({5}, torch::kFloat64);
  auto fq = taylor_features(q), fk = taylor_features(k);
  EXPECT_EQ(fq.size(0), taylor_feature_dim(5));
  const double s = torch::dot(q, k).item<double>();
  EXPECT_NEAR(torch::dot(fq, fk).item<double>(), 1 + s + s * s / 2, 1e-10);
  EXPECT_NEAR(torch::dot(fq, fk).item<double>(), torch::dot(naive_phi(q), naive_phi(k)).item<double>(), 1e-10);
  EXPECT_EQ(taylor_feature_dim(32), 561);
}

// nonapprox against eq. 7 directly: A[i, j] = e^{s_j} / Σ_{k<=i} e^{s_k}, s_j = Σ SiLU(q_j) ⊙ k_j / √hd.
TEST(NonApprox, EqualsEquationSeven) {
  const int64_t d = 8, H = 2, hd = 4;
  auto m = build_as<LinearAttentionImpl>("nonapprox", d, H);
  for (int64_t T : {int64_t{9}, LinearAttentionImpl::kChunk + 30}) {
    auto x = torch::randn({2, T, d}, torch::kFloat64);
    auto y = m->forward(x);
    auto w = m->attention_weights(x);
    for (int64_t b = 0; b < 2; ++b) {
      auto qkv = project(m->qkv, x, b);
      auto out = torch::zeros({T, d}, torch::kFloat64);
      for (int64_t h = 0; h < H; ++h) {
        auto q = qkv[0].narrow(1, h * hd, hd), k = qkv[1].narrow(1, h * hd, hd), v = qkv[2].narrow(1, h * hd, hd);
        std::vector<double> s(static_cast<size_t>(T));
        for (int64_t j = 0; j < T; ++j)
          s[j] = (torch::silu(q[j]) * k[j]).sum().item<double>() / std::sqrt(static_cast<double>(hd));
        for (int64_t i = 0; i < T; ++i) {
          double z = 0;
          for (int64_t j = 0; j <= i; ++j) z += std::exp(s[j]);
          auto row = torch::zeros({T}, torch::kFloat64);
          for (int64_t j = 0; j <= i; ++j) row[j] = std::exp(s[j]) / z;
          ASSERT_TRUE(torch::allclose(w[b][h][i], row, 1e-10, 1e-12)) << "i=" << i;
          out[i].narrow(0, h * hd, hd).copy_(torch::matmul(row, v));
        }
      }
      ASSERT_TRUE(torch::allclose(y[b], m->proj->forward(out), 1e-9, 1e-11)) << "T=" << T;
    }
  }
}

TEST(NonApprox, LargeScoresStayFiniteInFloat32AndDecodingAgrees) {
  auto m = build_as<LinearAttentionImpl>("nonapprox", 8, 2);
  m->to(torch::kFloat32);
  torch::NoGradGuard no_grad;
  m->qkv->weight.mul_(20.0);  // scores in the hundreds: e^s overflows without the running max
  auto x = torch::randn({1, 150, 8});
  auto y = m->forward(x);
  EXPECT_TRUE(torch::isfinite(y).all().item<bool>());
  auto cache_state = m->make_state();
  MixerState& cache = *cache_state;
  for (int64_t t = 0; t < 150; ++t) {
    auto yt = m->step(x.select(1, t), cache, t, 150);
    ASSERT_TRUE(torch::allclose(yt, y.select(1, t), 1e-3, 1e-3)) << t;
  }
}

// *_qk mixers: Q, K from the given stream, V from x, causal softmax (eq. 10, 12, 13); one
// [1, T, d] stream broadcast over the batch gives the same as that stream repeated.
TEST(QkSourceAttention, QueriesAndKeysFromTheSourceValuesFromX) {
  const int64_t d = 8, H = 2, hd = 4, T = 6;
  auto m = build_as<QkSourceAttentionImpl>("rnd_emb_qk", d, H);
  auto x = torch::randn({3, T, d}, torch::kFloat64), src = torch::randn({1, T, d}, torch::kFloat64);
  auto y = m->forward_qk(x, src);
  EXPECT_TRUE(torch::allclose(y, m->forward_qk(x, src.expand({3, T, d}).contiguous()), 1e-10, 1e-12));
  auto qk = m->qk->forward(src[0]).chunk(2, -1);
  auto v = m->value->forward(x);
  for (int64_t b = 0; b < 3; ++b) {
    auto out = torch::zeros({T, d}, torch::kFloat64);
    for (int64_t h = 0; h < H; ++h) {
      auto q = qk[0].narrow(1, h * hd, hd), k = qk[1].narrow(1, h * hd, hd);
      for (int64_t i = 0; i < T; ++i) {
        auto scores = torch::matmul(k.narrow(0, 0, i + 1), q[i]) / std::sqrt(static_cast<double>(hd));
        out[i]
            .narrow(0, h * hd, hd)
            .copy_(torch::matmul(torch::softmax(scores, 0), v[b].narrow(0, 0, i + 1).narrow(1, h * hd, hd)));
      }
    }
    EXPECT_TRUE(torch::allclose(y[b], m->proj->forward(out), 1e-10, 1e-12));
  }
}

// rnd / fixed: the QK stream of layer l is the fixed sequence run through blocks 0..l-1 (where
// a lower rnd layer takes Q, K from that same stream), so the attention maps do not depend on
// the input; static: the input embedding.
TEST(QkStreams, FixedSequenceThroughTheBlocksBelow) {
  for (const std::string id : {"rnd_emb_qk", "fixed_seq_qk"}) {
    auto model = tiny_model({id, "attn", id});
    if (id == "fixed_seq_qk") {
      std::vector<int64_t> toks;
      for (int64_t t = 0; t < 12; ++t) toks.push_back((t * 7 + 3) % 23);
      model->set_fixed_tokens(toks);
    }
    torch::NoGradGuard no_grad;
    auto idx = torch::randint(0, 23, {2, 10}, torch::kLong);
    auto streams = model->qk_streams(model->embed(idx), 10);
    ASSERT_EQ(streams.size(), 3u);
    auto x0 = id == "rnd_emb_qk" ? model->qk_random.narrow(0, 0, 10).unsqueeze(0)
                                 : model->embed(model->qk_tokens.narrow(0, 0, 10).unsqueeze(0));
    EXPECT_TRUE(torch::allclose(streams[0], x0));
    EXPECT_FALSE(streams[1].defined());
    auto s = model->blocks[1]->forward(model->blocks[0]->forward(x0));  // layer 0 self-sourced
    EXPECT_TRUE(torch::allclose(streams[2], s, 1e-10, 1e-12)) << id;
    // Input-independent maps: two prompts, the same matrices.
    auto d1 = diagnose_model(model, idx.narrow(0, 0, 1)), d2 = diagnose_model(model, idx.narrow(0, 1, 1));
    EXPECT_EQ(d1[2].heads[1].matrix, d2[2].heads[1].matrix) << id;
    EXPECT_NE(d1[1].heads[1].matrix, d2[1].heads[1].matrix) << "attention's do depend on the input";
  }
  auto model = tiny_model({"attn", "static_emb_qk"});
  auto idx = torch::randint(0, 23, {2, 10}, torch::kLong);
  auto e = model->embed(idx);
  EXPECT_TRUE(torch::equal(model->qk_streams(e, 10)[1], e));
}

TEST(QkStreams, FixedTokensChangeTheOutputAndSurviveSaveLoad) {
  auto model = tiny_model({"fixed_seq_qk", "attn", "rnd_emb_qk"});
  std::vector<int64_t> toks;
  for (int64_t t = 0; t < 12; ++t) toks.push_back((t * 5 + 1) % 23);
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(0, 23, {1, 12}, torch::kLong);
  auto before = model->forward(idx);
  model->set_fixed_tokens(toks);
  EXPECT_EQ(model->fixed_tokens(), toks);
  auto after = model->forward(idx);
  EXPECT_FALSE(torch::allclose(before, after));
  const std::string dir = test::fresh_temp_dir("da_", "save");
  model->to(torch::kFloat32);
  save_weights(model, dir + "/model.safetensors");
  auto loaded = tiny_model({"fixed_seq_qk", "attn", "rnd_emb_qk"}, 12, 99);
  loaded->to(torch::kFloat32);
  EXPECT_NE(loaded->fixed_tokens(), toks);
  load_weights(loaded, dir + "/model.safetensors");
  EXPECT_EQ(loaded->fixed_tokens(), toks);
  EXPECT_TRUE(torch::equal(loaded->qk_random, model->qk_random));
  EXPECT_TRUE(torch::equal(loaded->forward(idx), model->forward(idx)));
  EXPECT_THROW(model->set_fixed_tokens({1, 2}), std::invalid_argument);
}

// DA's skip: a skipped layer is the identity on the residual stream; the model equals one
// built without those blocks (same weights), in forward and in cached decoding.
TEST(SkipLayers, EqualsTheModelWithoutThoseBlocks) {
  auto full = tiny_model({"nonapprox", "attn", "rnd_emb_qk", "attn"});
  auto without = tiny_model({"attn", "attn"}, 12, 77);
  {
    torch::NoGradGuard no_grad;
    auto src = full->named_parameters();
    for (auto& p : without->named_parameters()) {
      std::string key = p.key();
      if (key.rfind("blocks.0.", 0) == 0)
        key = "blocks.1." + key.substr(9);
      else if (key.rfind("blocks.1.", 0) == 0)
        key = "blocks.3." + key.substr(9);
      p.value().copy_(src[key]);
    }
  }
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(0, 23, {2, 12}, torch::kLong);
  auto logits_full = full->forward(idx);
  full->set_skipped_layers({0, 2});
  auto skipped = full->forward(idx);
  EXPECT_FALSE(torch::allclose(skipped, logits_full));
  EXPECT_TRUE(torch::allclose(skipped, without->forward(idx), 1e-10, 1e-12));
  DecodeState st;
  for (int64_t t = 0; t < 12; ++t)
    ASSERT_TRUE(torch::allclose(full->step(idx.select(1, t), st), skipped.select(1, t), 1e-9, 1e-9)) << t;
  EXPECT_THROW(full->set_skipped_layers({4}), std::invalid_argument);
  full->set_skipped_layers({});
  EXPECT_TRUE(torch::allclose(full->forward(idx), logits_full));
}

// Decoding a model that mixes every DA source (and attention) equals the full forward, also
// after a prefill, with batch 2 (the rnd/fixed Q, K computed once and shared).
TEST(DaDecoding, MixedStackEqualsFullForward) {
  auto model = tiny_model({"static_emb_qk", "rnd_emb_qk", "taylor", "fixed_seq_qk", "nonapprox", "mlp", "attn"}, 16);
  torch::NoGradGuard no_grad;
  auto idx = torch::randint(0, 23, {2, 16}, torch::kLong);
  auto full = model->forward(idx);
  DecodeState st;
  auto first = model->prefill(idx.narrow(1, 0, 5), st);
  EXPECT_TRUE(torch::allclose(first, full.select(1, 4), 1e-9, 1e-9));
  for (int64_t t = 5; t < 16; ++t)
    ASSERT_TRUE(torch::allclose(model->step(idx.select(1, t), st), full.select(1, t), 1e-9, 1e-9)) << t;
  EXPECT_EQ(state_of<QkSourceState>(*st.layers[1]).q.size(0), 1) << "rnd's queries are shared by the batch";
}

TEST(DaDiagnostics, EveryMixerGivesRowStochasticCausalMatrices) {
  for (const auto& id : kDaIds) {
    auto model = tiny_model({id, "attn", id});
    auto layers = diagnose_model(model, torch::randint(0, 23, {1, 9}, torch::kLong));
    ASSERT_EQ(layers.size(), 3u);
    EXPECT_EQ(layers[0].kind, id == "mlp" ? MatrixKind::kJacobian : MatrixKind::kAttention) << id;
    EXPECT_EQ(static_cast<int64_t>(layers[0].heads.size()), id == "mlp" ? 1 : 4);
    for (const auto& head : layers[2].heads) {
      auto A = torch::tensor(head.matrix, torch::kFloat64).view({9, 9});
      EXPECT_TRUE(torch::allclose(A.sum(-1), torch::ones({9}, torch::kFloat64), 1e-5, 1e-6)) << id;
      EXPECT_EQ(A.triu(1).abs().sum().item<double>(), 0.0) << id;
      EXPECT_GE(A.min().item<double>(), 0.0) << id;
      if (id == "mlp") EXPECT_TRUE(torch::allclose(A, torch::eye(9, torch::kFloat64))) << id;
    }
  }
}

TEST(DaArch, ReceptiveFieldCostAndCache) {
  ModelConfig c = tiny({"mlp", "mlp"}, 32);
  EXPECT_EQ(receptive_field(c).coverage(1), 1) << "mlp reads only its own position";
  for (const std::string id : {"taylor", "nonapprox", "rnd_emb_qk", "fixed_seq_qk", "static_emb_qk"})
    EXPECT_EQ(receptive_field(tiny({id}, 32)).coverage(0), 32) << id;
  EXPECT_EQ(receptive_field(tiny({"mlp", "hsm_ab"}, 32)).coverage(1), 2);
  for (const std::string id : {"mlp", "taylor", "nonapprox"}) {
    EXPECT_EQ(mixer_macs_per_token(id, 256, 8, 128), mixer_macs_per_token(id, 256, 8, 4096)) << id;
    EXPECT_EQ(mixer_cache_floats(id, 256, 8, 0, 128, 1), mixer_cache_floats(id, 256, 8, 0, 4096, 1)) << id;
  }
  EXPECT_EQ(mixer_macs_per_token("static_emb_qk", 256, 8, 100), mixer_macs_per_token("attn", 256, 8, 100));
  EXPECT_EQ(mixer_macs_per_token("rnd_emb_qk", 256, 8, 100), 2 * 256 * 256 + 2 * 100 * 256);
  EXPECT_EQ(mixer_cache_floats("attn", 256, 8, 0, 128, 4), 2 * 4 * 128 * 256);
  EXPECT_EQ(mixer_cache_floats("fixed_seq_qk", 256, 8, 0, 128, 4), (4 + 2) * 128 * 256);
  EXPECT_EQ(mixer_cache_floats("nonapprox", 256, 8, 0, 128, 1), 8 * (32 + 2));
  EXPECT_EQ(mixer_cache_floats("taylor", 256, 8, 0, 128, 1), 8 * 561 * 33);
  EXPECT_EQ(mixer_cache_floats("mlp", 256, 8, 0, 128, 1), 0);
  EXPECT_EQ(mixer_cache_floats("hsm_ab", 256, 1, 3, 128, 1), 8 * 256);
  EXPECT_EQ(mixer_cache_floats("hsm_ab_mh_ext", 256, 8, 3, 128, 2), 2 * 128 * 256);  // the largest shift, 2^7
  EXPECT_EQ(mixer_cache_floats("she", 256, 1, 0, 128, 2), 2 * 128 * 256);            // the window of T inputs
  // A DA mixer at layer 7 of a context-128 model is fine (no shift to check).
  ModelConfig deep = tiny({"taylor", "taylor", "taylor", "taylor", "taylor", "taylor", "taylor", "taylor"}, 8);
  EXPECT_NO_THROW(validate(deep));
}

TEST(DaPresets, UniformAndHybridAtPaperSize) {
  const int64_t gpt = count_params(load_preset("gpt")).total();
  for (const auto& id : kDaIds) {
    const auto uni = load_preset("da_" + id), hyb = load_preset("da_hybrid_" + id);
    ASSERT_EQ(uni.layers.size(), 7u);
    for (size_t l = 0; l < 7; ++l) {
      EXPECT_EQ(uni.layers[l].mixer, id);
      EXPECT_EQ(hyb.layers[l].mixer, l % 2 == 0 ? id : "attn") << "0-based even = the paper's odd layers";
    }
    const int64_t per_layer_gap = id == "mlp" ? 342 : 0;
    EXPECT_EQ(gpt - count_params(uni).total(), 7 * per_layer_gap) << id;
    EXPECT_EQ(gpt - count_params(hyb).total(), 4 * per_layer_gap) << id;
  }
}

// A tiny model with every DA mixer learns a repeating sequence: its loss falls.
TEST(DaTraining, TinyModelLossFalls) {
  torch::manual_seed(1);
  Gpt model(tiny({"mlp", "taylor", "nonapprox", "rnd_emb_qk", "fixed_seq_qk", "static_emb_qk"}, 16));
  auto seq = torch::arange(0, 17, torch::kLong).remainder(5).unsqueeze(0).repeat({4, 1});
  const auto [first, last] = test::train_steps(model, seq.narrow(1, 0, 16), seq.narrow(1, 1, 16), 40, 3e-3);
  EXPECT_LT(last, 0.5 * first) << first << " -> " << last;
}
