// Causal tracing (issue 51, hsm/trace.h). The exact map is recomputed here by restoring every
// site by hand, one cell at a time, in batch 1, with the block taken apart in the test's own
// code (checked first against the model's forward); the attribution estimate against a finite
// difference along the same direction; a knocked-out layer's mixer has no effect; restoring the
// whole input at the corrupted position restores everything and nowhere else anything.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "hsm/model.h"
#include "hsm/trace.h"
#include "hsm/trainer.h"
#include "hsm/what_if.h"
#include "inference/model_impl.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;

namespace {

// The test's own reading of a block in eval mode: h -> h + mixer(LN1 h) -> + FFN(LN2 .).
struct Sites {
  std::vector<torch::Tensor> residual, mixer, ffn;  // [1, T, d] per layer
};

// A run of idx with one site (s, l, p) replaced by `with` [d] (s < 0: none); fills `record`.
double run_by_hand(GptImpl& m, const torch::Tensor& idx, int64_t at, int64_t answer, int s = -1, int64_t l = -1,
                   int64_t p = -1, const torch::Tensor& with = {}, Sites* record = nullptr) {
  torch::NoGradGuard no_grad;
  auto h = m.tok_emb->forward(idx) + m.pos_emb->forward(torch::arange(idx.size(1)));
  auto put = [&](torch::Tensor x, int site, int64_t layer) {
    if (site == s && layer == l) {
      x = x.clone();
      x[0][p] = with;
    }
    return x;
  };
  for (int64_t layer = 0; layer < static_cast<int64_t>(m.blocks.size()); ++layer) {
    BlockImpl& b = *m.blocks[static_cast<size_t>(layer)];
    h = put(h, 0, layer);
    auto y = b.mixer_knocked_out ? torch::zeros_like(h) : b.mixer->forward(b.ln1->forward(h));
    y = put(y, 1, layer);
    auto f = b.ffn->forward(b.ln2->forward(h + y));
    f = put(f, 2, layer);
    if (record) {
      record->residual.push_back(h);
      record->mixer.push_back(y);
      record->ffn.push_back(f);
    }
    h = h + y + f;
  }
  const auto logits = torch::matmul(m.ln_f->forward(h[0][at]), m.tok_emb->weight.t());
  return torch::log_softmax(logits, -1)[answer].item<double>();
}

torch::Tensor ids(const std::vector<int32_t>& v) {
  return torch::tensor(std::vector<int64_t>(v.begin(), v.end()), torch::kLong).view({1, -1});
}

class TracedRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(temp_dir("trace"));
    RunSpec spec = tiny_run(*dir_, make_corpus(*dir_), 30);
    spec.model = tiny_model("attn", 1);
    spec.model.layers.push_back({"hsm_ab", 64, 1});
    spec.model.layers.push_back({"hsm_ab_mh_ext", 64, 4});
    Trainer(spec).run();
    run_ = new std::string(spec.run_dir);
  }
  // A prompt and its copy with position 3 replaced; the answer traced is the prediction at
  // position 3 itself, which the replaced token moves by nats (a 30-step model bases little on
  // tokens further back: a corruption far from the answer moves log p by millinats, and the
  // normalised effects then carry float32 rounding of 1e-4).
  static TraceRequest request(const Tracer& tracer) {
    TraceRequest r = tracer.text_request(kPrompt, kPrompt);
    r.corrupt[3] = (r.corrupt[3] + 7) % static_cast<int32_t>(Model::load(*run_, "cpu")->config().vocab_size);
    r.answer_position = 3;
    return r;
  }
  static std::string* dir_;
  static std::string* run_;
  static constexpr const char* kPrompt = "Once upon a time, Lily saw a red ball.";
};
std::string* TracedRun::dir_ = nullptr;
std::string* TracedRun::run_ = nullptr;

TEST_F(TracedRun, TheExactMapIsEverySiteRestoredByHand) {
  const auto model = Model::load(*run_, "cpu");
  const Tracer tracer(model);
  const TraceRequest r = request(tracer);
  const Trace t = tracer.trace(r);
  GptImpl& m = *model->impl().gpt;
  const int64_t T = t.positions, at = t.answer_position, answer = t.answer_token;
  ASSERT_EQ(t.layers, 3);
  ASSERT_EQ(at, 3);
  // A 30-step model moves log p little (millinats): every comparison below is in nats, where
  // float32 rounding is ~1e-6, not in the normalised effect, which divides by that span.
  const double span = t.clean_logprob - t.corrupt_logprob;
  ASSERT_GT(std::abs(span), 1e-4) << "a corruption the answer depends on";
  // The test's reading of the block gives the model's own log-probabilities.
  Sites clean, corrupt;
  const double lp_clean = run_by_hand(m, ids(r.clean), at, answer, -1, -1, -1, {}, &clean);
  const double lp_corrupt = run_by_hand(m, ids(r.corrupt), at, answer, -1, -1, -1, {}, &corrupt);
  {
    torch::NoGradGuard no_grad;
    const double forward_lp = torch::log_softmax(m.forward(ids(r.clean))[0][at], -1)[answer].item<double>();
    ASSERT_NEAR(lp_clean, forward_lp, 1e-4);
  }
  EXPECT_NEAR(t.clean_logprob, lp_clean, 1e-4);
  EXPECT_NEAR(t.corrupt_logprob, lp_corrupt, 1e-4);
  ASSERT_EQ(t.exact.size(), 3u);
  const std::vector<torch::Tensor>* acts[3] = {&clean.residual, &clean.mixer, &clean.ffn};
  for (int s = 0; s < 3; ++s)
    for (int64_t l = 0; l < t.layers; ++l)
      for (int64_t p = 0; p < T; ++p) {
        const double lp =
            run_by_hand(m, ids(r.corrupt), at, answer, s, l, p, (*acts[s])[static_cast<size_t>(l)][0][p]);
        EXPECT_NEAR(t.exact[static_cast<size_t>(s)].at(l, p, T) * span, lp - lp_corrupt, 1e-5)
            << t.exact[static_cast<size_t>(s)].site << " layer " << l << " position " << p;
      }
}

TEST_F(TracedRun, RestoringTheWholeInputAtTheCorruptedPositionRestoresEverything) {
  const Tracer tracer(Model::load(*run_, "cpu"));
  TraceRequest r = request(tracer);
  const Trace t = tracer.trace(r);
  ASSERT_EQ(t.corrupted_positions, std::vector<int64_t>{3});
  const TraceMap& residual = t.exact[0];
  const double span = t.clean_logprob - t.corrupt_logprob;  // in nats below (see the first test)
  for (int64_t p = 0; p < t.positions; ++p) {
    const double e = residual.at(0, p, t.positions);
    if (p == 3)
      EXPECT_NEAR(e * span, span, 1e-5) << "the clean input at the corrupted position is the clean run";
    else
      EXPECT_NEAR(e * span, 0.0, 1e-5) << "position " << p << " holds the same token in both runs";
  }
  for (const TraceMap& map : t.exact)
    for (int64_t l = 0; l < t.layers; ++l)
      for (int64_t p = r.answer_position + 1; p < t.positions; ++p)
        EXPECT_EQ(map.at(l, p, t.positions), 0.0) << map.site << ": after the answer, nothing reaches it";
  // Before the corrupted position nothing differs at any site.
  for (const TraceMap& map : t.exact)
    for (int64_t l = 0; l < t.layers; ++l)
      for (int64_t p = 0; p < 3; ++p) EXPECT_NEAR(map.at(l, p, t.positions) * span, 0.0, 1e-5) << map.site;
}

TEST_F(TracedRun, AKnockedOutMixerHasNoEffect) {
  const auto model = Model::load(*run_, "cpu");
  WhatIf edit;
  edit.knock_out.push_back({1, -1});
  const Tracer tracer(model->edited(edit));
  const Trace t = tracer.trace(request(tracer));
  double elsewhere = 0;
  const double span = t.clean_logprob - t.corrupt_logprob;  // in nats (see the first test)
  for (int64_t p = 0; p < t.positions; ++p) {
    EXPECT_NEAR(t.exact[1].at(1, p, t.positions) * span, 0.0, 1e-5) << "knocked-out layer 1, position " << p;
    EXPECT_EQ(t.attribution[1].at(1, p, t.positions), 0.0);
    elsewhere = std::max(elsewhere, std::abs(t.exact[1].at(2, p, t.positions)));
  }
  EXPECT_GT(elsewhere * std::abs(span), 1e-4) << "layer 2's mixer carries something";
}

// The estimate at a cell is the directional derivative of log p along (clean - corrupt) there:
// a finite difference along the same direction agrees; where the runs agree it is 0.
TEST_F(TracedRun, AttributionIsTheFirstOrderEstimate) {
  const auto model = Model::load(*run_, "cpu");
  const Tracer tracer(model);
  const TraceRequest r = request(tracer);
  const Trace t = tracer.trace(r);
  ASSERT_EQ(t.attribution.size(), 3u);
  EXPECT_TRUE(std::isfinite(t.agreement));
  // The finite difference in double precision (a second copy of the model): in float32 a step
  // small enough for a derivative moves log p by less than its rounding.
  const auto twin = Model::load(*run_, "cpu");
  GptImpl& m = *twin->impl().gpt;
  m.to(torch::kDouble);
  const int64_t T = t.positions, at = t.answer_position, answer = t.answer_token;
  Sites clean, corrupt;
  run_by_hand(m, ids(r.clean), at, answer, -1, -1, -1, {}, &clean);
  const double lp_corrupt = run_by_hand(m, ids(r.corrupt), at, answer, -1, -1, -1, {}, &corrupt);
  const double span = t.clean_logprob - t.corrupt_logprob;
  for (int64_t l : {0, 2}) {
    const double eps = 1e-4;
    const auto point = corrupt.ffn[static_cast<size_t>(l)][0][3] +
                       eps * (clean.ffn[static_cast<size_t>(l)][0][3] - corrupt.ffn[static_cast<size_t>(l)][0][3]);
    const double fd = (run_by_hand(m, ids(r.corrupt), at, answer, 2, l, 3, point) - lp_corrupt) / eps;  // nats
    EXPECT_NEAR(t.attribution[2].at(l, 3, T) * span, fd, 0.02 * std::abs(fd) + 1e-6) << "ffn layer " << l;
  }
  for (int64_t p = 0; p < 3; ++p) EXPECT_EQ(t.attribution[0].at(0, p, T), 0.0) << "same input, no difference";
}

// A trace's maps are named by hsm::trace_sites(), in that order; trace_map finds one by its site
// whatever the order of the maps, and trace_agreement is Pearson's r of one site's two maps (the
// sites pooled are Trace::agreement). The Trace view reads its maps and its per-site r so.
TEST_F(TracedRun, MapsAreFoundByTheirSiteAndAgreeSiteBySite) {
  const auto model = Model::load(*run_, "cpu");
  const Tracer tracer(model);
  const Trace t = tracer.trace(request(tracer));
  ASSERT_EQ(t.exact.size(), trace_sites().size());
  ASSERT_EQ(t.attribution.size(), trace_sites().size());
  for (size_t s = 0; s < t.exact.size(); ++s) EXPECT_EQ(t.exact[s].site, trace_sites()[s]);
  const std::vector<TraceMap> reversed(t.exact.rbegin(), t.exact.rend());
  for (size_t s = 0; s < trace_sites().size(); ++s) {
    const TraceMap* m = trace_map(reversed, trace_sites()[s]);
    ASSERT_NE(m, nullptr) << trace_sites()[s];
    EXPECT_EQ(m->site, trace_sites()[s]);
    EXPECT_EQ(m->effect, t.exact[s].effect) << trace_sites()[s];
  }
  EXPECT_EQ(trace_map(t.exact, "attention"), nullptr);
  EXPECT_EQ(trace_map({}, "mixer"), nullptr);
  // Pearson's r by hand, over the cells finite in both maps, for each site and for all pooled.
  auto pearson = [](const std::vector<double>& a, const std::vector<double>& b) {
    std::vector<double> x, y;
    for (size_t i = 0; i < a.size(); ++i)
      if (std::isfinite(a[i]) && std::isfinite(b[i])) x.push_back(a[i]), y.push_back(b[i]);
    const double n = static_cast<double>(x.size());
    double mx = 0, my = 0;
    for (size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < x.size(); ++i)
      sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx), syy += (y[i] - my) * (y[i] - my);
    return sxy / std::sqrt(sxx * syy);
  };
  TraceMap all_exact{"all", {}}, all_estimate{"all", {}};
  for (const std::string& site : trace_sites()) {
    const TraceMap& e = *trace_map(t.exact, site);
    const TraceMap& a = *trace_map(t.attribution, site);
    EXPECT_NEAR(trace_agreement(e, a), pearson(e.effect, a.effect), 1e-9) << site;
    all_exact.effect.insert(all_exact.effect.end(), e.effect.begin(), e.effect.end());
    all_estimate.effect.insert(all_estimate.effect.end(), a.effect.begin(), a.effect.end());
  }
  EXPECT_NEAR(trace_agreement(all_exact, all_estimate), t.agreement, 1e-12);
  EXPECT_NEAR(t.agreement, pearson(all_exact.effect, all_estimate.effect), 1e-9);
  // A constant map has no r.
  TraceMap flat{"mixer", std::vector<double>(t.exact[1].effect.size(), 0.5)};
  EXPECT_TRUE(std::isnan(trace_agreement(flat, t.attribution[1])));
}

TEST_F(TracedRun, BadRequestsAreRefusedWithTheReason) {
  const Tracer tracer(Model::load(*run_, "cpu"));
  TraceRequest r = request(tracer);
  auto message = [&](const TraceRequest& req) {
    try {
      tracer.trace(req);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  TraceRequest shorter = r;
  shorter.corrupt.pop_back();
  EXPECT_NE(message(shorter).find("same positions"), std::string::npos) << message(shorter);
  TraceRequest same = r;
  same.corrupt = same.clean;
  EXPECT_NE(message(same).find("equals the clean one"), std::string::npos);
  TraceRequest outside = r;
  outside.answer_position = 99;
  EXPECT_NE(message(outside).find("outside the prompt"), std::string::npos);
  CancelFlag cancel{true};
  EXPECT_THROW(tracer.trace(r, {}, &cancel), Cancelled);
}

// A task run's example is corrupted where its answer's key was stored: MQAR's key replaced by a
// token the prompt lacks, the answer the example's last.
TEST(TracedTask, AnMqarExampleIsCorruptedAtItsStoredKey) {
  const std::string dir = temp_dir("trace_task");
  const RunSpec spec = tiny_task_run(dir, "mqar:vocab=64,pairs=4,context=32");
  Trainer(spec).run();
  const auto model = Model::load(spec.run_dir, "cpu");
  const Tracer tracer(model);
  const TraceRequest r = tracer.task_request(0);
  const TaskPrompt p = task_prompt(*model->task(), 0);
  EXPECT_EQ(r.answer_position, p.answers.back());
  EXPECT_EQ(r.answer_token, p.targets[static_cast<size_t>(p.answers.back())]);
  int64_t changed = -1;
  for (size_t i = 0; i < r.clean.size(); ++i)
    if (r.clean[i] != r.corrupt[i]) changed = static_cast<int64_t>(i);
  ASSERT_GE(changed, 0);
  EXPECT_LT(changed, 8) << "MQAR stores its keys in the first 2 x pairs tokens";
  EXPECT_EQ(r.clean[static_cast<size_t>(changed)], r.clean[static_cast<size_t>(r.answer_position)]);
  EXPECT_EQ(std::count(r.clean.begin(), r.clean.end(), r.corrupt[static_cast<size_t>(changed)]), 0);
}

}  // namespace
