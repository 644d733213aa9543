// Information flow routes (issue 51, hsm/routes.h). An HSM stack's mixer edges are exactly its
// shifts (the receptive field); a 1-layer attention model's weights are recomputed here from the
// attention matrix and the value vectors by hand; pruning keeps what the threshold says; a
// knocked-out mixer carries nothing.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "hsm/mixer_kind.h"
#include "hsm/model.h"
#include "hsm/trace.h"
#include "hsm/trainer.h"
#include "hsm/what_if.h"
#include "inference/model_impl.h"
#include "model/mixers/attention.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;

namespace {

constexpr const char* kPrompt = "Once upon a time, Lily saw a red ball. She liked the ball very much.";

// A run of `layers` trained 10 steps, its folder made once per suite.
std::string trained_run(const std::string& name, const std::vector<LayerSpec>& layers) {
  const std::string dir = temp_dir(name);
  RunSpec spec = tiny_run(dir, make_corpus(dir), 10);
  spec.model.layers = layers;
  Trainer(spec).run();
  return spec.run_dir;
}

// The weights into each node (layer, to), summed.
std::map<std::pair<int64_t, int64_t>, double> sums_into(const Routes& r) {
  std::map<std::pair<int64_t, int64_t>, double> s;
  for (const RouteEdge& e : r.edges) s[{e.layer, e.to}] += e.weight;
  return s;
}

class HsmRoutes : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = new std::string(trained_run("routes_hsm", {{"hsm_ab", 64, 1}, {"hsm_ab", 64, 1}, {"hsm_ab", 64, 1},
                                                      {"hsm_ab_mh_ext", 64, 4}, {"hsm_ab", 64, 1}}));
  }
  static std::string* run_;
};
std::string* HsmRoutes::run_ = nullptr;

TEST_F(HsmRoutes, EveryMixerEdgeIsAShiftOfItsLayer) {
  const auto model = Model::load(*run_, "cpu");
  const Tracer tracer(model);
  const auto tokens = tracer.text_request(kPrompt, kPrompt).clean;
  const Routes r = tracer.routes(tokens);
  const ModelConfig& c = model->config();
  ASSERT_EQ(r.layers, 5);
  ASSERT_GT(r.positions, 16) << "a prompt longer than layer 4's shift";
  for (int64_t l = 0; l < r.layers; ++l) {
    const LayerSpec& spec = c.layers[static_cast<size_t>(l)];
    std::set<int64_t> offsets{0};  // the own term, and each head's shift
    for (int64_t s : layer_shifts(mixer_info(spec.mixer).kind, l, spec.heads)) offsets.insert(s);
    std::set<std::pair<int64_t, int64_t>> seen;
    for (const RouteEdge& e : r.edges) {
      if (e.layer != l || e.kind != RouteKind::kMixer) continue;
      EXPECT_TRUE(offsets.count(e.to - e.from)) << "layer " << l << ": an edge " << e.from << " -> " << e.to
                                                << " that no shift of the layer makes";
      seen.insert({e.from, e.to});
    }
    // And every edge the shifts make is there, wherever the shifted position is in the prompt.
    for (int64_t i = 0; i <= r.answer_position; ++i)
      for (int64_t k : offsets)
        if (i - k >= 0)
          EXPECT_TRUE(seen.count({i - k, i})) << "layer " << l << ": no edge " << i - k << " -> " << i;
  }
  for (const auto& [node, sum] : sums_into(r)) EXPECT_NEAR(sum, 1.0, 1e-9) << "layer " << node.first;
}

// Threshold 0 keeps every edge into a node the output reaches, computed here top-down; above
// 1, none; in between, only edges at or above it, each into a node a kept edge reached.
TEST_F(HsmRoutes, PruningKeepsTheReachableEdgesAtOrAboveTheThreshold) {
  const Tracer tracer(Model::load(*run_, "cpu"));
  const Routes r = tracer.routes(tracer.text_request(kPrompt, kPrompt).clean, 9);
  EXPECT_EQ(r.answer_position, 9);
  for (const RouteEdge& e : r.edges) EXPECT_LE(e.to, 9) << "no node after the answer is made";
  for (double threshold : {0.0, 0.05, 0.3}) {
    std::set<std::pair<int64_t, int64_t>> reached{{r.layers, 9}};
    size_t expected = 0;
    for (int64_t l = r.layers - 1; l >= 0; --l)
      for (const RouteEdge& e : r.edges)
        if (e.layer == l && reached.count({l + 1, e.to}) && e.weight >= threshold) {
          ++expected;
          reached.insert({l, e.from});
        }
    const auto kept = prune_routes(r, threshold);
    EXPECT_EQ(kept.size(), expected) << "threshold " << threshold;
    std::set<std::pair<int64_t, int64_t>> into{{r.layers, 9}};
    for (const RouteEdge& e : kept) {
      EXPECT_GE(e.weight, threshold);
      EXPECT_TRUE(reached.count({e.layer + 1, e.to}));
    }
    if (threshold == 0.0) {
      EXPECT_GT(kept.size(), 3u * static_cast<size_t>(r.layers)) << "the whole cone below the output";
      EXPECT_EQ(reached.count({0, 9 - 1 - 2 - 4}), 1u) << "offset 7 = 1 + 2 + 4 reaches the output";
    }
  }
  EXPECT_TRUE(prune_routes(r, 1.0 + 1e-9).empty());
}

TEST_F(HsmRoutes, AKnockedOutMixerHasNoEdge) {
  WhatIf edit;
  edit.knock_out.push_back({2, -1});
  const Tracer tracer(Model::load(*run_, "cpu")->edited(edit));
  const Routes r = tracer.routes(tracer.text_request(kPrompt, kPrompt).clean);
  EXPECT_EQ(r.mixer_terms[2], "knocked out");
  size_t mixer_edges[5] = {};
  for (const RouteEdge& e : r.edges)
    if (e.kind == RouteKind::kMixer) ++mixer_edges[e.layer];
  EXPECT_EQ(mixer_edges[2], 0u);
  EXPECT_GT(mixer_edges[1], 0u);
  EXPECT_GT(mixer_edges[3], 0u);
  for (const auto& [node, sum] : sums_into(r)) EXPECT_NEAR(sum, 1.0, 1e-9);
  // Offset 4 is layer 2's shift alone: nothing carries position 5 to position 9 any more.
  for (const RouteEdge& e : prune_routes(r, 0.0)) EXPECT_FALSE(e.layer == 2 && e.from != e.to);
}

// A 1-layer attention model: every weight recomputed from the raw parameters.
TEST(AttentionRoutes, TheWeightsAreTheTermsNormsShares) {
  const std::string run = trained_run("routes_attn", {{"attn", 64, 4}});
  const auto model = Model::load(run, "cpu");
  const Tracer tracer(model);
  const auto tokens = tracer.text_request(kPrompt, kPrompt).clean;
  const int64_t at = 11;
  const Routes r = tracer.routes(tokens, at);
  ASSERT_EQ(r.layers, 1);
  EXPECT_EQ(r.mixer_terms[0].rfind("attention", 0), 0u);

  torch::NoGradGuard no_grad;
  GptImpl& m = *model->impl().gpt;
  BlockImpl& b = *m.blocks[0];
  auto& attn = dynamic_cast<AttentionImpl&>(*b.mixer);
  const int64_t T = static_cast<int64_t>(tokens.size()), d = model->config().d_model, H = 4, hd = d / H;
  const auto idx = torch::tensor(std::vector<int64_t>(tokens.begin(), tokens.end()), torch::kLong);
  const auto h = m.tok_emb->forward(idx) + m.pos_emb->forward(torch::arange(T));  // [T, d]
  const auto x = b.ln1->forward(h);
  const auto qkv = torch::matmul(x, attn.qkv->weight.t()) + attn.qkv->bias;      // [T, 3d]
  const auto q = qkv.narrow(1, 0, d), k = qkv.narrow(1, d, d), v = qkv.narrow(1, 2 * d, d);
  const auto y = b.mixer->forward(x.unsqueeze(0))[0];
  const auto f = b.ffn->forward(b.ln2->forward(h + y));
  std::map<std::tuple<int64_t, int64_t, int>, double> got;
  for (const RouteEdge& e : r.edges) got[{e.from, e.to, static_cast<int>(e.kind)}] = e.weight;
  const auto weight = [&](int64_t from, int64_t to, RouteKind kind) { return got[{from, to, static_cast<int>(kind)}]; };
  EXPECT_EQ(got.size(), static_cast<size_t>((at + 1) * (at + 2) / 2 + 2 * (at + 1))) << "every j <= i, each i <= at";
  for (int64_t i = 0; i <= at; ++i) {
    std::vector<double> term(static_cast<size_t>(i + 1));
    for (int64_t j = 0; j <= i; ++j) {
      auto sum = torch::zeros({d});
      for (int64_t head = 0; head < H; ++head) {
        std::vector<double> scores;
        for (int64_t k2 = 0; k2 <= i; ++k2)
          scores.push_back((q[i].narrow(0, head * hd, hd) * k[k2].narrow(0, head * hd, hd)).sum().item<double>() /
                           std::sqrt(static_cast<double>(hd)));
        double mx = scores[0], z = 0;
        for (double s : scores) mx = std::max(mx, s);
        for (double s : scores) z += std::exp(s - mx);
        const double a = std::exp(scores[static_cast<size_t>(j)] - mx) / z;
        sum += a * torch::matmul(attn.proj->weight.narrow(1, head * hd, hd), v[j].narrow(0, head * hd, hd));
      }
      term[static_cast<size_t>(j)] = sum.norm().item<double>();
    }
    const double rn = h[i].norm().item<double>(), fn = f[i].norm().item<double>();
    double total = rn + fn;
    for (double t : term) total += t;
    EXPECT_NEAR(weight(i, i, RouteKind::kResidual), rn / total, 1e-5) << "residual into " << i;
    EXPECT_NEAR(weight(i, i, RouteKind::kFfn), fn / total, 1e-5) << "ffn into " << i;
    for (int64_t j = 0; j <= i; ++j)
      EXPECT_NEAR(weight(j, i, RouteKind::kMixer), term[static_cast<size_t>(j)] / total, 1e-5) << "mixer " << j << " -> " << i;
  }
  for (const auto& [node, sum] : sums_into(r)) EXPECT_NEAR(sum, 1.0, 1e-9);
  // One layer: threshold 0 keeps every edge into the output node, nothing else.
  EXPECT_EQ(prune_routes(r, 0.0).size(), static_cast<size_t>(at + 1 + 2));
  EXPECT_THROW(tracer.routes(tokens, T), std::invalid_argument);
  EXPECT_THROW(tracer.routes({}), std::invalid_argument);
}

// Every other mixer kind gets its terms (docs/diagnostics.md §10's table): finite weights summing
// to 1 into every node, a shift layer's mixer edges only at its shifts, a reading layer's
// (attention-like, extractor) from anywhere before.
TEST(EveryMixerRoutes, EveryKindsWeightsSumToOneAndShiftKindsKeepTheirShifts) {
  const std::vector<LayerSpec> layers = {{"hsm_ab_vec", 64, 1}, {"hsm_AB", 64, 1},   {"hsm_gate1", 64, 1},
                                         {"hsm_gate2", 64, 4},  {"hsm_fusion", 64, 4}, {"mlp", 64, 1},
                                         {"taylor", 64, 4},     {"nonapprox", 64, 4},  {"fixed_seq_qk", 64, 4},
                                         {"me", 64, 1},         {"she", 64, 1}};
  const auto model = Model::load(trained_run("routes_every", layers), "cpu");
  const Tracer tracer(model);
  const Routes r = tracer.routes(tracer.text_request(kPrompt, kPrompt).clean);
  ASSERT_EQ(r.layers, static_cast<int64_t>(layers.size()));
  for (const auto& [node, sum] : sums_into(r)) EXPECT_NEAR(sum, 1.0, 1e-9) << "layer " << node.first;
  std::vector<int64_t> far(layers.size(), 0);
  for (const RouteEdge& e : r.edges) {
    ASSERT_TRUE(std::isfinite(e.weight)) << "layer " << e.layer;
    if (e.kind != RouteKind::kMixer) continue;
    const LayerSpec& spec = layers[static_cast<size_t>(e.layer)];
    const auto shifts = layer_shifts(mixer_info(spec.mixer).kind, e.layer, spec.heads);
    if (!shifts.empty()) {
      EXPECT_TRUE(e.to == e.from || std::count(shifts.begin(), shifts.end(), e.to - e.from))
          << spec.mixer << ": " << e.from << " -> " << e.to;
    }
    if (e.to - e.from > 16) ++far[static_cast<size_t>(e.layer)];
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    const MixerKind kind = mixer_info(layers[l].mixer).kind;
    EXPECT_EQ(far[l] > 0, reads_all_earlier(kind)) << layers[l].mixer << " (" << r.mixer_terms[l] << ")";
  }
}

}  // namespace

