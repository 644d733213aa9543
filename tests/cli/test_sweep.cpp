// `hsm sweep` run as a user would (issue 39): a 2 mixers x 2 seeds sweep of tiny models on
// two jobs, killed twice mid-way (kill -9 of the launcher, then SIGTERM), continues to four
// finished runs with no point left running by a killed launcher; the table's rows equal the
// run folders' own metrics and the mean and standard deviation over seeds are recomputed here;
// bad specs are refused in one line before any run starts.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "tiny_run.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string hsm(const std::string& args) {
  return std::string("HSM_RESOURCES='") + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "' " + args;
}

std::string temp(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / ("hsm_sweep_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// Alive and not a zombie waiting to be reaped.
bool alive(pid_t pid) {
  if (pid <= 0 || ::kill(pid, 0) != 0) return false;
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() || stat[close + 2] != 'Z';
}

template <class F>
bool wait_until(F ready, double seconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return ready();
}

// The launcher in the background; its pid.
pid_t start_sweep(const std::string& dir, const std::string& log) {
  const Result r =
      shell("cd '" + dir + "' && (" + hsm("sweep spec.json --out sw --jobs 2") + " > '" + log + "' 2>&1 & echo $!)");
  return static_cast<pid_t>(std::stol(r.out));
}

// The pids the points' state files name as running.
std::vector<pid_t> point_pids(const std::string& sweep) {
  std::vector<pid_t> pids;
  for (const auto& e : fs::directory_iterator(fs::path(sweep) / "points"))
    if (e.path().extension() == ".json") {
      try {
        const json j = json::parse(read_file(e.path().string()));
        if (j.value("state", "") == "running") pids.push_back(j.value("pid", 0));
      } catch (const std::exception&) {
      }
    }
  return pids;
}

int done_points(const std::string& sweep) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(sweep) / "points"))
    if (e.path().extension() == ".json" && read_file(e.path().string()).find("\"done\"") != std::string::npos) ++n;
  return n;
}

// Each run folder's metrics.jsonl size, by the run's (and its point's) name. Read beside
// training points: a checkpoint folder renamed or pruned while a recursive walk is inside it
// would end the walk with an error, so only the runs' own files are looked at.
std::map<std::string, uintmax_t> metrics_sizes(const std::string& sweep) {
  std::map<std::string, uintmax_t> sizes;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(sweep) / "runs", ec)) {
    const uintmax_t size = fs::file_size(e.path() / "metrics.jsonl", ec);
    if (!ec) sizes[e.path().filename().string()] = size;
  }
  return sizes;
}

// A point that trains now with at least 100 of its 300 steps to go: one that its state file
// names running, whose curve grew since `before` (this launcher trains it, past its start-up)
// and whose last record is at step 200 or before. A stop signal now finds it in its loop, however
// quickly the machine trains: a point near its end could finish first, and one just started
// could still be loading its data.
std::string point_midway(const std::string& sweep, const std::map<std::string, uintmax_t>& before) {
  for (const auto& [run, size] : metrics_sizes(sweep)) {
    const auto was = before.find(run);
    if (size < (was == before.end() ? 0 : was->second) + 200) continue;
    const std::string state = read_file(sweep + "/points/" + run + ".json");
    if (state.find("\"running\"") == std::string::npos) continue;
    std::istringstream lines(read_file(sweep + "/runs/" + run + "/metrics.jsonl"));
    int64_t last_step = -1;
    for (std::string line; std::getline(lines, line);) {
      const json m = json::parse(line, nullptr, false);  // the last line may be half-written
      if (!m.is_discarded() && m.contains("step")) last_step = m["step"].get<int64_t>();
    }
    if (last_step >= 0 && last_step <= 200) return run;
  }
  return "";
}

void expect_no_point_outlives(const std::string& sweep) {
  const std::vector<pid_t> pids = point_pids(sweep);
  for (pid_t pid : pids)
    EXPECT_TRUE(wait_until([&] { return !alive(pid); }, 60)) << "point process " << pid << " outlived its launcher";
}

}  // namespace

TEST(Sweep, KilledTwiceContinuesToFourRunsWhoseTableMatchesTheirMetrics) {
  const std::string dir = temp("kill");
  write_tiny_run_inputs(dir, 3, 0.0);
  std::ofstream(dir + "/spec.json") << R"({"name": "tiny", "base": {"config": "tiny.json"}, "data": "stories.txt",
    "train": {"steps": 300, "batch": 8, "eval_every": 100, "eval_batches": 2, "checkpoint_every": 10, "log_every": 5},
    "axes": {"model.layers.0.mixer": ["attn", "hsm_ab"], "seed": [1, 2]}})";
  const std::string sweep = dir + "/sw";

  // 1: kill -9 of the launcher once a point is done and others train; its points end with it.
  pid_t launcher = start_sweep(dir, dir + "/1.log");
  ASSERT_TRUE(wait_until([&] { return fs::exists(sweep + "/points") && done_points(sweep) >= 1; }, 300))
      << read_file(dir + "/1.log");
  ASSERT_TRUE(wait_until([&] { return !point_pids(sweep).empty(); }, 60)) << read_file(dir + "/1.log");
  ::kill(launcher, SIGKILL);
  ASSERT_TRUE(wait_until([&] { return !alive(launcher); }, 10));
  expect_no_point_outlives(sweep);
  EXPECT_LT(done_points(sweep), 4) << "the first kill came after the end";

  // 2: SIGTERM once the points train again: they stop with a checkpoint, the launcher ends.
  launcher = start_sweep(dir, dir + "/2.log");
  const std::map<std::string, uintmax_t> before = metrics_sizes(sweep);
  std::string midway;
  ASSERT_TRUE(wait_until([&] { return !(midway = point_midway(sweep, before)).empty(); }, 120))
      << read_file(dir + "/2.log");
  ::kill(launcher, SIGTERM);
  ASSERT_TRUE(wait_until([&] { return !alive(launcher); }, 60)) << read_file(dir + "/2.log");
  expect_no_point_outlives(sweep);
  EXPECT_LT(done_points(sweep), 4) << "the second kill came after the end";
  EXPECT_NE(read_file(dir + "/2.log").find("stopping"), std::string::npos) << read_file(dir + "/2.log");
  // The finished point was skipped.
  const std::string log2 = read_file(dir + "/2.log");
  EXPECT_EQ(log2.find("4 points, 0 done"), std::string::npos) << log2;

  // The points the SIGTERM stopped: each log says at which step (the periodic checkpoints are
  // every 10 steps; the one before the kill -9 is older). Their logs so far.
  std::map<std::string, std::pair<size_t, std::string>> stopped;  // log -> (its length, the step)
  for (const auto& e : fs::directory_iterator(sweep + "/points")) {
    if (e.path().extension() != ".log") continue;
    // A point the first stop interrupted may have finished while the second launcher ran: its
    // log still says where the first stop left it, but it is done and step 3 skips it.
    fs::path state = e.path();
    state.replace_extension(".json");
    if (read_file(state.string()).find("\"done\"") != std::string::npos) continue;
    const std::string text = read_file(e.path().string());
    const size_t at = text.rfind("stopped at step ");
    if (at == std::string::npos) continue;
    const size_t from = at + std::strlen("stopped at step ");
    stopped[e.path().string()] = {text.size(), text.substr(from, text.find_first_not_of("0123456789", from) - from)};
  }
  EXPECT_EQ(stopped.count(sweep + "/points/" + midway + ".log"), 1u)
      << midway << " was training when the SIGTERM came, and its log does not say where it stopped\n"
      << log2 << read_file(sweep + "/points/" + midway + ".log");

  // 3: to the end.
  const Result r = shell("cd '" + dir + "' && " + hsm("sweep spec.json --out sw --jobs 2"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(done_points(sweep), 4);
  // Each point the SIGTERM stopped continued from that stop's checkpoint, at the step it
  // stopped at (not from the older checkpoint the kill -9 left).
  for (const auto& [log, before_and_step] : stopped) {
    const std::string added = read_file(log).substr(before_and_step.first);
    const size_t resuming = added.find("resuming ");
    ASSERT_NE(resuming, std::string::npos) << log << "\n" << added;
    const std::string line = added.substr(resuming, added.find('\n', resuming) - resuming);
    EXPECT_NE((line + " ").find(" at step " + before_and_step.second + " "), std::string::npos)
        << line << ": not the step it stopped at, " << before_and_step.second;
  }

  const Result t = shell(hsm("sweep table '" + sweep + "' --json 2>/dev/null"));
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const json rows = json::parse(t.out)["rows"];
  ASSERT_EQ(rows.size(), 4u);
  std::set<std::string> mixers_seeds;
  for (const json& row : rows) {
    EXPECT_EQ(row["state"], "done");
    mixers_seeds.insert(row["settings"]["model.layers.0.mixer"].get<std::string>() + "/" +
                        row["settings"]["seed"].dump());
    // The run folder's own records, read here.
    const std::string run = sweep + "/runs/" + row["run"].get<std::string>();
    std::ifstream in(run + "/metrics.jsonl");
    std::string line;
    double final_loss = NAN, best_loss = INFINITY, final_acc = NAN;
    int64_t last_step = 0;
    std::vector<int64_t> eval_steps;
    while (std::getline(in, line)) {
      const json m = json::parse(line);
      last_step = std::max<int64_t>(last_step, m["step"].get<int64_t>());
      if (m["kind"] != "eval") continue;
      eval_steps.push_back(m["step"].get<int64_t>());
      final_loss = m["val_loss"].get<double>();
      best_loss = std::min(best_loss, final_loss);
      final_acc = m["val_accuracy"].get<double>();
    }
    EXPECT_EQ(last_step, 300) << run;
    // A resumed run's records go on from its checkpoint: no step twice, none backwards.
    ASSERT_FALSE(eval_steps.empty()) << run;
    EXPECT_EQ(eval_steps.back(), 300) << run;
    EXPECT_TRUE(std::is_sorted(eval_steps.begin(), eval_steps.end()) &&
                std::adjacent_find(eval_steps.begin(), eval_steps.end()) == eval_steps.end())
        << run;
    EXPECT_DOUBLE_EQ(row["final_val_loss"].get<double>(), final_loss) << run;
    EXPECT_DOUBLE_EQ(row["best_val_loss"].get<double>(), best_loss) << run;
    EXPECT_DOUBLE_EQ(row["final_accuracy"].get<double>(), final_acc) << run;
    EXPECT_EQ(row["step"], 300);
    EXPECT_GT(row["params"].get<int64_t>(), 0);
    EXPECT_GT(row["tokens_per_s"].get<double>(), 0);
    // The run folder's model is the point's: its mixer at layer 0.
    const json config = json::parse(read_file(run + "/config.json"));
    EXPECT_EQ(config["model"]["layers"][0]["mixer"], row["settings"]["model.layers.0.mixer"]) << run;
    EXPECT_EQ(config["training"]["seed"], row["settings"]["seed"]) << run;
  }
  EXPECT_EQ(mixers_seeds, (std::set<std::string>{"attn/1", "attn/2", "hsm_ab/1", "hsm_ab/2"}));

  // Over seeds: mean and sample standard deviation of each mixer's two runs, recomputed.
  const Result g = shell(hsm("sweep table '" + sweep + "' --json --group seed 2>/dev/null"));
  ASSERT_EQ(g.exit_code, 0) << g.out;
  const json groups = json::parse(g.out)["groups"];
  ASSERT_EQ(groups.size(), 2u);
  for (const json& group : groups) {
    const std::string mixer = group["settings"]["model.layers.0.mixer"];
    EXPECT_EQ(group["settings"].size(), 1u);
    std::vector<double> xs;
    for (const json& row : rows)
      if (row["settings"]["model.layers.0.mixer"] == mixer) xs.push_back(row["best_val_loss"].get<double>());
    ASSERT_EQ(xs.size(), 2u);
    const double mean = (xs[0] + xs[1]) / 2;
    const double sd = std::sqrt(((xs[0] - mean) * (xs[0] - mean) + (xs[1] - mean) * (xs[1] - mean)) / 1.0);
    const json& m = group["metrics"]["best_val_loss"];
    EXPECT_EQ(m["n"], 2);
    EXPECT_NEAR(m["mean"].get<double>(), mean, 1e-12);
    EXPECT_NEAR(m["std"].get<double>(), sd, 1e-12);
    EXPECT_GT(sd, 0) << "two seeds gave the same loss";
  }
}

TEST(Sweep, BadSpecsAreRefusedInOneLineBeforeAnyRunStarts) {
  const std::string dir = temp("bad");
  write_tiny_run_inputs(dir, 3, 0.0);
  const std::string head = R"({"base": {"config": "tiny.json"}, "data": "stories.txt", "train": {"steps": 5}, )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"base": {"config": "tiny.json"}, "data": "stories.txt", "trian": {"steps": 5}, "axes": {"seed": [1]}})",
       "trian"},
      {head + R"("axes": {"seed": [1, 2], "train.lerning_rate": [0.001]}})", "train.lerning_rate"},
      {head + R"("axes": {"model.layers.0.mixr": ["attn", "hsm_ab"]}})", "model.layers.0.mixr"},
      {head + R"("axes": {"model.layers.0.mixer": []}})", "model.layers.0.mixer is empty"},
      {head + R"("axes": {"model.layers.2.mixer": ["attn"]}})", "model.layers.2.mixer = \"attn\""},
      {head + R"("axes": {"model.layers.0.mixer": ["attn", "hsm_abc"]}})", "\"hsm_abc\""},
      {head + R"("axes": {"model.d_model": [32, 30]}})", "model.d_model = 30"},
      {head + R"("axes": {"train.lr": [0.001, -1]}})", "train.lr = -1"},
  };
  for (const auto& [spec, named] : cases) {
    std::ofstream(dir + "/spec.json") << spec;
    fs::remove_all(dir + "/sw");
    const Result r = shell("cd '" + dir + "' && " + hsm("sweep spec.json --out sw --jobs 2"));
    EXPECT_NE(r.exit_code, 0) << spec;
    EXPECT_NE(r.out.find(named), std::string::npos) << spec << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_FALSE(fs::exists(dir + "/sw")) << "a run folder was made for: " << spec;
  }
}

TEST(Sweep, PlacementPatternsAndExplicitPointsBuildTheirModels) {
  const std::string dir = temp("place");
  write_tiny_run_inputs(dir, 3, 0.0);
  std::ofstream(dir + "/spec.json") << R"({"base": {"preset": "gpt"}, "data": "stories.txt",
    "axes": {"model.placement": ["hsm_ab@0,6", {"mixer": "hsm_ab", "layers": [3], "ffn": 1024}, "attn@all"]}})";
  const Result r = shell("cd '" + dir + "' && " + hsm("sweep spec.json --out sw --slurm"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const json manifest = json::parse(read_file(dir + "/sw/sweep.json"));
  ASSERT_EQ(manifest["points"].size(), 3u);
  EXPECT_EQ(manifest["points"][0]["name"], "placement=hsm_ab@0,6");
  EXPECT_EQ(manifest["points"][1]["name"], "placement=hsm_ab@3");
  const std::string sbatch = read_file(dir + "/sw/sweep.sbatch");
  EXPECT_NE(sbatch.find("#SBATCH --array=0-2"), std::string::npos) << sbatch;
  EXPECT_NE(sbatch.find("sweep run"), std::string::npos) << sbatch;
  // The points' models, as --check lists them: the listed layers hsm_ab (1 head), the others attention.
  const Result check = shell("cd '" + dir + "' && " + hsm("sweep spec.json --check"));
  EXPECT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find("0 placement=hsm_ab@0,6 layers=hsm_ab/512/1,attn/512/8,attn/512/8,attn/512/8,attn/512/8,"
                           "attn/512/8,hsm_ab/512/1 "),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("1 placement=hsm_ab@3 layers=attn/512/8,attn/512/8,attn/512/8,hsm_ab/1024/1,attn/512/8,"
                           "attn/512/8,attn/512/8 "),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("2 placement=attn@all layers=attn/512/8,attn/512/8,attn/512/8,attn/512/8,attn/512/8,"
                           "attn/512/8,attn/512/8 "),
            std::string::npos)
      << check.out;
}

// Explicit points: each its own settings; a path a point leaves out keeps the base's value.
TEST(Sweep, ExplicitPointsKeepTheBaseWhereTheyAreSilent) {
  const std::string dir = temp("points");
  write_tiny_run_inputs(dir, 3, 0.0);
  std::ofstream(dir + "/spec.json") << R"({"base": {"config": "tiny.json"}, "data": "stories.txt",
    "points": [{"model.layers.1.mixer": "hsm_ab", "model.layers.*.ffn": 128, "seed": 1}, {"seed": 2}]})";
  const Result check = shell("cd '" + dir + "' && " + hsm("sweep spec.json --check"));
  ASSERT_EQ(check.exit_code, 0) << check.out;
  EXPECT_NE(check.out.find("0 mixer1=hsm_ab,ffn_all=128,seed=1 layers=hsm_ab/128/1,hsm_ab/128/1 d_model=32 seed=1"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("1 seed=2 layers=hsm_ab/64/1,attn/64/4 d_model=32 seed=2"), std::string::npos) << check.out;
}

// A point that fails when it trains (a device this machine lacks) is recorded with its error;
// the next point still trains, and the launcher says the sweep is not complete.
TEST(Sweep, AFailedPointIsRecordedWithItsErrorAndTheOthersGoOn) {
  const std::string dir = temp("fail");
  write_tiny_run_inputs(dir, 3, 0.0);
  std::ofstream(dir + "/spec.json") << R"({"base": {"config": "tiny.json"}, "data": "stories.txt",
    "train": {"steps": 5, "batch": 4, "eval_every": 5, "eval_batches": 1},
    "axes": {"train.device": ["cuda:63", "cpu"]}})";
  const Result r = shell("cd '" + dir + "' && " + hsm("sweep spec.json --out sw --jobs 1"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  const Result t = shell(hsm("sweep table '" + dir + "/sw' --json 2>/dev/null"));
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const json rows = json::parse(t.out)["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["state"], "failed");
  EXPECT_NE(rows[0]["error"].get<std::string>().find("cuda:63"), std::string::npos) << rows[0];
  EXPECT_EQ(rows[1]["state"], "done");
  EXPECT_EQ(rows[1]["step"], 5);
}

// A sweep folder an older hsm made (format 1: no model axis, no scores) opens as it is
// (issue 47): its table, its points' states, and a point trained from it.
TEST(Sweep, AnOlderSweepFolderOpensAsItIs) {
  const std::string dir = temp("old");
  write_tiny_run_inputs(dir, 3, 0.0);
  const std::string sweep = dir + "/sw";
  fs::create_directories(sweep + "/points");
  fs::create_directories(sweep + "/runs");
  const json spec = {{"name", "old"},
                     {"base", {{"config", dir + "/tiny.json"}}},
                     {"data", dir + "/stories.txt"},
                     {"train", {{"steps", 2}, {"batch", 4}, {"eval_every", 2}, {"eval_batches", 1}}},
                     {"axes", {{"seed", {1, 2}}}}};
  const json manifest = {
      {"format", 1},
      {"name", "old"},
      {"spec", spec},
      {"points",
       {{{"index", 0}, {"name", "seed=1"}, {"run", "runs/seed=1"}, {"settings", {{"seed", 1}}}},
        {{"index", 1}, {"name", "seed=2"}, {"run", "runs/seed=2"}, {"settings", {{"seed", 2}}}}}},
      {"base_config", json::parse(read_file(dir + "/tiny.json"))}};
  std::ofstream(sweep + "/sweep.json") << manifest.dump(2) << "\n";
  std::ofstream(sweep + "/points/seed=2.json") << R"({"state": "failed", "pid": 0, "error": "the older run's error"})"
                                               << "\n";
  const Result t = shell(hsm("sweep table '" + sweep + "' --json 2>/dev/null"));
  ASSERT_EQ(t.exit_code, 0) << t.out;
  const json rows = json::parse(t.out)["rows"];
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0]["run"], "seed=1");
  EXPECT_EQ(rows[0]["state"], "pending");
  EXPECT_EQ(rows[1]["state"], "failed");
  EXPECT_EQ(rows[1]["error"], "the older run's error");
  const Result run = shell(hsm("sweep run '" + sweep + "' --point 0"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(json::parse(read_file(sweep + "/points/seed=1.json"))["state"], "done");
  EXPECT_EQ(json::parse(read_file(sweep + "/sweep.json"))["format"], 1) << "the older manifest is read, not rewritten";
}
