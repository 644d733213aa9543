// Diagnostics over time and what-if edits (issue 23): RUN/diagnostics.jsonl written at every
// validation (one record each, equal to `hsm diagnose` on the final weights, continued on
// resume), and Model::edited / save_as (a/b set, layers and heads knocked out, in memory;
// the run folder never written). One shared hsm::Model (issue 35): calls never change it, an
// edited model shares what it does not change, two threads use one model at once.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "hsm/diagnostics_log.h"
#include "hsm/evaluator.h"
#include "hsm/generator.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"
#include "hsm/what_if.h"
#include "run/run_json.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;
namespace fs = std::filesystem;

namespace {

// hsm_ab (scalar a, b), attention (4 heads), hsm_ab_mh (a, b per head, 4 heads).
ModelConfig what_if_model() {
  ModelConfig c = tiny_model("hsm_ab", 1);
  c.layers.push_back({"attn", 64, 4});
  c.layers.push_back({"hsm_ab_mh", 64, 4});
  return c;
}

std::map<std::string, std::string> folder_bytes(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    out[fs::relative(e.path(), dir).string()] = s.str();
  }
  return out;
}

std::vector<int64_t> eval_steps(const std::string& run_dir) {
  std::vector<int64_t> out;
  for (const auto& m : read_metrics_json(run_dir))
    if (m["kind"] == "eval") out.push_back(m["step"].get<int64_t>());
  return out;
}

std::vector<int64_t> record_steps(const std::vector<DiagnosticsRecord>& records) {
  std::vector<int64_t> out;
  for (const auto& r : records) out.push_back(r.step);
  return out;
}

bool finite(const Indicators& i) {
  bool ok = std::isfinite(i.entropy) && std::isfinite(i.conc) && std::isfinite(i.headdiv) && std::isfinite(i.sink);
  for (double v : i.locfoc) ok = ok && std::isfinite(v);
  return ok;
}

double max_difference(const Indicators& a, const Indicators& b) {
  double d = std::max({std::fabs(a.entropy - b.entropy), std::fabs(a.conc - b.conc), std::fabs(a.headdiv - b.headdiv),
                       std::fabs(a.sink - b.sink)});
  for (size_t n = 0; n < a.locfoc.size(); ++n) d = std::max(d, std::fabs(a.locfoc[n] - b.locfoc[n]));
  return d;
}

class WhatIfRun : public ::testing::Test {
 public:
  // kPrompt's tokens, at most the context.
  template <class M>
  static std::vector<int32_t> prompt_ids(const M& s) {
    std::vector<int32_t> ids = s.tokenizer().encode(kPrompt);
    ids.resize(std::min(ids.size(), static_cast<size_t>(s.config().context)));
    return ids;
  }

 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(temp_dir("what_if"));
    data_ = new std::string(make_corpus(*dir_));
    RunSpec spec = tiny_run(*dir_, *data_, 30);  // validations at 10, 20 and 30
    spec.model = what_if_model();
    Trainer(spec).run();
    run_ = new std::string(spec.run_dir);
  }
  static EvalOptions few_windows() {
    EvalOptions o;
    o.cache_dir = *dir_ + "/cache";
    o.max_windows = 16;
    o.batch_size = 8;
    return o;
  }
  static std::string* dir_;
  static std::string* data_;
  static std::string* run_;
  static constexpr const char* kPrompt = "Once upon a time, Lily saw a red ball. Lily was very happy.";
};
std::string* WhatIfRun::dir_ = nullptr;
std::string* WhatIfRun::data_ = nullptr;
std::string* WhatIfRun::run_ = nullptr;

// ---- diagnostics.jsonl ------------------------------------------------------------------------
TEST_F(WhatIfRun, OneRecordPerValidationWithFiniteIndicators) {
  const auto records = read_diagnostics_log(*run_);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(record_steps(records), eval_steps(*run_));
  EXPECT_EQ(record_steps(records), (std::vector<int64_t>{10, 20, 30}));
  for (const DiagnosticsRecord& r : records) {
    EXPECT_EQ(r.prompt, TrainSettings{}.probe_text);
    ASSERT_EQ(r.layers.size(), 3u);
    for (const auto& l : r.layers) {
      EXPECT_TRUE(finite(l.indicators)) << r.step << " layer " << l.layer;
      EXPECT_TRUE(std::isfinite(l.lens_kl) && l.lens_kl >= 0) << r.step << " layer " << l.layer;
      for (const auto& h : l.heads) EXPECT_TRUE(finite(h.indicators)) << r.step << " " << l.layer << ":" << h.head;
    }
    EXPECT_EQ(r.layers[0].mixer, "hsm_ab");
    EXPECT_EQ(r.layers[0].weights.a.size(), 1u);
    EXPECT_EQ(r.layers[1].heads.size(), 4u);
    EXPECT_TRUE(r.layers[1].weights.a.empty());
    EXPECT_EQ(r.layers[2].weights.b.size(), 4u);
  }
  EXPECT_EQ(records.back().layers.back().lens_kl, 0.0);  // the last layer's lens is the output
  EXPECT_NE(records.front().layers[0].weights.a, records.back().layers[0].weights.a);  // it learned
}

TEST_F(WhatIfRun, TheLastRecordEqualsDiagnoseOnTheFinalWeights) {
  const DiagnosticsRecord last = read_diagnostics_log(*run_).back();
  auto model = Model::load(*run_, "cpu");
  const Diagnosis d = Prober(model).diagnose(last.prompt);
  const Probe p = Prober(model).probe(last.prompt, 1);
  const auto weights = model->mixer_weights();
  ASSERT_EQ(d.layers.size(), last.layers.size());
  double worst = 0;
  for (size_t l = 0; l < d.layers.size(); ++l) {
    const auto& rec = last.layers[l];
    EXPECT_EQ(rec.mixer, d.layers[l].mixer);
    EXPECT_EQ(rec.kind, d.layers[l].kind);
    worst = std::max(worst, max_difference(rec.indicators, d.layers[l].indicators));
    ASSERT_EQ(rec.heads.size(), d.layers[l].heads.size());
    for (size_t h = 0; h < rec.heads.size(); ++h)
      worst = std::max(worst, max_difference(rec.heads[h].indicators, d.layers[l].heads[h].indicators));
    EXPECT_EQ(rec.weights.a, weights[l].a);
    EXPECT_EQ(rec.weights.b, weights[l].b);
    EXPECT_EQ(rec.weights.shifts, weights[l].shifts);
    const auto& kl = p.lens[l + 1].kl_to_final;
    double mean = 0;
    for (double v : kl) mean += v;
    mean /= static_cast<double>(kl.size());
    worst = std::max(worst, std::fabs(rec.lens_kl - mean));
  }
  EXPECT_LE(worst, 1e-6);
  std::printf("largest difference between the last record and diagnose: %.3g\n", worst);
}

TEST(DiagnosticsRecord, ResumeContinuesTheFileWithoutDuplicateSteps) {
  const std::string dir = temp_dir("diag_resume");
  RunSpec spec = tiny_run(dir, make_corpus(dir, 200), 20);
  spec.model = tiny_model("hsm_ab", 2);
  Trainer(spec).run();
  ASSERT_EQ(record_steps(read_diagnostics_log(spec.run_dir)), (std::vector<int64_t>{10, 20}));
  // A killed run may have recorded past its last checkpoint: resume drops that record.
  DiagnosticsRecord stray = read_diagnostics_log(spec.run_dir).back();
  stray.step = 25;
  std::ofstream(spec.run_dir + "/diagnostics.jsonl", std::ios::app) << diagnostics_record_to_json_line(stray) << "\n";
  spec.resume = true;
  spec.train.steps = 30;
  Trainer(spec).run();
  EXPECT_EQ(record_steps(read_diagnostics_log(spec.run_dir)), (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(record_steps(read_diagnostics_log(spec.run_dir)), eval_steps(spec.run_dir));

  // An empty probe text records nothing; a new run does not keep an old file.
  RunSpec off = tiny_run(dir + "/off", dir + "/stories.txt", 10);
  off.model = tiny_model("hsm_ab", 1);
  off.train.probe_text = "";
  fs::create_directories(off.run_dir);
  std::ofstream(off.run_dir + "/diagnostics.jsonl") << diagnostics_record_to_json_line(stray) << "\n";
  Trainer(off).run();
  EXPECT_FALSE(fs::exists(off.run_dir + "/diagnostics.jsonl"));
  EXPECT_EQ(read_run_info(off.run_dir).training.probe_text, "");
  EXPECT_EQ(read_run_info(spec.run_dir).training.probe_text, TrainSettings{}.probe_text);
}

// ---- what-if: Model::edited -----------------------------------------------------------------
TEST_F(WhatIfRun, TrainedAAndBChangeNothing) {
  auto model = Model::load(*run_, "cpu");
  const auto weights = model->mixer_weights();
  WhatIf same;
  same.ab = {{0, weights[0].a, weights[0].b}, {2, weights[2].a, weights[2].b}};
  auto copy = model->edited(same);
  EXPECT_EQ(copy->edits(), same);
  const std::vector<int32_t> tokens = prompt_ids(*model);
  EXPECT_EQ(Prober(copy).logits(tokens), Prober(model).logits(tokens));  // bit for bit
  GenerateOptions g;
  g.sampling.seed = 7;
  g.sampling.max_new_tokens = 20;
  g.sampling.stop_at_end = false;
  const GenerationResult a = Generator(model).run("Once upon", g), b = Generator(copy).run("Once upon", g);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(b.decoder, a.decoder);
  EXPECT_EQ(Evaluator(model).evaluate(*data_, few_windows()).loss, Evaluator(copy).evaluate(*data_, few_windows()).loss);
  // An empty edit is an exact copy too.
  EXPECT_EQ(Prober(model->edited({})).logits(tokens), Prober(model).logits(tokens));
}

TEST_F(WhatIfRun, AnEditedAAndBChangeTheCopyAndNotTheModel) {
  auto model = Model::load(*run_, "cpu");
  const std::vector<int32_t> tokens = prompt_ids(*model);
  const auto before = Prober(model).logits(tokens);
  const auto trained = model->mixer_weights();
  WhatIf edit;
  edit.ab = parse_ab_edits("0:0.5:1.5");
  edit.ab.push_back({2, {0.1f, 0.2f, 0.3f, 0.4f}, {1}});
  auto copy = model->edited(edit);
  EXPECT_NE(Prober(copy).logits(tokens), before);
  EXPECT_EQ(copy->mixer_weights()[0].a, std::vector<float>{0.5f});
  EXPECT_EQ(copy->mixer_weights()[0].b, std::vector<float>{1.5f});
  EXPECT_EQ(copy->mixer_weights()[2].a, (std::vector<float>{0.1f, 0.2f, 0.3f, 0.4f}));
  EXPECT_EQ(copy->mixer_weights()[2].b, std::vector<float>(4, 1.0f));
  // The model is as it was.
  EXPECT_EQ(Prober(model).logits(tokens), before);
  EXPECT_EQ(model->mixer_weights()[0].a, trained[0].a);
  EXPECT_EQ(model->mixer_weights()[2].b, trained[2].b);
  // The fast decoder of the copy decodes the edited model: its text is LibTorch's.
  GenerateOptions g;
  g.sampling.seed = 3;
  g.sampling.max_new_tokens = 16;
  g.sampling.stop_at_end = false;
  const GenerationResult fast = Generator(copy).run("Once upon", g);
  g.fast_path = false;
  const GenerationResult slow = Generator(copy).run("Once upon", g);
  EXPECT_EQ(fast.text, slow.text);
  EXPECT_NE(fast.text, Generator(model).run("Once upon", g).text);
}

TEST_F(WhatIfRun, EditsTheModelCannotTakeAreRefusedByName) {
  auto model = Model::load(*run_, "cpu");
  auto error_of = [&](const WhatIf& w) {
    try {
      model->edited(w);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(error_of({{}, parse_ab_edits("1:0.5:1")}), "layer 1 (attn) has no a and b to set");
  EXPECT_NE(error_of({{}, parse_ab_edits("3:0.5:1")}).find("layers 0..2"), std::string::npos);
  EXPECT_NE(error_of({{}, {{2, {1, 2, 3}, {1}}}}).find("a takes 1 value (all entries) or 4"), std::string::npos);
  EXPECT_NE(error_of({{}, {{0, {1}, {1, 2}}}}).find("layer 0 (hsm_ab) b takes 1 value, got 2"), std::string::npos);
  EXPECT_NE(error_of({{{0, 1}}, {}}).find("knock-out of layer 0 head 1"), std::string::npos);
  EXPECT_NE(error_of({{{5, -1}}, {}}).find("layers 0..2"), std::string::npos);
  EXPECT_EQ(error_of({{{2, 3}}, {}}), "(accepted)");
}

TEST_F(WhatIfRun, KnockOutsOfACopyStayAndEqualTheEvaluationsKnockOut) {
  auto model = Model::load(*run_, "cpu");
  const EvalOptions o = few_windows();
  WhatIf w;
  w.knock_out = {{2, -1}};
  auto copy = model->edited(w);
  const EvalResult first = Evaluator(copy).evaluate(*data_, o), second = Evaluator(copy).evaluate(*data_, o);
  EXPECT_EQ(first.loss, second.loss);  // still knocked out after an evaluation
  EvalOptions k = o;
  k.knock_out = {{2, -1}};
  EXPECT_EQ(Evaluator(model).evaluate(*data_, k).loss, first.loss);
  EXPECT_NE(Evaluator(model).evaluate(*data_, o).loss, first.loss);
  EXPECT_EQ(first.knock_out, w.knock_out);
  // `hsm eval --knock-out 2` is `hsm ablate`'s entry for layer 2: the same windows, the same loss.
  const AblationReport report = Evaluator(model).ablate(*data_, o);
  bool found = false;
  for (const Ablation& a : report.ablations)
    if (a.knock_out == KnockOut{2, -1}) {
      EXPECT_EQ(a.loss, first.loss);
      found = true;
    }
  EXPECT_TRUE(found);
  // The copy's own ablation starts from its knock-out, and has no rows for what it already
  // knocks out (layer 2 and its heads); after it the knock-out is still there.
  const AblationReport of_copy = Evaluator(copy).ablate(*data_, o);
  EXPECT_EQ(of_copy.base_loss, first.loss);
  EXPECT_EQ(of_copy.ablations.size(), report.ablations.size() - 5);  // layer 2 whole and its 4 heads
  for (const Ablation& a : of_copy.ablations) EXPECT_NE(a.knock_out.layer, 2) << knock_out_label(a.knock_out);
  EXPECT_EQ(Evaluator(copy).evaluate(*data_, o).loss, first.loss);
  // A head knock-out through edited() and the generation of a copy that has one.
  auto head = model->edited({{{2, 1}}, {}});
  EvalOptions kh = o;
  kh.knock_out = {{2, 1}};
  EXPECT_EQ(Evaluator(head).evaluate(*data_, o).loss, Evaluator(model).evaluate(*data_, kh).loss);
  const AblationReport of_head = Evaluator(head).ablate(*data_, o);  // no row for head 2:1; layer 2 whole stays
  EXPECT_EQ(of_head.ablations.size(), report.ablations.size() - 1);
  for (const Ablation& a : of_head.ablations) EXPECT_FALSE(a.knock_out == (KnockOut{2, 1}));
  GenerateOptions g;
  g.sampling.max_new_tokens = 4;
  EXPECT_EQ(Generator(copy).run("Once", g).decoder, "libtorch");  // the fast path knows no knock-outs
}

TEST_F(WhatIfRun, DiagnosisMarksWhatACopyKnockedOut) {
  auto model = Model::load(*run_, "cpu");
  WhatIf w;
  w.knock_out = {{1, -1}, {2, 1}};  // the attention layer whole, head 1 of the multihead (a,b) layer
  auto copy = model->edited(w);
  const Diagnosis trained = Prober(model).diagnose(kPrompt), edited = Prober(copy).diagnose(kPrompt);
  ASSERT_EQ(edited.layers.size(), 3u);
  for (const LayerDiagnostics& l : trained.layers) {
    EXPECT_FALSE(l.knocked_out) << l.layer;
    for (const HeadDiagnostics& h : l.heads) EXPECT_FALSE(h.knocked_out) << l.layer << ":" << h.head;
  }
  EXPECT_FALSE(edited.layers[0].knocked_out);
  EXPECT_TRUE(edited.layers[1].knocked_out);
  for (const HeadDiagnostics& h : edited.layers[1].heads) EXPECT_TRUE(h.knocked_out) << h.head;
  EXPECT_FALSE(edited.layers[2].knocked_out);
  ASSERT_EQ(edited.layers[2].heads.size(), 4u);
  for (const HeadDiagnostics& h : edited.layers[2].heads) EXPECT_EQ(h.knocked_out, h.head == 1) << h.head;
  // A knocked-out layer's matrix is what it would mix: its input is the trained model's (the
  // layers before it are unchanged), so the matrix is the trained one.
  EXPECT_EQ(edited.layers[1].heads[0].matrix, trained.layers[1].heads[0].matrix);
}

TEST_F(WhatIfRun, TheRunFolderIsByteIdenticalAfterEdits) {
  const auto before = folder_bytes(*run_);
  ASSERT_GT(before.size(), 4u);
  {
    auto model = Model::load(*run_, "cpu");
    WhatIf w;
    w.knock_out = {{1, 2}};
    w.ab = parse_ab_edits("0:0.25:2,2:0:1");
    auto copy = model->edited(w);
    Evaluator(copy).evaluate(*data_, few_windows());
    Evaluator(copy).ablate(*data_, few_windows());
    GenerateOptions g;
    g.sampling.max_new_tokens = 8;
    Generator(copy).run("Once upon a time", g);
    Prober(copy).diagnose(kPrompt);
    Prober(copy).probe(kPrompt);
    copy->save_as(*dir_ + "/saved_elsewhere");
    EXPECT_THROW(copy->save_as(*run_), std::invalid_argument);
  }
  EXPECT_EQ(folder_bytes(*run_), before);
}

TEST_F(WhatIfRun, SaveAsWritesARunThatOpensAsTheEditedCopy) {
  auto model = Model::load(*run_, "cpu");
  WhatIf w;
  w.knock_out = {{1, -1}, {2, 0}};
  w.ab = parse_ab_edits("0:0.75:-0.5");
  auto copy = model->edited(w);
  const std::string out = *dir_ + "/saved";
  fs::create_directories(out);  // an empty folder is fine
  copy->save_as(out);
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.model", "metrics.jsonl"})
    EXPECT_TRUE(fs::exists(out + "/" + f)) << f;
  const nlohmann::json config = read_run_config(out);
  ASSERT_TRUE(config.contains("what_if"));
  EXPECT_EQ(config["what_if"]["source"], fs::absolute(*run_).lexically_normal().string());
  EXPECT_EQ(config["what_if"]["label"], what_if_label(w));
  EXPECT_EQ(what_if_knock_outs(config["what_if"], "config.json"), w.knock_out);
  EXPECT_EQ(read_run_info(out).step, read_run_info(*run_).step);

  auto reopened = Model::load(out, "cpu");
  EXPECT_EQ(reopened->edits().knock_out, w.knock_out);
  EXPECT_TRUE(reopened->edits().ab.empty());  // in the weights
  const std::vector<int32_t> tokens = prompt_ids(*model);
  EXPECT_EQ(Prober(reopened).logits(tokens), Prober(copy).logits(tokens));
  EXPECT_NE(Prober(reopened).logits(tokens), Prober(model).logits(tokens));
  EXPECT_EQ(reopened->mixer_weights()[0].a, std::vector<float>{0.75f});
  EXPECT_EQ(Evaluator(reopened).evaluate(*data_, few_windows()).loss, Evaluator(copy).evaluate(*data_, few_windows()).loss);
  // Never over a folder with something in it.
  try {
    copy->save_as(out);
    ADD_FAILURE() << "wrote over " << out;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not empty"), std::string::npos) << e.what();
  }
  // A damaged what_if is named.
  nlohmann::json bad = config;
  bad["what_if"]["knock_out"] = {{{"layer", "x"}}};
  EXPECT_THROW(parse_run_config(bad.dump(), "config.json"), std::runtime_error);
}

// ---- EvalSet: the windows read once, scored for every edit ---------------------------------------

void expect_same_result(const EvalResult& a, const EvalResult& b, const std::string& what) {
  EXPECT_EQ(a.loss, b.loss) << what;
  EXPECT_EQ(a.accuracy, b.accuracy) << what;
  EXPECT_EQ(a.tokens, b.tokens) << what;
  EXPECT_EQ(a.documents, b.documents) << what;
  EXPECT_EQ(a.unigram_loss, b.unigram_loss) << what;
  EXPECT_EQ(a.split, b.split) << what;
  EXPECT_EQ(a.windows, b.windows) << what;
  EXPECT_EQ(a.window_count, b.window_count) << what;
  EXPECT_EQ(a.knock_out, b.knock_out) << what;
}

TEST_F(WhatIfRun, AnEvalSetScoresAsReadingTheCorpusDoes) {
  auto model = Model::load(*run_, "cpu");
  EvalOptions o = few_windows();
  const EvalSet set = Evaluator(model).read(*data_, o);
  EXPECT_EQ(set.windows(), 16);
  EXPECT_EQ(set.split(), "val");
  EXPECT_EQ(set.layout(), "packed");
  EXPECT_GT(set.tokens(), 16 * model->config().context);
  expect_same_result(Evaluator(model).evaluate(set, o), Evaluator(model).evaluate(*data_, o), "whole set");
  // max_batches takes a prefix of the windows: the loss and the unigram baseline of that prefix.
  EvalOptions two = o;
  two.max_batches = 1;
  const EvalResult prefix = Evaluator(model).evaluate(set, two);
  expect_same_result(prefix, Evaluator(model).evaluate(*data_, two), "one batch");
  EXPECT_EQ(prefix.tokens, 8 * model->config().context);
  // An edited copy and a knock-out on the same set, and ablation.
  WhatIf w;
  w.knock_out = {{1, 2}};
  w.ab = parse_ab_edits("0:0.25:2");
  auto copy = model->edited(w);
  expect_same_result(Evaluator(copy).evaluate(set, o), Evaluator(copy).evaluate(*data_, o), "edited copy");
  EvalOptions k = o;
  k.knock_out = {{2, -1}};
  expect_same_result(Evaluator(model).evaluate(set, k), Evaluator(model).evaluate(*data_, k), "knock-out");
  const AblationReport from_set = Evaluator(model).ablate(set, o), from_corpus = Evaluator(model).ablate(*data_, o);
  EXPECT_EQ(from_set.base_loss, from_corpus.base_loss);
  ASSERT_EQ(from_set.ablations.size(), from_corpus.ablations.size());
  for (size_t i = 0; i < from_set.ablations.size(); ++i) {
    EXPECT_EQ(from_set.ablations[i].knock_out, from_corpus.ablations[i].knock_out);
    EXPECT_EQ(from_set.ablations[i].loss, from_corpus.ablations[i].loss);
  }
  // Story-start windows are a layout of their own.
  EvalOptions story = o;
  story.windows = "story_start";
  const EvalSet stories = Evaluator(model).read(*data_, story);
  EXPECT_EQ(stories.layout(), "story_start");
  expect_same_result(Evaluator(model).evaluate(stories, story), Evaluator(model).evaluate(*data_, story), "story starts");
}

// Without EvalOptions::windows an evaluation scores the windows the run was trained on
// (config.json's training.windows), so its loss is the one the run's curves show; a run that
// records none was trained on packed windows. The result says which windows and how many.
TEST_F(WhatIfRun, AnEvaluationScoresTheWindowsTheRunWasTrainedOn) {
  auto copy_with_windows = [&](const std::string& name, const char* windows) {
    const std::string dir = *dir_ + "/" + name;
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.model"})
      fs::copy_file(*run_ + "/" + f, dir + "/" + f);
    nlohmann::json config = read_run_config(dir);
    if (windows)
      config["training"]["windows"] = windows;
    else
      config["training"].erase("windows");
    std::ofstream(dir + "/config.json") << config.dump(2);
    return dir;
  };
  const auto story = Model::load(copy_with_windows("story_copy", "story_start"), "cpu");
  const auto old = Model::load(copy_with_windows("old_copy", nullptr), "cpu");
  EXPECT_EQ(story->trained_windows(), "story_start");
  EXPECT_EQ(old->trained_windows(), "packed");
  EXPECT_EQ(story->edited(WhatIf{})->trained_windows(), "story_start");
  const EvalOptions o = few_windows();  // windows not set
  EvalOptions packed = o, starts = o;
  packed.windows = "packed";
  starts.windows = "story_start";
  const EvalResult by_default = Evaluator(story).evaluate(*data_, o);
  EXPECT_EQ(by_default.windows, "story_start");
  EXPECT_EQ(by_default.window_count, 16);
  expect_same_result(by_default, Evaluator(story).evaluate(*data_, starts), "the trained windows");
  EXPECT_NE(by_default.loss, Evaluator(story).evaluate(*data_, packed).loss);  // else this proves nothing
  EXPECT_EQ(Evaluator(story).read(*data_, o).layout(), "story_start");
  const AblationReport ablation = Evaluator(story).ablate(*data_, o);
  EXPECT_EQ(ablation.windows, "story_start");
  EXPECT_EQ(ablation.window_count, 16);
  EXPECT_EQ(ablation.base_loss, by_default.loss);
  const EvalResult older = Evaluator(old).evaluate(*data_, o);
  EXPECT_EQ(older.windows, "packed");
  expect_same_result(older, Evaluator(old).evaluate(*data_, packed), "a run without the setting");
  EvalOptions batches = o;
  batches.max_batches = 1;  // 8 windows of the 16
  EXPECT_EQ(Evaluator(story).evaluate(*data_, batches).window_count, 8);
}

TEST_F(WhatIfRun, AnEvalSetNeedsNoCorpusAndOutlivesItsModel) {
  const std::string moved = *dir_ + "/moved_corpus.txt";
  fs::copy_file(*data_, moved, fs::copy_options::overwrite_existing);
  EvalOptions o = few_windows();
  o.cache_dir.clear();  // nothing to read back: the set holds the tokens
  EvalResult expected;
  EvalSet set;
  {
    auto first = Model::load(*run_, "cpu");
    set = Evaluator(first).read(moved, o);
    expected = Evaluator(first).evaluate(moved, o);
  }
  fs::remove(moved);
  auto second = Model::load(*run_, "cpu");
  EXPECT_THROW(Evaluator(second).evaluate(moved, o), std::exception);  // the corpus is gone
  expect_same_result(Evaluator(second).evaluate(set, o), expected, "after the corpus and the first model went");
}

TEST_F(WhatIfRun, AnEvalSetOfAnotherModelOrNoneIsRefused) {
  auto model = Model::load(*run_, "cpu");
  const EvalOptions o = few_windows();
  auto message = [&](const EvalSet& set) {
    try {
      Evaluator(model).evaluate(set, o);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message(EvalSet()).find("empty"), std::string::npos);
  // A model with another context (and so other windows) refuses the set of this one.
  RunSpec other = tiny_run(*dir_ + "/other_context", *data_, 1);
  other.model.context = 16;
  Trainer(other).run();
  auto short_context = Model::load(other.run_dir, "cpu");
  const std::string refused = message(Evaluator(short_context).read(*data_, o));
  EXPECT_NE(refused.find("another model"), std::string::npos) << refused;
  EXPECT_NE(refused.find("context 16"), std::string::npos) << refused;
  EXPECT_THROW(Evaluator(short_context).ablate(Evaluator(model).read(*data_, o), o), std::invalid_argument);
  EvalOptions bad = o;
  bad.windows = "diagonal";
  EXPECT_THROW(Evaluator(model).read(*data_, bad), std::invalid_argument);
  bad = o;
  bad.split = "test";
  EXPECT_THROW(Evaluator(model).read(*data_, bad), std::invalid_argument);
}

// ---- one shared Model (hsm/model.h, issue 35) ---------------------------------------------------
TEST_F(WhatIfRun, TheSharedModelIsUnchangedByAnEditedEvaluation) {
  const std::shared_ptr<const Model> model = Model::load(*run_, "cpu");
  const std::vector<int32_t> tokens = prompt_ids(*model);
  const std::vector<float> before = Prober(model).logits(tokens);
  const auto weights_before = model->mixer_weights();
  const EvalOptions o = few_windows();
  const EvalResult base = Evaluator(model).evaluate(*data_, o);

  // Knock-outs and skipped layers are arguments of the call...
  EvalOptions edited_call = o;
  edited_call.knock_out = {{1, -1}, {2, 3}};
  edited_call.skip_layers = {0};
  const EvalResult knocked = Evaluator(model).evaluate(*data_, edited_call);
  EXPECT_NE(knocked.loss, base.loss);
  // ...and an a/b edit with knock-outs is a new model value.
  WhatIf w;
  w.knock_out = {{1, -1}};
  w.ab = parse_ab_edits("0:0.25:2");
  const std::shared_ptr<const Model> edited = model->edited(w);
  EXPECT_NE(Evaluator(edited).evaluate(*data_, o).loss, base.loss);
  EXPECT_NE(Prober(edited).logits(tokens), before);

  // The shared model is as it was: its logits, weights, edits and loss, bit for bit.
  EXPECT_EQ(Prober(model).logits(tokens), before);
  EXPECT_EQ(model->mixer_weights()[0].a, weights_before[0].a);
  EXPECT_EQ(model->mixer_weights()[0].b, weights_before[0].b);
  EXPECT_TRUE(model->edits().empty());
  EXPECT_EQ(Evaluator(model).evaluate(*data_, o).loss, base.loss);
  // A call's knock-outs do not outlive the call on the Evaluator either.
  Evaluator reused(model);
  reused.evaluate(*data_, edited_call);
  EXPECT_EQ(reused.evaluate(*data_, o).loss, base.loss);
}

TEST_F(WhatIfRun, AnEditedModelSharesTheTensorsItDoesNotChange) {
  const std::shared_ptr<const Model> model = Model::load(*run_, "cpu");
  const auto source = model->tensor_data();
  // Knock-outs change no weight: every tensor is shared.
  EXPECT_EQ(model->edited({{{1, -1}, {2, 0}}, {}})->tensor_data(), source);
  // An a/b edit of layer 0 owns layer 0's mixer values and shares everything else.
  const auto edited = model->edited({{}, parse_ab_edits("0:0.5:1.5")})->tensor_data();
  ASSERT_EQ(edited.size(), source.size());
  size_t own = 0;
  for (const auto& [name, data] : source) {
    const bool edited_layer = name.rfind("blocks.0.mixer.", 0) == 0;
    if (edited_layer) {
      EXPECT_NE(edited.at(name), data) << name;
      ++own;
    } else {
      EXPECT_EQ(edited.at(name), data) << name;
    }
  }
  EXPECT_EQ(own, 2u);  // hsm_ab's a and b
  // An edit of an edited model shares with it in turn.
  const auto twice = model->edited({{}, parse_ab_edits("0:0.5:1.5")});
  EXPECT_EQ(twice->edited({{{2, -1}}, {}})->tensor_data(), twice->tensor_data());
}

TEST_F(WhatIfRun, TwoThreadsUseOneModelAtOnce) {
  const std::shared_ptr<const Model> model = Model::load(*run_, "cpu");
  const std::vector<int32_t> tokens = prompt_ids(*model);
  const EvalOptions o = few_windows();
  EvalOptions knocked = o;
  knocked.knock_out = {{0, -1}, {2, 1}};
  GenerateOptions g;
  g.sampling.seed = 11;
  g.sampling.max_new_tokens = 24;
  g.sampling.stop_at_end = false;
  // Alone, one after the other.
  const double plain = Evaluator(model).evaluate(*data_, o).loss;
  const double alone = Evaluator(model).evaluate(*data_, knocked).loss;
  const std::string text = Generator(model).run("Once upon", g).text;
  const std::vector<float> logits = Prober(model).logits(tokens);
  // At once: one thread evaluates with knock-outs (which lived on the shared module before
  // issue 35) while the other generates, reads logits and evaluates without any.
  for (int round = 0; round < 3; ++round) {
    double loss = 0, other_loss = 0;
    std::string other_text;
    std::vector<float> other_logits;
    std::thread evaluating([&] { loss = Evaluator(model).evaluate(*data_, knocked).loss; });
    std::thread generating([&] {
      other_text = Generator(model).run("Once upon", g).text;
      other_logits = Prober(model).logits(tokens);
      other_loss = Evaluator(model).evaluate(*data_, o).loss;
    });
    evaluating.join();
    generating.join();
    EXPECT_EQ(loss, alone) << "round " << round;
    EXPECT_EQ(other_text, text) << "round " << round;
    EXPECT_EQ(other_logits, logits) << "round " << round;
    EXPECT_EQ(other_loss, plain) << "round " << round;
  }
}

}  // namespace
