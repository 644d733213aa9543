// Traces recorded during training (issue 67, hsm/formation.h): a record at a step is what
// `hsm trace` (Tracer) gives on that step's weights; a resumed run keeps its log consistent; the
// log is bounded; the route share and the formation rule on hand-made series.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <fstream>

#include "hsm/formation.h"
#include "hsm/model.h"
#include "hsm/run_folder.h"
#include "hsm/trace.h"
#include "hsm/trainer.h"
#include "inference/model_impl.h"
#include "train/trace_recorder.h"
#include "training_test_util.h"

using namespace hsm;
using namespace hsm::test;

namespace {

// The record's maps, routes and share against the tracer's on the loaded model (1e-6).
void expect_record_is_trace(const TraceRecord& rec, const Trace& t) {
  EXPECT_EQ(rec.clean, t.clean);
  EXPECT_EQ(rec.corrupt, t.corrupt);
  EXPECT_EQ(rec.clean_labels, t.clean_labels);
  EXPECT_EQ(rec.corrupted_positions, t.corrupted_positions);
  EXPECT_EQ(rec.answer_position, t.answer_position);
  EXPECT_EQ(rec.answer_token, t.answer_token);
  EXPECT_NEAR(rec.clean_logprob, t.clean_logprob, 1e-6);
  EXPECT_NEAR(rec.corrupt_logprob, t.corrupt_logprob, 1e-6);
  ASSERT_EQ(rec.exact.size(), t.exact.size());
  for (size_t s = 0; s < t.exact.size(); ++s) {
    EXPECT_EQ(rec.exact[s].site, t.exact[s].site);
    ASSERT_EQ(rec.exact[s].effect.size(), t.exact[s].effect.size());
    for (size_t i = 0; i < t.exact[s].effect.size(); ++i) {
      const double a = rec.exact[s].effect[i], b = t.exact[s].effect[i];
      if (std::isnan(b)) {
        EXPECT_TRUE(std::isnan(a)) << t.exact[s].site << " cell " << i;
      } else {
        EXPECT_NEAR(a, b, 1e-6) << t.exact[s].site << " cell " << i;
      }
    }
  }
  const std::vector<RouteEdge> kept = prune_routes(t.routes, rec.route_threshold);
  ASSERT_EQ(rec.routes.size(), kept.size());
  for (size_t e = 0; e < kept.size(); ++e) {
    EXPECT_EQ(rec.routes[e].layer, kept[e].layer);
    EXPECT_EQ(rec.routes[e].from, kept[e].from);
    EXPECT_EQ(rec.routes[e].to, kept[e].to);
    EXPECT_EQ(rec.routes[e].kind, kept[e].kind);
    EXPECT_NEAR(rec.routes[e].weight, kept[e].weight, 1e-6);
  }
  EXPECT_NEAR(rec.route_share, route_share(t.routes, t.corrupted_positions), 1e-6);
  EXPECT_EQ(rec.mixer_effect.size(), static_cast<size_t>(t.layers));
}

std::vector<int64_t> steps_of(const std::vector<TraceRecord>& records) {
  std::vector<int64_t> out;
  for (const TraceRecord& r : records) out.push_back(r.step);
  return out;
}

TEST(TracesWhileTraining, ATaskRunsRecordIsHsmTraceOnThatStepsModel) {
  const std::string dir = temp_dir("traces_task");
  RunSpec spec = tiny_task_run(dir, "mqar:vocab=64,pairs=4,context=32", 20);
  spec.train.eval_every = 10;
  const TrainSummary s = Trainer(spec).run();
  ASSERT_EQ(s.steps, 20);
  const std::vector<TraceRecord> records = read_trace_log(spec.run_dir);
  ASSERT_EQ(steps_of(records), (std::vector<int64_t>{10, 20}));
  const auto metrics = read_metrics_json(spec.run_dir);
  const auto model = Model::load(spec.run_dir, "cpu");
  const Tracer tracer(model);
  TraceRequest r = tracer.task_request(0);
  r.attribution = false;
  r.routes = true;
  const Trace t = tracer.trace(r);
  const TraceRecord& last = records.back();
  EXPECT_EQ(last.example, "test example 0 of " + model->task()->name());
  expect_record_is_trace(last, t);
  // The validation it was made at.
  for (const auto& m : metrics)
    if (m["kind"] == "eval" && m["step"] == 20) {
      EXPECT_DOUBLE_EQ(last.val_loss, m["val_loss"].get<double>());
      EXPECT_DOUBLE_EQ(last.accuracy, m["answer_accuracy"].get<double>());
    }
}

// A corpus run of `steps` that traces a digit pair: digits the corpus lacks are one byte token
// each, so the pair has the same token count.
RunSpec digit_pair_run(const std::string& dir, int64_t steps) {
  RunSpec spec = tiny_run(dir, make_corpus(dir), steps);
  spec.model = tiny_model("attn", 2);
  spec.train.trace_text = "Once upon a time, Lily saw 3 red balls. Lily";
  spec.train.trace_corrupt = "Once upon a time, Lily saw 4 red balls. Lily";
  return spec;
}

TEST(TracesWhileTraining, ACorpusRunTracesItsPromptPair) {
  const std::string dir = temp_dir("traces_text");
  RunSpec spec = digit_pair_run(dir, 20);
  Trainer(spec).run();
  const std::vector<TraceRecord> records = read_trace_log(spec.run_dir);
  ASSERT_EQ(steps_of(records), (std::vector<int64_t>{10, 20}));
  const auto model = Model::load(spec.run_dir, "cpu");
  const Tracer tracer(model);
  TraceRequest r = tracer.text_request(spec.train.trace_text, spec.train.trace_corrupt);
  r.attribution = false;
  r.routes = true;
  expect_record_is_trace(records.back(), tracer.trace(r));
  EXPECT_EQ(records.back().example, "text");

  // An empty trace text: no traces, and a new run leaves no log.
  RunSpec off = tiny_run(dir + "/off", make_corpus(dir), 10);
  off.cache_dir = spec.cache_dir;
  off.train.trace_text.clear();
  Trainer(off).run();
  EXPECT_FALSE(TraceLogReader(off.run_dir).exists());
}

TEST(TracesWhileTraining, AResumedRunKeepsOneRecordPerStepUpToItsCheckpoint) {
  const std::string dir = temp_dir("traces_resume");
  RunSpec first = tiny_task_run(dir, "mqar:vocab=64,pairs=4,context=32", 20);
  first.train.eval_every = 10;
  first.train.checkpoint_every = 10;
  Trainer(first).run();
  // A record made after the checkpoint (a kill between them) is made again, not kept twice.
  const std::string log = RunFolder(first.run_dir).traces;
  std::string lines;
  {
    std::ifstream in(log);
    std::string line;
    while (std::getline(in, line)) lines += line + "\n";
  }
  nlohmann::json later = nlohmann::json::parse(lines.substr(lines.rfind('\n', lines.size() - 2) + 1));
  later["step"] = 25;
  std::ofstream(log, std::ios::app) << later.dump() << "\n";
  RunSpec second = first;
  second.resume = true;
  second.model = ModelConfig();
  second.train.steps = 40;
  Trainer(second).run();
  const std::vector<TraceRecord> records = read_trace_log(first.run_dir);
  EXPECT_EQ(steps_of(records), (std::vector<int64_t>{10, 20, 30, 40}));

  // The resumed run's records are the uninterrupted run's (same weights at each step).
  RunSpec straight = tiny_task_run(dir + "/straight", "mqar:vocab=64,pairs=4,context=32", 40);
  straight.train.eval_every = 10;
  straight.train.checkpoint_every = 10;
  Trainer(straight).run();
  const std::vector<TraceRecord> whole = read_trace_log(straight.run_dir);
  ASSERT_EQ(whole.size(), records.size());
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(whole[i].route_share, records[i].route_share, 1e-6);
}

TEST(TracesWhileTraining, TraceEveryThinsTheRecordsAndTheLogIsBounded) {
  const std::string dir = temp_dir("traces_every");
  RunSpec spec = tiny_task_run(dir, "mqar:vocab=64,pairs=4,context=32", 20);
  spec.train.eval_every = 5;
  spec.train.trace_every = 10;
  Trainer(spec).run();
  EXPECT_EQ(steps_of(read_trace_log(spec.run_dir)), (std::vector<int64_t>{5, 15}));
  spec.train.trace_example = -1;  // off
  spec.run_dir = dir + "/off";
  Trainer(spec).run();
  EXPECT_FALSE(TraceLogReader(spec.run_dir).exists());

  // A log holding kMaxTraceRecords records takes no more; one fewer takes one.
  const auto task = parse_task("mqar:vocab=64,pairs=4,context=32");
  ModelConfig config = tiny_model("attn", 2);
  adopt_task_shape(config, *task);
  const std::string full = dir + "/full";
  std::filesystem::create_directories(full);
  auto fill = [&](int64_t n) {
    std::ofstream out(RunFolder(full).traces, std::ios::trunc);
    for (int64_t i = 1; i <= n; ++i) out << "{\"step\": " << i << "}\n";
  };
  auto log = [](const std::string&) {};
  RunFolder folder(full);
  fill(kMaxTraceRecords);
  EXPECT_FALSE(TraceRecorder(folder, TrainSettings(), task.get(), nullptr, config, true, 1000, log).due(1001));
  fill(kMaxTraceRecords - 1);
  EXPECT_TRUE(TraceRecorder(folder, TrainSettings(), task.get(), nullptr, config, true, 1000, log).due(1001));
}

// ---- snapshots ----------------------------------------------------------------------------------

TEST(Snapshots, LogSpacedStepsAreKeptBesideTheNewestCheckpointsAndBounded) {
  TrainSettings s;
  s.snapshot_log = true;
  std::vector<int64_t> steps;
  for (int64_t i = 0; i <= 600; ++i)
    if (is_snapshot_step(s, i)) steps.push_back(i);
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 5, 10, 20, 50, 100, 200, 500}));
  s.snapshot_log = false;
  s.snapshot_every = 7;
  EXPECT_TRUE(is_snapshot_step(s, 14));
  EXPECT_FALSE(is_snapshot_step(s, 15));
  EXPECT_FALSE(is_snapshot_step(TrainSettings(), 100));

  const std::string dir = temp_dir("snapshots");
  RunSpec spec = tiny_task_run(dir, "mqar:vocab=64,pairs=4,context=32", 20);
  spec.train.snapshot_log = true;
  Trainer(spec).run();
  const RunFolder run(spec.run_dir);
  EXPECT_EQ(run.kept_steps(), (std::vector<int64_t>{1, 2, 5, 10, 20}));
  // Step 5's model is its own, not the newest one's.
  const auto at5 = Model::load(spec.run_dir, "cpu", 5), now = Model::load(spec.run_dir, "cpu");
  EXPECT_NE(at5->mixer_weights().size(), 0u);
  const auto w5 = at5->impl().gpt->named_parameters(), w20 = now->impl().gpt->named_parameters();
  EXPECT_GT((w5["tok_emb.weight"] - w20["tok_emb.weight"]).abs().max().item<double>(), 1e-6);
  try {
    Model::load(spec.run_dir, "cpu", 3);
    ADD_FAILURE() << "step 3 has no model";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("keeps no model of step 3; it keeps steps 1, 2, 5, 10, 20"), std::string::npos)
        << e.what();
  }
  // A resumed run drops the snapshots past its checkpoint (it makes them again).
  auto snapshot_count = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(run.snapshots)) n += e.is_directory();
    return n;
  };
  EXPECT_EQ(snapshot_count(), 5);
  run.drop_snapshots_after(5);
  EXPECT_EQ(snapshot_count(), 3);
  EXPECT_EQ(run.kept_steps(), (std::vector<int64_t>{1, 2, 5, 10, 20}));  // 10 and 20: the checkpoints
  // The bound: with kMaxSnapshots kept, no more.
  for (int i = 0; i < RunFolder::kMaxSnapshots - 3; ++i)
    std::filesystem::create_directories(run.snapshots + "/step-" + std::to_string(100000 + i));
  EXPECT_FALSE(run.keep_snapshot(20));
  EXPECT_EQ(snapshot_count(), RunFolder::kMaxSnapshots);
  std::filesystem::remove_all(run.snapshots + "/step-100000");
  EXPECT_TRUE(run.keep_snapshot(20));
  EXPECT_EQ(snapshot_count(), RunFolder::kMaxSnapshots);
}

// ---- the route share and the rule ------------------------------------------------------------

TEST(Formation, TheRouteShareMultipliesWeightsAlongPathsAndSumsThem) {
  Routes r;
  r.layers = 2;
  r.positions = 3;
  r.answer_position = 2;
  // Layer 1: node (2,2) from (1,2) residual 0.5, (1,1) mixer 0.5. Layer 0: (1,1) from (0,0)
  // mixer 0.4 and (0,1) residual 0.6; (1,2) from (0,2) residual 1.
  r.edges = {{1, 2, 2, 0.5, RouteKind::kResidual}, {1, 1, 2, 0.5, RouteKind::kMixer},
             {0, 0, 1, 0.4, RouteKind::kMixer},    {0, 1, 1, 0.6, RouteKind::kResidual},
             {0, 2, 2, 1.0, RouteKind::kResidual}};
  EXPECT_DOUBLE_EQ(route_share(r, {0}), 0.2);
  EXPECT_DOUBLE_EQ(route_share(r, {1}), 0.3);
  EXPECT_DOUBLE_EQ(route_share(r, {2}), 0.5);
  EXPECT_DOUBLE_EQ(route_share(r, {0, 1, 2}), 1.0);
  r.edges.erase(r.edges.begin() + 2);  // no path from position 0: exactly nothing
  EXPECT_EQ(route_share(r, {0}), 0.0);
}

std::vector<TraceRecord> series(const std::vector<double>& shares, const std::vector<double>& accuracy) {
  std::vector<TraceRecord> out;
  for (size_t i = 0; i < shares.size(); ++i) {
    TraceRecord r;
    r.step = 100 * static_cast<int64_t>(i + 1);
    r.route_share = shares[i];
    r.accuracy = accuracy[i];
    r.layers = 1;
    r.mixer_effect = {shares[i]};
    out.push_back(r);
  }
  return out;
}

TEST(Formation, ARouteFormsWhereItsSharePassesTheThresholdAndStays) {
  // Passes at 300, falls back at 400, passes again at 500 and stays: formed at 500.
  const Formation f = formation(series({0.01, 0.05, 0.2, 0.08, 0.15, 0.3, 0.4}, {0.1, 0.1, 0.2, 0.3, 0.6, 0.9, 0.9}));
  EXPECT_EQ(f.formed_step, 500);
  // Accuracy from 0.1 to 0.9: half its gain is 0.5, first reached at 500.
  EXPECT_DOUBLE_EQ(f.accuracy_level, 0.5);
  EXPECT_EQ(f.accuracy_step, 500);
  EXPECT_DOUBLE_EQ(f.max_share, 0.4);
  EXPECT_NE(f.summary().find("formed at step 500"), std::string::npos) << f.summary();

  // A share that ends below the threshold: no route formed; accuracy that does not rise: no jump.
  const Formation none = formation(series({0.0, 0.2, 0.05}, {0.3, 0.3, 0.2}));
  EXPECT_EQ(none.formed_step, -1);
  EXPECT_EQ(none.accuracy_step, -1);
  EXPECT_NE(none.summary().find("no route"), std::string::npos) << none.summary();

  // The threshold is the rule's: at 0.3 the same series forms at 600.
  EXPECT_EQ(formation(series({0.01, 0.05, 0.2, 0.08, 0.15, 0.3, 0.4}, {0, 0, 0, 0, 0, 0, 0}), {0.3, 0.5}).formed_step, 600);
  // Records out of order, a step twice (the later line wins).
  std::vector<TraceRecord> shuffled = series({0.2, 0.2, 0.0}, {0, 0, 0});
  std::swap(shuffled[0], shuffled[2]);
  TraceRecord again = shuffled[0];  // step 300, share 0
  again.route_share = 0.5;
  shuffled.push_back(again);
  EXPECT_EQ(formation(shuffled).formed_step, 100);
}

TEST(Formation, ARecordLineRoundTripsAndADamagedOneIsRefused) {
  TraceRecord r = series({0.25}, {0.5})[0];
  r.example = "text";
  r.clean = {1, 2, 3};
  r.corrupt = {1, 5, 3};
  r.clean_labels = {"a", "b", "c"};
  r.corrupt_labels = {"a", "x", "c"};
  r.corrupted_positions = {1};
  r.positions = 3;
  r.answer_position = 2;
  r.exact = {{"residual", {1, 0.5, NAN}}, {"mixer", {0, 0.25, 0.125}}, {"ffn", {0, 0, 0}}};
  r.routes = {{0, 1, 2, 0.75, RouteKind::kMixer}};
  r.route_threshold = 0.02;
  r.mixer_effect = {0.25};
  const TraceRecord back = parse_trace_record(trace_record_to_json_line(r), "x");
  EXPECT_EQ(back.step, r.step);
  EXPECT_EQ(back.clean_labels, r.clean_labels);
  ASSERT_EQ(back.exact.size(), 3u);
  EXPECT_DOUBLE_EQ(back.exact[1].effect[2], 0.125);
  EXPECT_TRUE(std::isnan(back.exact[0].effect[2]));
  ASSERT_EQ(back.routes.size(), 1u);
  EXPECT_EQ(back.routes[0].kind, RouteKind::kMixer);
  EXPECT_DOUBLE_EQ(back.route_share, 0.25);
  EXPECT_THROW(parse_trace_record("{\"step\": 3}", "traces.jsonl line 1"), std::runtime_error);
  nlohmann::json j = nlohmann::json::parse(trace_record_to_json_line(r));
  j["exact"]["mixer"][0] = {1, 2};
  EXPECT_THROW(parse_trace_record(j.dump(), "x"), std::runtime_error);
}

}  // namespace

namespace {

// What formation(records) takes of a record: the point the light reader must give.
void expect_point_of(const FormationPoint& p, const TraceRecord& r) {
  EXPECT_EQ(p.step, r.step);
  EXPECT_TRUE(p.accuracy == r.accuracy || (std::isnan(p.accuracy) && std::isnan(r.accuracy)));
  EXPECT_TRUE(p.val_loss == r.val_loss || (std::isnan(p.val_loss) && std::isnan(r.val_loss)));
  EXPECT_EQ(p.route_share, r.route_share);
  ASSERT_EQ(p.mixer_effect.size(), r.mixer_effect.size());
  for (size_t l = 0; l < p.mixer_effect.size(); ++l)
    EXPECT_TRUE(p.mixer_effect[l] == r.mixer_effect[l] || (std::isnan(p.mixer_effect[l]) && std::isnan(r.mixer_effect[l])));
}

}  // namespace

TEST(Formation, TheLightReaderGivesTheFullRecordsPointsAndRefusesWhatItRefuses) {
  // A real run's log: each line's point is its record's, and run_formation (the light reader)
  // equals formation() of the whole records.
  const std::string dir = temp_dir("light_reader");
  const RunSpec spec = digit_pair_run(dir, 30);
  Trainer(spec).run();
  const std::vector<TraceRecord> records = read_trace_log(spec.run_dir);
  std::string example;
  const std::vector<FormationPoint> points = read_formation_points(spec.run_dir, &example);
  ASSERT_EQ(points.size(), records.size());
  ASSERT_GE(points.size(), 3u);
  for (size_t i = 0; i < points.size(); ++i) expect_point_of(points[i], records[i]);
  EXPECT_EQ(example, records.back().example);
  const Formation whole = formation(records, {0.01, 0.5}), light = run_formation(spec.run_dir, {0.01, 0.5});
  EXPECT_EQ(light.summary(), whole.summary());
  EXPECT_EQ(light.layers, 2);
  EXPECT_EQ(light.points.size(), whole.points.size());

  // Members in another order, spaces, and strings and nested objects holding brackets, quotes and
  // the names read: only the top level's members count.
  TraceRecord r = series({0.25}, {0.5})[0];
  r.example = "a } ] \"step\": 9 { [ \\ \"";
  r.val_loss = 1.5;
  nlohmann::json j = nlohmann::json::parse(trace_record_to_json_line(r));
  j["exact"] = {{"residual", nlohmann::json::array()}};
  j["nested"] = {{"step", 99}, {"route_share", 0.9}, {"list", {{"accuracy", 1}, "]}"}}};
  std::string line = " " + j.dump(2) + " ";
  std::string got_example;
  const FormationPoint p = parse_formation_point(line, "x", &got_example);
  EXPECT_EQ(p.step, 100);
  EXPECT_EQ(p.route_share, 0.25);
  EXPECT_EQ(p.accuracy, 0.5);
  EXPECT_EQ(p.val_loss, 1.5);
  EXPECT_EQ(got_example, r.example);
  EXPECT_EQ(parse_formation_point(trace_record_to_json_line(r), "x").mixer_effect, std::vector<double>{0.25});

  // Refused, naming where: what parse_trace_record refuses in the members read, and JSON that is
  // not well-formed anywhere in the line.
  const std::string good = trace_record_to_json_line(r);
  auto refused = [](const std::string& bad) {
    try {
      parse_formation_point(bad, "traces.jsonl line 7");
    } catch (const std::runtime_error& e) {
      return std::string(e.what()).rfind("traces.jsonl line 7: ", 0) == 0;
    }
    return false;
  };
  EXPECT_FALSE(refused(good));
  for (const char* key : {"step", "route_share", "accuracy", "val_loss", "mixer_effect", "layers", "example"}) {
    nlohmann::json missing = nlohmann::json::parse(good);
    missing.erase(key);
    EXPECT_TRUE(refused(missing.dump())) << key;
  }
  nlohmann::json negative = nlohmann::json::parse(good);
  negative["step"] = -3;
  EXPECT_TRUE(refused(negative.dump()));
  nlohmann::json text_share = nlohmann::json::parse(good);
  text_share["route_share"] = "high";
  EXPECT_TRUE(refused(text_share.dump()));
  nlohmann::json short_effects = nlohmann::json::parse(good);
  short_effects["layers"] = 2;
  EXPECT_TRUE(refused(short_effects.dump()));
  EXPECT_TRUE(refused(good.substr(0, good.size() - 1)));  // cut
  EXPECT_TRUE(refused(good + "x"));                        // text after it
  EXPECT_TRUE(refused("[" + good + "]"));
  EXPECT_TRUE(refused(""));
  std::string unmatched = good;
  unmatched.replace(unmatched.find("\"routes\":[]"), 11, "\"routes\":[}");
  EXPECT_TRUE(refused(unmatched));
  std::string stray_quote = good;
  stray_quote.replace(stray_quote.find("\"example\":\""), 11, "\"example\":\"\"\"");
  EXPECT_TRUE(refused(stray_quote));
  EXPECT_TRUE(refused("{\"example\":\"never closed}"));
}
