// Training end to end on generated corpora: the loss falls, runs are deterministic, resume
// continues exactly, stop() checkpoints, checkpoints are checked on load, and the shift
// hierarchy learns what its receptive field allows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "hsm/corpus.h"
#include "hsm/evaluator.h"
#include "hsm/export.h"
#include "hsm/generator.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/safetensors.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"
#include "test_util.h"
#include "training_test_util.h"
#include "eval/evaluation.h"

using namespace hsm;
namespace fs = std::filesystem;

using namespace hsm::test;

TEST(Training, LossFallsAndTheRunFolderIsComplete) {
  const std::string dir = temp_dir("falls");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 60);
  std::vector<MetricRecord> seen;
  TrainCallbacks cb;
  cb.on_metric = [&](const MetricRecord& m) { seen.push_back(m); };
  const TrainSummary s = Trainer(spec, cb).run();
  EXPECT_EQ(s.steps, 60);
  EXPECT_FALSE(s.stopped);
  const auto losses = train_losses(read_metrics_json(spec.run_dir));
  ASSERT_GE(losses.size(), 10u);
  EXPECT_LT(losses.back(), losses.front() - 1.5) << "first " << losses.front() << " last " << losses.back();
  EXPECT_LT(s.val_loss, std::log(300.0) - 1.5);  // well below a uniform guess
  EXPECT_GT(s.val_accuracy, 0.1);  // chance is 1/300
  EXPECT_EQ(seen.size(), read_metrics_json(spec.run_dir).size());  // callback and file agree
  for (const char* f : {"model.safetensors", "config.json", "tokenizer.model", "metrics.jsonl",
                        "checkpoints/step-000000000060/model.safetensors",
                        "checkpoints/step-000000000060/optimizer.safetensors",
                        "checkpoints/step-000000000060/config.json"})
    EXPECT_TRUE(fs::exists(spec.run_dir + "/" + f)) << f;
  // Checkpoints every 10 steps: only the two newest are kept, and no temporary.
  int checkpoints = 0;
  for (const auto& e : fs::directory_iterator(spec.run_dir + "/checkpoints")) {
    EXPECT_EQ(e.path().filename().string().rfind("step-", 0), 0u) << e.path() << ": no temporary left";
    ++checkpoints;
  }
  EXPECT_EQ(checkpoints, 2);
  std::ifstream cfg(spec.run_dir + "/config.json");
  const auto j = nlohmann::json::parse(cfg);
  EXPECT_EQ(j["model"]["d_model"], 32);
  EXPECT_EQ(j["training"]["batch_size"], 16);
  EXPECT_EQ(j["state"]["step"], 60);
  EXPECT_TRUE(j["data"]["tokenizer_hash"].is_string());
  EXPECT_GT(j["data"]["train_tokens"].get<int64_t>(), 0);
  EXPECT_NEAR(j["metrics"]["val_loss"].get<double>(), s.val_loss, 1e-9);
  // The torch-free reader the studio uses sees the same run.
  const RunInfo info = read_run_info(spec.run_dir);
  EXPECT_EQ(info.model.d_model, 32);
  EXPECT_EQ(info.training.batch_size, 16);
  EXPECT_EQ(info.step, 60);
  EXPECT_EQ(info.total_steps, 60);
  EXPECT_NEAR(info.val_loss, s.val_loss, 1e-9);
  EXPECT_EQ(read_metrics(spec.run_dir).size(), seen.size());
}

TEST(Training, DeterministicGivenASeed) {
  const std::string dir = temp_dir("determinism");
  const std::string data = make_corpus(dir);
  RunSpec a = tiny_run(dir + "/a", data, 20), b = tiny_run(dir + "/b", data, 20);
  a.cache_dir = b.cache_dir = dir + "/cache";
  Trainer(a).run();
  Trainer(b).run();
  EXPECT_EQ(train_losses(read_metrics_json(a.run_dir)), train_losses(read_metrics_json(b.run_dir)));
}

TEST(Training, ResumeContinuesExactly) {
  const std::string dir = temp_dir("resume");
  const std::string data = make_corpus(dir);
  RunSpec straight = tiny_run(dir + "/straight", data, 40);
  straight.cache_dir = dir + "/cache";
  Trainer(straight).run();

  RunSpec first = tiny_run(dir + "/split", data, 20);
  first.cache_dir = dir + "/cache";
  Trainer(first).run();
  RunSpec second = first;
  second.resume = true;
  second.model = ModelConfig();  // taken from the run folder
  second.train.steps = 40;
  const TrainSummary s = Trainer(second).run();
  EXPECT_EQ(s.steps, 40);

  const auto metrics = read_metrics_json(first.run_dir);
  std::vector<int64_t> train_steps;
  for (const auto& m : metrics)
    if (m["kind"] == "train") train_steps.push_back(m["step"]);
  EXPECT_EQ(train_steps, (std::vector<int64_t>{5, 10, 15, 20, 25, 30, 35, 40}));  // no gap, no duplicate
  // Same batches, same optimizer moments, same weights: the curve is the uninterrupted one.
  const auto a = train_losses(read_metrics_json(straight.run_dir)), b = train_losses(metrics);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << "record " << i;
}

TEST(Training, StopFromAnotherThreadCheckpointsAndResumes) {
  const std::string dir = temp_dir("stop");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 100000);
  spec.train.checkpoint_every = 0;
  TrainCallbacks cb;
  Trainer* self = nullptr;
  int64_t stopped_after = 0;
  cb.on_metric = [&](const MetricRecord& m) {
    if (m.kind == "train" && m.step >= 15 && !stopped_after) {
      stopped_after = m.step;
      std::thread([self] { self->stop(); }).join();
    }
  };
  Trainer trainer(spec, cb);
  self = &trainer;
  const TrainSummary s = trainer.run();
  EXPECT_TRUE(s.stopped);
  EXPECT_GE(s.steps, stopped_after);
  EXPECT_LT(s.steps, stopped_after + 3);
  const auto j = nlohmann::json::parse(std::ifstream(spec.run_dir + "/config.json"));
  EXPECT_EQ(j["state"]["step"], s.steps);
  RunSpec more = spec;
  more.resume = true;
  more.train.steps = s.steps + 5;
  EXPECT_EQ(Trainer(more).run().steps, s.steps + 5);
}

// Issue 46: a stop that lands in the last step's validation. The step's weights are
// checkpointed, the run says it stopped (with the validation it has, of an earlier step), and a
// resume runs that validation and finishes the run without training a step more.
TEST(Training, AStopDuringTheLastValidationKeepsTheLastStep) {
  const std::string dir = temp_dir("stop_last_validation");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 20);
  spec.train.checkpoint_every = 0;  // only the end's checkpoint holds step 20
  TrainCallbacks cb;
  Trainer* self = nullptr;
  double val_loss_10 = NAN;
  cb.on_metric = [&](const MetricRecord& m) {  // the last train point comes just before its validation
    if (m.kind == "eval" && m.step == 10) val_loss_10 = m.val_loss;
    if (m.kind == "train" && m.step == 20) std::thread([self] { self->stop(); }).join();
  };
  Trainer trainer(spec, cb);
  self = &trainer;
  const TrainSummary s = trainer.run();
  EXPECT_TRUE(s.stopped) << "a stop during the last validation was reported as the end of the run";
  EXPECT_EQ(s.steps, 20);
  EXPECT_DOUBLE_EQ(s.val_loss, val_loss_10);  // the last validation there is: step 10's
  const auto j = nlohmann::json::parse(std::ifstream(spec.run_dir + "/config.json"));
  EXPECT_EQ(j["state"]["step"], 20) << "the last steps' training was lost";
  EXPECT_EQ(j["metrics"]["val_step"], 10);
  EXPECT_TRUE(fs::exists(spec.run_dir + "/checkpoints/step-000000000020"));
  for (const auto& m : read_metrics_json(spec.run_dir)) EXPECT_FALSE(m["kind"] == "eval" && m["step"] == 20);

  RunSpec again = spec;
  again.resume = true;
  const TrainSummary r = Trainer(again).run();
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.steps, 20);
  EXPECT_TRUE(std::isfinite(r.val_loss));
  EXPECT_NE(r.val_loss, val_loss_10);
  int evals_at_20 = 0, trains_after_20 = 0;
  for (const auto& m : read_metrics_json(spec.run_dir)) {
    evals_at_20 += m["kind"] == "eval" && m["step"] == 20;
    trains_after_20 += m["kind"] == "train" && m["step"] > 20;
  }
  EXPECT_EQ(evals_at_20, 1);
  EXPECT_EQ(trains_after_20, 0);
  const auto k = nlohmann::json::parse(std::ifstream(spec.run_dir + "/config.json"));
  EXPECT_EQ(k["metrics"]["val_step"], 20);
  EXPECT_DOUBLE_EQ(k["metrics"]["val_loss"].get<double>(), r.val_loss);
  const auto c = nlohmann::json::parse(std::ifstream(spec.run_dir + "/checkpoints/step-000000000020/config.json"));
  EXPECT_EQ(c["metrics"]["val_step"], 20);

  // A third resume: finished, with its own numbers (issue 46: not NaN).
  const TrainSummary f = Trainer(again).run();
  EXPECT_FALSE(f.stopped);
  EXPECT_EQ(f.steps, 20);
  EXPECT_DOUBLE_EQ(f.val_loss, r.val_loss);
  EXPECT_TRUE(std::isfinite(f.tokens_per_s));
  EXPECT_TRUE(std::isfinite(f.train_loss));
}

TEST(Training, PauseHoldsTheLoopUntilResume) {
  const std::string dir = temp_dir("pause");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 20);
  Trainer* self = nullptr;
  std::atomic<bool> paused_seen{false};
  std::thread resumer;
  TrainCallbacks cb;
  cb.on_metric = [&](const MetricRecord& m) {
    if (m.kind == "train" && m.step == 5) {
      self->pause();
      resumer = std::thread([self, &paused_seen] {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        paused_seen = self->paused();
        self->resume();
      });
    }
  };
  Trainer trainer(spec, cb);
  self = &trainer;
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(trainer.run().steps, 20);
  resumer.join();
  EXPECT_TRUE(paused_seen);
  EXPECT_GE(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(300));
}

TEST(Training, ClearErrors) {
  const std::string dir = temp_dir("errors");
  const std::string data = make_corpus(dir);
  RunSpec spec = tiny_run(dir, data, 5);
  Trainer(spec).run();
  try {  // the folder already holds a run
    Trainer(spec).run();
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--resume"), std::string::npos) << e.what();
  }
  const std::string short_docs = dir + "/short.txt";
  std::ofstream(short_docs) << "Hi.\n<|endoftext|>\nBye.\n<|endoftext|>\n";
  RunSpec bad = tiny_run(dir + "/b", short_docs, 5);
  bad.tokenizer_path = spec.run_dir + "/tokenizer.model";
  EXPECT_THROW(Trainer(bad).run(), CorpusError);
  RunSpec zero = tiny_run(dir + "/z", data, 5);
  zero.train.batch_size = 0;
  EXPECT_THROW(Trainer(zero).run(), std::invalid_argument);
}

// ---- checkpoints and loaded models ---------------------------------------------------------------
class TrainedRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(temp_dir("model"));
    RunSpec spec = tiny_run(*dir_, make_corpus(*dir_), 40);
    spec.model = tiny_model("attn", 1);
    spec.model.layers.push_back({"hsm_ab_mh_ext", 64, 4});
    spec.model.layers.push_back({"hsm_ab", 64, 1});
    Trainer(spec).run();
    run_ = new std::string(spec.run_dir);
  }
  static std::string* dir_;
  static std::string* run_;
};
std::string* TrainedRun::dir_ = nullptr;
std::string* TrainedRun::run_ = nullptr;

TEST_F(TrainedRun, CachedAndUncachedGenerationAgree) {
  auto model = Model::load(*run_, "cpu");
  GenerateOptions o;
  o.sampling.seed = 9;
  o.sampling.max_new_tokens = 80;  // past the 32-token context: the window slides
  o.sampling.stop_at_end = false;
  o.use_cache = true;
  const auto cached = Generator(model).run("Once upon a time", o);
  o.use_cache = false;
  const auto uncached = Generator(model).run("Once upon a time", o);
  ASSERT_EQ(cached.tokens.size(), 80u);
  ASSERT_EQ(cached.tokens.size(), uncached.tokens.size());
  for (size_t i = 0; i < cached.tokens.size(); ++i) {
    EXPECT_EQ(cached.tokens[i].id, uncached.tokens[i].id) << i;
    EXPECT_NEAR(cached.tokens[i].prob, uncached.tokens[i].prob, 1e-4) << i;
  }
  EXPECT_EQ(cached.text, uncached.text);
}

TEST_F(TrainedRun, SeedsReproduceAndStreamAddsUp) {
  auto model = Model::load(*run_, "cpu");
  GenerateOptions o;
  o.sampling.seed = 5;
  o.sampling.max_new_tokens = 30;
  o.sampling.temperature = 1.2;
  std::string streamed;
  const auto a = Generator(model).run("Tom saw", o, [&](const GeneratedToken& t) {
    streamed += t.text;
    EXPECT_GT(t.prob, 0.0f);
    EXPECT_FALSE(t.top.empty());
    return true;
  });
  const auto b = Generator(model).run("Tom saw", o);
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(streamed, a.text);  // the streamed pieces are exactly the decoded text
  o.sampling.seed = 6;
  EXPECT_NE(Generator(model).run("Tom saw", o).text, a.text);
  // top-k 1 is greedy
  o.sampling.top_k = 1;
  GenerateOptions greedy = o;
  greedy.sampling.temperature = 0;
  greedy.sampling.top_k = 0;
  EXPECT_EQ(Generator(model).run("Tom saw", o).text, Generator(model).run("Tom saw", greedy).text);
}

TEST_F(TrainedRun, EvaluateMatchesTraining) {
  auto model = Model::load(*run_, "cpu");
  EvalOptions e;
  e.cache_dir = *dir_ + "/cache";
  e.batch_size = 16;  // the training run's last validation: 4 batches of 16 windows
  e.max_batches = 4;
  const EvalResult r = Evaluator(model).evaluate(*dir_ + "/stories.txt", e);
  const auto j = nlohmann::json::parse(std::ifstream(*run_ + "/config.json"));
  EXPECT_EQ(r.tokens, 4 * 16 * 32);
  EXPECT_NEAR(r.loss, j["metrics"]["val_loss"].get<double>(), 1e-4);
  EXPECT_NEAR(r.accuracy, j["metrics"]["val_accuracy"].get<double>(), 1e-6);
  e.max_batches = 0;
  const EvalResult all = Evaluator(model).evaluate(*dir_ + "/stories.txt", e);
  EXPECT_GT(all.tokens, r.tokens);
  EXPECT_GT(all.accuracy, 0.1);
  // Unigram statistics of a structured corpus beat a uniform guess over the vocabulary.
  EXPECT_GT(all.unigram_loss, 0.5);
  EXPECT_LT(all.unigram_loss, std::log(300.0) - 1.0);
}

TEST_F(TrainedRun, CorruptCheckpointsAreRefused) {
  const std::string copy = *dir_ + "/corrupt";
  fs::remove_all(copy);
  fs::copy(*run_, copy);
  const std::string weights = copy + "/model.safetensors";
  auto expect_refused = [&](const std::string& needle) {
    try {
      Model::load(copy, "cpu");
      ADD_FAILURE() << "accepted a checkpoint that should fail with: " << needle;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  // Truncated by one byte.
  fs::resize_file(weights, fs::file_size(weights) - 1);
  expect_refused("truncated");
  // A config that does not match the weights.
  fs::copy_file(*run_ + "/model.safetensors", weights, fs::copy_options::overwrite_existing);
  auto j = nlohmann::json::parse(std::ifstream(copy + "/config.json"));
  j["model"]["d_model"] = 64;
  std::ofstream(copy + "/config.json") << j.dump();
  expect_refused("shape");
  // Not a run folder.
  fs::remove(copy + "/config.json");
  expect_refused("no config.json");
}

// ---- diagnostics: live weights and a trained run's diagnosis ---------------------------------
TEST(Training, OnWeightsFollowsTheRunAndTheModelDiagnosesIt) {
  const std::string dir = temp_dir("weights");
  RunSpec spec = tiny_run(dir, make_corpus(dir, 200), 20);
  spec.model.context = 16;
  spec.model.layers = {{"hsm_ab", 64, 1}, {"attn", 64, 4}, {"hsm_gate2", 64, 4}, {"hsm_ab_mh", 64, 4}};
  std::vector<std::pair<int64_t, std::vector<MixerWeights>>> seen;
  TrainCallbacks cb;
  cb.on_weights = [&](int64_t step, const std::vector<MixerWeights>& w) { seen.emplace_back(step, w); };
  Trainer(spec, cb).run();
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen.front().first, 0);  // at the start
  EXPECT_EQ(seen[1].first, 10);      // at every validation
  EXPECT_EQ(seen.back().first, 20);
  const auto& first = seen.front().second;
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[0].a, std::vector<float>{0.5f});  // the initial mix
  EXPECT_NE(seen.back().second[0].a, first[0].a);   // and then trained
  EXPECT_EQ(first[3].a.size(), 4u);

  // The saved run: the model reads the same weights back.
  auto model = Model::load(spec.run_dir, "cpu");
  const auto loaded = model->mixer_weights();
  ASSERT_EQ(loaded.size(), 4u);
  for (size_t l = 0; l < loaded.size(); ++l) {
    EXPECT_EQ(loaded[l].a, seen.back().second[l].a) << l;
    EXPECT_EQ(loaded[l].b, seen.back().second[l].b) << l;
    EXPECT_EQ(loaded[l].shifts, seen.back().second[l].shifts) << l;
  }

  std::string prompt;
  for (int i = 0; i < 4; ++i) prompt += "Once upon a time, Lily saw a big red ball and a little cat in the box. ";
  const Diagnosis d = Prober(model).diagnose(prompt);
  EXPECT_EQ(d.length, 16);  // cut to the context
  EXPECT_EQ(d.token_ids.size(), 16u);
  EXPECT_EQ(d.tokens.size(), 16u);
  EXPECT_EQ(d.tokens[0], model->tokenizer().piece(d.token_ids[0]));
  ASSERT_EQ(d.layers.size(), 4u);
  const MatrixKind kinds[] = {MatrixKind::kLinear, MatrixKind::kAttention, MatrixKind::kJacobian, MatrixKind::kLinear};
  const size_t heads[] = {1, 4, 4, 4};
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_EQ(d.layers[l].kind, kinds[l]) << l;
    EXPECT_EQ(d.layers[l].heads.size(), heads[l]) << l;
    for (const auto& h : d.layers[l].heads) EXPECT_EQ(h.matrix.size(), 256u);
  }
  EXPECT_EQ(Prober(model).diagnose("Once upon a time", 2).length, 2);
  EXPECT_THROW(Prober(model).diagnose(""), std::invalid_argument);

  // Resuming reports the weights at the resumed step first.
  RunSpec more = spec;
  more.resume = true;
  more.train.steps = 25;
  seen.clear();
  Trainer(more, cb).run();
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().first, 20);
}

TEST(Training, ExportedF16AndBf16RunsLoadAndAgreeWithF32) {
  const std::string dir = temp_dir("export");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 20);
  Trainer(spec).run();
  const std::vector<int32_t> tokens = {5, 17, 42, 8, 99, 3, 12};
  const std::vector<float> ref = Prober(Model::load(spec.run_dir, "cpu")).logits(tokens);
  for (const std::string dtype : {"F16", "BF16"}) {
    const std::string out = dir + "/export-" + dtype;
    ExportOptions o;
    o.dtype = dtype;
    export_run(spec.run_dir, out, o);
    EXPECT_LT(fs::file_size(out + "/model.safetensors"), fs::file_size(spec.run_dir + "/model.safetensors") * 0.6);
    EXPECT_FALSE(fs::exists(out + "/optimizer.safetensors"));
    const SafetensorsFile f = read_safetensors(out + "/model.safetensors");
    for (const auto& t : f.tensors) EXPECT_EQ(t.dtype, dtype) << t.name;
    const std::vector<float> got = Prober(Model::load(out, "cpu")).logits(tokens);
    ASSERT_EQ(got.size(), ref.size());
    double worst = 0;
    for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, double(std::abs(got[i] - ref[i])));
    EXPECT_LT(worst, dtype == "F16" ? 0.02 : 0.15) << dtype;  // rounding of the weights only
    EXPECT_GT(worst, 0.0) << dtype;                           // it really is another precision
  }
  EXPECT_THROW(export_run(spec.run_dir, spec.run_dir, {}), std::invalid_argument);
  ExportOptions bad;
  bad.dtype = "I8";
  EXPECT_THROW(export_run(spec.run_dir, dir + "/bad", bad), std::invalid_argument);
}

TEST(Training, StoryStartWindowsBeginAtStoriesAndKeepBestKeepsTheLowestValidation) {
  // Window starts on a hand-made split: documents [0..4] and [5..13], end-of-text = 9.
  const std::vector<uint16_t> tokens = {1, 2, 3, 4, 9, 5, 6, 7, 8, 1, 2, 3, 4, 9};
  EXPECT_EQ(window_starts(tokens, 4, WindowLayout::kStoryStart, 9), (std::vector<int64_t>{0, 5, 9}));
  EXPECT_EQ(window_starts(tokens, 3, WindowLayout::kStoryStart, 9), (std::vector<int64_t>{0, 5, 8}));
  EXPECT_EQ(window_starts(tokens, 4, WindowLayout::kPacked, 9), (std::vector<int64_t>{0, 4, 8}));
  EXPECT_THROW(window_layout("diagonal"), std::invalid_argument);

  const std::string dir = temp_dir("story-start");
  RunSpec spec = tiny_run(dir, make_corpus(dir), 30);
  spec.train.windows = "story_start";
  spec.train.keep_best = true;
  std::vector<MetricRecord> evals;
  TrainCallbacks cb;
  cb.on_metric = [&](const MetricRecord& m) {
    if (m.kind == "eval") evals.push_back(m);
  };
  Trainer(spec, cb).run();
  ASSERT_FALSE(evals.empty());
  const auto best = std::min_element(evals.begin(), evals.end(),
                                     [](const MetricRecord& a, const MetricRecord& b) { return a.val_loss < b.val_loss; });
  ASSERT_TRUE(fs::exists(spec.run_dir + "/best.safetensors"));
  std::ifstream cfg(spec.run_dir + "/config.json");
  const auto j = nlohmann::json::parse(cfg);
  EXPECT_EQ(j["training"]["windows"], "story_start");
  EXPECT_EQ(j["state"]["best_step"].get<int64_t>(), best->step);
  EXPECT_NEAR(j["state"]["best_val_loss"].get<double>(), best->val_loss, 1e-12);
  // The best weights export and evaluate; both layouts evaluate the same model.
  ExportOptions o;
  o.best = true;
  o.dtype = "F32";
  export_run(spec.run_dir, dir + "/best", o);
  auto model = Model::load(dir + "/best", "cpu");
  EvalOptions eo;
  eo.cache_dir = spec.cache_dir;
  eo.windows = "story_start";
  const EvalResult story = Evaluator(model).evaluate(spec.data_path, eo);
  eo.windows = "packed";
  const EvalResult packed = Evaluator(model).evaluate(spec.data_path, eo);
  EXPECT_GT(story.tokens, 0);
  EXPECT_GT(packed.tokens, 0);
  EXPECT_NE(story.loss, packed.loss);
  eo.windows = "diagonal";
  EXPECT_THROW(Evaluator(model).evaluate(spec.data_path, eo), std::invalid_argument);
}
