// Grids of runs (labs and sweeps) in a hostile user's hands (issue 46): shell text in a Slurm
// script, a closed terminal, a worker stopped alone, a base config edited mid-sweep, a lab
// reached by another path, links where the grid writes, an ill-typed result line, stale or
// impossible point states, a full disk, devices where small JSON files are expected. Each runs
// the real `hsm` on tiny task runs (d 32, context 16); each failed on the code before the fix.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "tiny_run.h"

namespace fs = std::filesystem;

namespace {

const char* kTask = "mqar:vocab=32,pairs=2,context=16";

std::string hsm(const std::string& args) {
  return std::string("env HSM_RESOURCES='") + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "' " + args;
}

std::string temp(const std::string& name) {
  const fs::path p = fs::path(::testing::TempDir()) / ("hsm_grids_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p.string();
}

// Two layers of `mixer` at width `d` for the task above (vocabulary 32, context 16).
std::string write_config(const std::string& dir, const std::string& mixer = "attn", int d = 32) {
  const std::string path = dir + "/" + mixer + ".json";
  const int heads = mixer == "attn" ? 4 : 1;
  std::ofstream(path) << R"({"name": ")" << mixer << R"(", "vocab_size": 32, "d_model": )" << d
                      << R"(, "context": 16, "dropout": 0, "layers": [{"mixer": ")" << mixer
                      << R"(", "ffn": 64, "heads": )" << heads << R"(}, {"mixer": ")" << mixer
                      << R"(", "ffn": 64, "heads": )" << heads << "}]}";
  return path;
}

// dir/spec.json: a sweep over two seeds of the attention config on the task; `fields` are
// more top-level fields (",\"resources\": {...}"), `steps` its length.
std::string write_spec(const std::string& dir, int steps, const std::string& fields = "",
                       const std::string& name = "\"g\"") {
  write_config(dir);
  const std::string path = dir + "/spec.json";
  std::ofstream(path) << R"({"name": )" << name << R"(, "base": {"config": "attn.json"}, "task": ")" << kTask
                      << R"(", "train": {"steps": )" << steps << R"(, "batch": 4, "eval_every": )" << steps
                      << R"(, "eval_batches": 1, "checkpoint_every": )" << steps
                      << R"(, "log_every": 1}, "axes": {"seed": [1, 2]})" << fields << "}";
  return path;
}

// A lab of one task and `models` config models, one learning rate unless `more` gives some (the
// default lab has two since issue 68); `more`: further options.
std::string lab_command(const std::string& dir, const std::string& out, int steps, const std::string& more = "") {
  const std::string lr = more.find("--lr") == std::string::npos ? "--lr 0.003 " : "";
  return hsm("lab --out '" + out + "' --task " + kTask + " --model '" + write_config(dir) + "' --steps " +
             std::to_string(steps) + " --batch 4 --seeds 1 --size as_is --test-examples 16 " + lr + more);
}

int count_lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// Starts `command` in a process group (and session) of its own, its output to `log`; the pid
// returned is its group's id too, so a signal can reach the whole group as a closed terminal's
// SIGHUP does.
pid_t spawn_group(const std::string& command, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Its exit status (128 + the signal that killed it), or -1 after `seconds` (then the whole
// group is killed).
int wait_exit(pid_t pid, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

bool wait_until(const std::function<bool()>& done, int seconds) {
  for (int i = 0; i < seconds * 10; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

// The processes whose command line holds `words` (NULs read as spaces).
std::vector<pid_t> processes_with(const std::string& words) {
  std::vector<pid_t> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(words) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

// Run folders under `runs` whose metrics hold a training record.
int runs_training(const std::string& runs) {
  int n = 0;
  std::error_code ec;
  for (const auto& run : fs::directory_iterator(runs, ec))
    n += read_file((run.path() / "metrics.jsonl").string()).find("\"train\"") != std::string::npos;
  return n;
}

// The last training step a run's metrics.jsonl records.
int64_t last_train_step(const std::string& run) {
  std::ifstream in(run + "/metrics.jsonl");
  int64_t step = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == "train") step = std::max(step, j.value("step", int64_t{0}));
  }
  return step;
}

// Every run folder under `runs` holds a checkpoint at its stop step (at or past the last step
// its curve records, never step 0).
void expect_stop_checkpoints(const std::string& runs, int expected) {
  int checked = 0;
  for (const auto& run : fs::directory_iterator(runs)) {
    const auto c = nlohmann::json::parse(read_file((run.path() / "config.json").string()), nullptr, false);
    ASSERT_TRUE(c.is_object()) << run.path() << ": no checkpoint";
    const int64_t step = c["state"]["step"].get<int64_t>();
    EXPECT_GT(step, 0) << run.path();
    EXPECT_GE(step, last_train_step(run.path().string())) << run.path() << ": steps after the checkpoint lost";
    ++checked;
  }
  EXPECT_EQ(checked, expected);
}

// The points of a grid whose state file holds a score (a lab's scored runs).
int scored_points(const std::string& grid) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(grid + "/points", ec))
    n += e.path().extension() == ".json" && read_file(e.path().string()).find("\"score\"") != std::string::npos;
  return n;
}

std::string first_point_name(const std::string& sweep) {
  const auto m = nlohmann::json::parse(read_file(sweep + "/sweep.json"));
  return m["points"][0]["name"].get<std::string>();
}

}  // namespace

// 3. Shell text in the spec's name, time or partition is refused, naming the field; no
// script is written (on the old code the script ran `touch`).
TEST(HostileGrids, SlurmRefusesShellTextInNameTimeAndPartition) {
  const std::string dir = temp("slurm_inject");
  const std::string marker = dir + "/PWNED";
  const std::string evil = "\"x\\ntouch " + marker + "\\n#\"";
  for (const auto& [field, fields, name] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"name", "", evil},
           {"resources.time", ", \"resources\": {\"time\": " + evil + "}", "\"g\""},
           {"resources.partition", ", \"resources\": {\"partition\": \"a;touch " + marker + "\"}", "\"g\""},
       }) {
    const std::string spec = write_spec(dir, 2, fields, name);
    const std::string out = dir + "/out_" + field;
    const Result r = shell(hsm("sweep '" + spec + "' --out '" + out + "' --slurm"));
    EXPECT_EQ(r.exit_code, 1) << field << "\n" << r.out;
    EXPECT_NE(r.out.find("sweep spec: " + field + " \""), std::string::npos) << r.out;
    EXPECT_EQ(count_lines(r.out), 1) << r.out;
    if (fs::exists(out + "/sweep.sbatch"))
      shell("cd '" + out + "' && SLURM_ARRAY_TASK_ID=0 bash sweep.sbatch");
    EXPECT_FALSE(fs::exists(marker)) << field;
  }
  // --check refuses it too, before anything is written.
  const Result check = shell(hsm("sweep '" + write_spec(dir, 2, "", evil) + "' --check"));
  EXPECT_EQ(check.exit_code, 1) << check.out;
}

// 3. A folder with a quote and a newline in its name: the script parses, and run as Slurm
// runs it (its body, with an array task's environment) trains the point in that folder.
TEST(HostileGrids, SlurmScriptOfAFolderWithAQuoteAndANewlineRuns) {
  const std::string dir = temp("slurm_path");
  const std::string spec = write_spec(dir, 3);
  const std::string out = dir + "/it's\nhere";
  ASSERT_EQ(shell(hsm("sweep '" + spec + "' --out \"" + out + "\" --slurm")).exit_code, 0);
  const std::string script = out + "/sweep.sbatch";
  ASSERT_TRUE(fs::exists(script));
  EXPECT_TRUE((fs::status(script).permissions() & fs::perms::owner_exec) != fs::perms::none);
  const Result syntax = shell("bash -n \"" + script + "\"");
  EXPECT_EQ(syntax.exit_code, 0) << syntax.out << read_file(script);
  const Result r = shell("cd / && env SLURM_ARRAY_JOB_ID=7 SLURM_ARRAY_TASK_ID=0 SLURM_CPUS_PER_TASK=1 HSM_RESOURCES='" +
                         std::string(HSM_RESOURCES_PATH) + "' bash \"" + script + "\"");
  EXPECT_EQ(r.exit_code, 0) << r.out << read_file(script);
  const std::string point = first_point_name(out);
  EXPECT_NE(read_file(out + "/points/" + point + ".json").find("\"done\""), std::string::npos);
  EXPECT_TRUE(fs::exists(out + "/runs/" + point + "/config.json"));
  EXPECT_NE(read_file(out + "/points/slurm-7_0.log").find("point 0: done"), std::string::npos);
}

// 3. A sweep.sbatch that is a link is replaced; its target keeps its bytes and its mode.
TEST(HostileGrids, SlurmScriptThatIsALinkIsReplacedNotFollowed) {
  const std::string dir = temp("slurm_link");
  const std::string spec = write_spec(dir, 2);
  ASSERT_EQ(shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw' --slurm")).exit_code, 0);
  std::ofstream(dir + "/victim") << "mine\n";
  fs::permissions(dir + "/victim", fs::perms::owner_read | fs::perms::owner_write);
  fs::remove(dir + "/sw/sweep.sbatch");
  fs::create_symlink(dir + "/victim", dir + "/sw/sweep.sbatch");
  const Result r = shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw' --slurm"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(read_file(dir + "/victim"), "mine\n");
  EXPECT_EQ(fs::status(dir + "/victim").permissions(), fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_FALSE(fs::is_symlink(dir + "/sw/sweep.sbatch"));
  EXPECT_NE(read_file(dir + "/sw/sweep.sbatch").find("#SBATCH --array=0-1"), std::string::npos);
}

// 4. SIGHUP to a lab's whole process group (a closed terminal): every worker stops at a step
// with a checkpoint of it, the launcher waits for them and exits non-zero.
TEST(HostileGrids, SighupToALabsGroupStopsEveryWorkerWithACheckpoint) {
  const std::string dir = temp("lab_hup");
  const std::string lab = dir + "/lab";
  ASSERT_EQ(shell(lab_command(dir, lab, 100000, "--model '" + write_config(dir, "hsm_ab") + "' --table")).exit_code, 0);
  const pid_t launcher = spawn_group(hsm("lab --out '" + lab + "' --jobs 2"), dir + "/out.txt");
  ASSERT_TRUE(wait_until([&] { return runs_training(lab + "/runs") >= 2; }, 120)) << read_file(dir + "/out.txt");
  ASSERT_EQ(::kill(-launcher, SIGHUP), 0);
  const int rc = wait_exit(launcher, 120);
  const std::string out = read_file(dir + "/out.txt");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("stopped"), std::string::npos) << out;
  EXPECT_NE(out.find("continues the lab"), std::string::npos) << out;
  EXPECT_TRUE(processes_with(lab + " --point").empty());
  expect_stop_checkpoints(lab + "/runs", 2);
}

// 4. The same for a sweep: SIGHUP to its group, each point stops with a checkpoint, exit 130.
TEST(HostileGrids, SighupToASweepsGroupStopsEveryPointWithACheckpoint) {
  const std::string dir = temp("sweep_hup");
  const std::string spec = write_spec(dir, 100000);
  const pid_t launcher = spawn_group(hsm("sweep '" + spec + "' --out '" + dir + "/sw' --jobs 2"), dir + "/out.txt");
  ASSERT_TRUE(wait_until([&] { return runs_training(dir + "/sw/runs") >= 2; }, 120)) << read_file(dir + "/out.txt");
  ASSERT_EQ(::kill(-launcher, SIGHUP), 0);
  const int rc = wait_exit(launcher, 120);
  const std::string out = read_file(dir + "/out.txt");
  EXPECT_EQ(rc, 130) << out;
  EXPECT_NE(out.find("points unfinished"), std::string::npos) << out;
  EXPECT_TRUE(processes_with(dir + "/sw --point").empty());
  expect_stop_checkpoints(dir + "/sw/runs", 2);
  for (const auto& e : fs::directory_iterator(dir + "/sw/points"))
    if (e.path().extension() == ".json") EXPECT_NE(read_file(e.path().string()).find("\"stopped\""), std::string::npos);
}

// 9. SIGTERM to one lab worker alone: the launcher exits non-zero naming the unfinished cell;
// the table says "unfinished", never "best lr 0, answer nan".
TEST(HostileGrids, ALabWorkerStoppedAloneLeavesTheLauncherFailingNamingTheCell) {
  const std::string dir = temp("lab_worker");
  const std::string lab = dir + "/lab";
  ASSERT_EQ(shell(lab_command(dir, lab, 100000, "--model '" + write_config(dir, "hsm_ab") + "' --table")).exit_code, 0);
  const pid_t launcher = spawn_group(hsm("lab --out '" + lab + "' --jobs 2"), dir + "/out.txt");
  ASSERT_TRUE(wait_until([&] { return runs_training(lab + "/runs") >= 2; }, 120)) << read_file(dir + "/out.txt");
  for (pid_t w : processes_with(lab + " --point")) ::kill(w, SIGTERM);  // the workers, not the launcher
  const int rc = wait_exit(launcher, 120);
  const std::string out = read_file(dir + "/out.txt");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("2 of 2 cells unfinished: " + std::string(kTask) + " x "), std::string::npos) << out;
  EXPECT_NE(out.find("stopped m0_attn"), std::string::npos) << out;
  EXPECT_EQ(out.find("nan"), std::string::npos) << out;
  const Result table = shell(hsm("lab --out '" + lab + "' --table"));
  EXPECT_EQ(table.exit_code, 0) << table.out;
  EXPECT_NE(table.out.find("unfinished"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("nan"), std::string::npos) << table.out;
}

// 9. The same for a sweep: a point stopped alone makes the launcher exit 1 naming it.
TEST(HostileGrids, ASweepPointStoppedAloneLeavesTheLauncherFailingNamingIt) {
  const std::string dir = temp("sweep_point");
  const std::string spec = write_spec(dir, 100000);
  const pid_t launcher = spawn_group(hsm("sweep '" + spec + "' --out '" + dir + "/sw' --jobs 2"), dir + "/out.txt");
  ASSERT_TRUE(wait_until([&] { return runs_training(dir + "/sw/runs") >= 2; }, 120)) << read_file(dir + "/out.txt");
  for (pid_t p : processes_with(dir + "/sw --point")) ::kill(p, SIGTERM);
  const int rc = wait_exit(launcher, 120);
  const std::string out = read_file(dir + "/out.txt");
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("2 of 2 points unfinished: seed=1, seed=2"), std::string::npos) << out;
}

// 5. The base config is read once, when the sweep starts: edited before a point trains, the
// point still trains the snapshot's model, and the table's parameter counts are the snapshot's.
TEST(HostileGrids, ASweepTrainsItsSnapshotOfTheBaseConfig) {
  const std::string dir = temp("snapshot");
  const std::string spec = write_spec(dir, 2);
  ASSERT_EQ(shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw' --slurm")).exit_code, 0);  // made, none trained
  const Result before = shell(hsm("sweep table '" + dir + "/sw' --json 2>/dev/null"));
  write_config(dir, "attn", 48);  // the same file, another model
  const Result run = shell(hsm("sweep run '" + dir + "/sw' --point 0"));
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const auto config = nlohmann::json::parse(read_file(dir + "/sw/runs/" + first_point_name(dir + "/sw") + "/config.json"));
  EXPECT_EQ(config["model"]["d_model"], 32);
  const auto after = nlohmann::json::parse(shell(hsm("sweep table '" + dir + "/sw' --json 2>/dev/null")).out);
  const auto first = nlohmann::json::parse(before.out);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(after["rows"][i]["params"], first["rows"][i]["params"]);
  // Continued with its spec: the edited file does not make it another sweep or another model.
  const Result again = shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw'"));
  EXPECT_EQ(again.exit_code, 0) << again.out;
  for (const auto& e : fs::directory_iterator(dir + "/sw/runs"))
    EXPECT_EQ(nlohmann::json::parse(read_file((e.path() / "config.json").string()))["model"]["d_model"], 32);
}

// 6. A lab is keyed by its runs, not the path's spelling: --out ./lab after --out lab and a
// copied lab score nothing again; learning rates that print alike get folders of their own.
TEST(HostileGrids, LabResultsAreKeyedByTheRunNotThePath) {
  const std::string dir = temp("lab_key");
  ASSERT_EQ(shell("cd '" + dir + "' && " + lab_command(dir, "lab", 4, "--jobs 1")).exit_code, 0);
  ASSERT_EQ(scored_points(dir + "/lab"), 1);
  const std::string state = dir + "/lab/points/" + first_point_name(dir + "/lab") + ".json";
  const std::string scored = read_file(state);
  const Result again = shell("cd '" + dir + "' && " + hsm("lab --out ./lab --jobs 1 --json"));
  EXPECT_EQ(again.exit_code, 0) << again.out;
  EXPECT_EQ(read_file(state), scored) << "re-scored";
  fs::copy(dir + "/lab", dir + "/copy", fs::copy_options::recursive);
  EXPECT_EQ(shell(hsm("lab --out '" + dir + "/copy' --jobs 1")).exit_code, 0);
  EXPECT_EQ(read_file(dir + "/copy/points/" + first_point_name(dir + "/copy") + ".json"), scored) << "re-scored";
  const auto table = nlohmann::json::parse(shell(hsm("lab --out '" + dir + "/copy' --table --json 2>/dev/null")).out);
  EXPECT_EQ(table["cells"][0]["runs"], 1);

  const Result alike = shell(lab_command(dir, dir + "/alike", 4, "--lr 0.003 --lr 0.0030000001 --jobs 2"));
  EXPECT_EQ(alike.exit_code, 0) << alike.out;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir + "/alike/runs"), fs::directory_iterator{}), 2);
  EXPECT_EQ(scored_points(dir + "/alike"), 2);
  const Result twice = shell(lab_command(dir, dir + "/twice", 4, "--lr 0.003 --lr 0.003"));
  EXPECT_EQ(twice.exit_code, 1);
  EXPECT_NE(twice.out.find("--lr 0.003 is given twice"), std::string::npos) << twice.out;
}

// 7. A lab and a sweep write nothing through a link: --table writes no table.csv, a linked
// point log is refused (its target untouched), a linked runs/ is refused.
TEST(HostileGrids, GridFilesAreNeverWrittenThroughLinks) {
  const std::string dir = temp("links");
  std::ofstream(dir + "/victim") << "mine\n";
  ASSERT_EQ(shell(lab_command(dir, dir + "/lab", 2, "--table")).exit_code, 0);
  fs::create_symlink(dir + "/victim", dir + "/lab/table.csv");
  EXPECT_EQ(shell(hsm("lab --out '" + dir + "/lab' --table")).exit_code, 0);
  EXPECT_EQ(read_file(dir + "/victim"), "mine\n");
  fs::create_symlink(dir + "/victim", dir + "/lab/points/" + first_point_name(dir + "/lab") + ".log");
  const Result results = shell(hsm("lab --out '" + dir + "/lab' --jobs 1"));
  EXPECT_EQ(results.exit_code, 1) << results.out;
  EXPECT_NE(results.out.find(".log' is a symbolic link"), std::string::npos) << results.out;
  EXPECT_EQ(read_file(dir + "/victim"), "mine\n");

  fs::create_directories(dir + "/elsewhere");
  ASSERT_EQ(shell(lab_command(dir, dir + "/lab2", 2, "--table")).exit_code, 0);
  fs::remove(dir + "/lab2/runs");
  fs::create_directory_symlink(dir + "/elsewhere", dir + "/lab2/runs");
  const Result runs = shell(hsm("lab --out '" + dir + "/lab2' --jobs 1"));
  EXPECT_EQ(runs.exit_code, 1) << runs.out;
  EXPECT_NE(runs.out.find("runs' is a symbolic link"), std::string::npos) << runs.out;
  EXPECT_TRUE(fs::is_empty(dir + "/elsewhere"));

  const std::string spec = write_spec(dir, 2);
  ASSERT_EQ(shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw' --slurm")).exit_code, 0);
  const std::string point = first_point_name(dir + "/sw");
  fs::create_symlink(dir + "/victim", dir + "/sw/points/" + point + ".log");
  const Result log = shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw'"));
  EXPECT_EQ(log.exit_code, 1) << log.out;
  EXPECT_NE(log.out.find("failed " + point + ": '"), std::string::npos) << log.out;
  EXPECT_NE(log.out.find(".log' is a symbolic link"), std::string::npos) << log.out;
  EXPECT_EQ(read_file(dir + "/victim"), "mine\n");
  fs::remove_all(dir + "/sw/runs");
  fs::create_directory_symlink(dir + "/elsewhere", dir + "/sw/runs");
  const Result sweep_runs = shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw'"));
  EXPECT_EQ(sweep_runs.exit_code, 1) << sweep_runs.out;
  EXPECT_NE(sweep_runs.out.find("runs' is a symbolic link"), std::string::npos) << sweep_runs.out;
  EXPECT_TRUE(fs::is_empty(dir + "/elsewhere"));
}

// 8. An ill-typed score in a point's state file is skipped with a warning naming the file;
// the table prints and the lab continues (that run is scored again, not trained again).
TEST(HostileGrids, AnIllTypedScoreIsSkippedNamingItsFile) {
  const std::string dir = temp("ill_typed");
  const std::string lab = dir + "/lab";
  ASSERT_EQ(shell(lab_command(dir, lab, 2, "--jobs 1")).exit_code, 0);
  const std::string state = lab + "/points/" + first_point_name(lab) + ".json";
  const std::string metrics = read_file(lab + "/runs/" + first_point_name(lab) + "/metrics.jsonl");
  for (const char* field : {"answer_accuracy", "by_distance"}) {
    auto bad = nlohmann::json::parse(read_file(state));
    if (std::string(field) == "answer_accuracy")
      bad["score"]["answer_accuracy"] = "high";
    else
      bad["score"]["by_distance"] = {{"far", {1, 2}}};
    std::ofstream(state) << bad.dump() << "\n";
    const Result table = shell(hsm("lab --out '" + lab + "' --table"));
    EXPECT_EQ(table.exit_code, 0) << table.out;
    EXPECT_NE(table.out.find(state + ": not a score ("), std::string::npos) << table.out;
    EXPECT_NE(table.out.find(std::string("\"") + field + "\""), std::string::npos) << table.out;
    EXPECT_EQ(table.out.find("stoll"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("unfinished"), std::string::npos) << table.out;
    const Result go_on = shell(hsm("lab --out '" + lab + "' --jobs 1"));
    EXPECT_EQ(go_on.exit_code, 0) << go_on.out;
    EXPECT_TRUE(nlohmann::json::parse(read_file(state))["score"]["answer_accuracy"].is_number()) << read_file(state);
    EXPECT_EQ(read_file(lab + "/runs/" + first_point_name(lab) + "/metrics.jsonl").substr(0, metrics.size()), metrics)
        << "trained again";
  }
}

// 12. A point "running" under pid 0, -1 or 1 (no point of ours) does not block the sweep.
TEST(HostileGrids, AnImpossiblePointPidDoesNotBlockTheSweep) {
  const std::string dir = temp("pids");
  const std::string spec = write_spec(dir, 2);
  for (const int pid : {0, -1, 1}) {
    const std::string sw = dir + "/sw" + std::to_string(pid + 1);
    ASSERT_EQ(shell(hsm("sweep '" + spec + "' --out '" + sw + "' --slurm")).exit_code, 0);
    std::ofstream(sw + "/points/" + first_point_name(sw) + ".json") << R"({"state": "running", "pid": )" << pid << "}\n";
    const Result r = shell("timeout 300 " + hsm("sweep '" + spec + "' --out '" + sw + "'"));
    EXPECT_EQ(r.exit_code, 0) << "pid " << pid << "\n" << r.out;
  }
}

// 11b. A grid whose points/ folder was removed (its logs and states cleaned away by hand) runs
// every point again: the first worker's log is not refused for want of the folder.
TEST(HostileGrids, AGridWithoutItsPointsFolderRunsEveryPoint) {
  const std::string dir = temp("nopoints");
  const std::string spec = write_spec(dir, 2);
  const std::string sw = dir + "/sw";
  ASSERT_EQ(shell(hsm("sweep '" + spec + "' --out '" + sw + "' --slurm")).exit_code, 0);
  fs::remove_all(sw + "/points");
  const Result r = shell("timeout 300 " + hsm("sweep --out '" + sw + "' --jobs 2"));
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("cannot write the log"), std::string::npos) << r.out;
  int done = 0;
  for (const auto& e : fs::directory_iterator(sw + "/points"))
    if (e.path().extension() == ".json" && read_file(e.path().string()).find("\"done\"") != std::string::npos) ++done;
  EXPECT_EQ(done, 2) << r.out;
}

// 12. A full disk while a point's state is written keeps the old state file (a failed point
// keeps its error) and says so, naming the file.
TEST(HostileGrids, AFullDiskKeepsThePointStateFile) {
  if (shell("strace -o /dev/null true").exit_code != 0) GTEST_SKIP() << "strace cannot trace here";
  const std::string dir = temp("full");
  const std::string spec = write_spec(dir, 2);
  ASSERT_EQ(shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw' --slurm")).exit_code, 0);
  const std::string state = dir + "/sw/points/" + first_point_name(dir + "/sw") + ".json";
  const std::string failed = R"({"state": "failed", "error": "the first try's error"})" "\n";
  std::ofstream(state) << failed;
  const Result r = shell("strace -f -o /dev/null -P '" + state + ".tmp' -e trace=write,pwrite64,writev "
                         "-e inject=write,pwrite64,writev:error=ENOSPC " + hsm("sweep run '" + dir + "/sw' --point 0"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find(state + ".tmp' failed (No space left on device)"), std::string::npos) << r.out;
  EXPECT_EQ(read_file(state), failed);
}

// 12. What --check and the folders refuse: a config whose vocabulary does not fit the task, an
// explicit list of more than 100,000 points, a lab in a sweep's folder and a sweep in a lab's.
TEST(HostileGrids, ChecksAndFoldersRefuseWhatCannotWork) {
  const std::string dir = temp("refuse");
  std::ofstream(dir + "/big.json") << R"({"name": "big", "vocab_size": 300, "d_model": 32, "context": 16, "dropout": 0,
    "layers": [{"mixer": "attn", "ffn": 64, "heads": 4}]})";
  std::ofstream(dir + "/vocab.json") << R"({"name": "v", "base": {"config": "big.json"}, "task": ")" << kTask
                                     << R"(", "axes": {"seed": [1]}})";
  const Result vocab = shell(hsm("sweep '" + dir + "/vocab.json' --check"));
  EXPECT_EQ(vocab.exit_code, 1) << vocab.out;
  EXPECT_NE(vocab.out.find("vocab_size 300 of the model does not fit task mqar"), std::string::npos) << vocab.out;

  write_config(dir);
  {
    std::ofstream points(dir + "/points.json");
    points << R"({"name": "p", "base": {"config": "attn.json"}, "task": ")" << kTask << R"(", "points": [)";
    for (int i = 0; i <= 100000; ++i) points << (i ? "," : "") << R"({"seed": )" << i + 1 << "}";
    points << "]}";
  }
  const Result many = shell(hsm("sweep '" + dir + "/points.json' --check"));
  EXPECT_EQ(many.exit_code, 1) << many.out.substr(0, 300);
  EXPECT_NE(many.out.find("more than 100000 points"), std::string::npos) << many.out.substr(0, 300);

  const std::string spec = write_spec(dir, 2);
  ASSERT_EQ(shell(hsm("sweep '" + spec + "' --out '" + dir + "/sw' --slurm")).exit_code, 0);
  const Result lab_in_sweep = shell(lab_command(dir, dir + "/sw", 2, "--table"));
  EXPECT_EQ(lab_in_sweep.exit_code, 1) << lab_in_sweep.out;
  EXPECT_NE(lab_in_sweep.out.find("holds a sweep, not a lab"), std::string::npos) << lab_in_sweep.out;
  EXPECT_FALSE(fs::exists(dir + "/sw/lab.json"));
  ASSERT_EQ(shell(lab_command(dir, dir + "/lab", 2, "--table")).exit_code, 0);
  const std::string lab_manifest = read_file(dir + "/lab/sweep.json");
  const Result sweep_in_lab = shell(hsm("sweep '" + spec + "' --out '" + dir + "/lab' --slurm"));
  EXPECT_EQ(sweep_in_lab.exit_code, 1) << sweep_in_lab.out;
  EXPECT_NE(sweep_in_lab.out.find("holds another grid (lab)"), std::string::npos) << sweep_in_lab.out;
  EXPECT_EQ(read_file(dir + "/lab/sweep.json"), lab_manifest);
  EXPECT_FALSE(fs::exists(dir + "/lab/sweep.sbatch"));
}

// 10 (grid part). /dev/zero where a sweep.json, an older lab's lab.json or a sweep spec is expected: a
// one-line error naming the file, not "the model or the batch needs more memory".
TEST(HostileGrids, ADeviceForAGridFileIsRefusedNamingIt) {
  const std::string dir = temp("devzero");
  fs::create_directories(dir + "/lab");
  fs::create_symlink("/dev/zero", dir + "/lab/sweep.json");
  const Result lab = shell("ulimit -v 4000000; timeout 60 " + hsm("lab --out '" + dir + "/lab' --table"));
  EXPECT_EQ(lab.exit_code, 1) << lab.out;
  EXPECT_NE(lab.out.find("sweep.json' is a device, not a regular file"), std::string::npos) << lab.out;
  fs::create_directories(dir + "/old");
  fs::create_symlink("/dev/zero", dir + "/old/lab.json");
  const Result old = shell("ulimit -v 4000000; timeout 60 " + hsm("lab convert '" + dir + "/old'"));
  EXPECT_EQ(old.exit_code, 1) << old.out;
  EXPECT_NE(old.out.find("lab.json' is a device, not a regular file"), std::string::npos) << old.out;
  fs::create_directories(dir + "/sw");
  fs::create_symlink("/dev/zero", dir + "/sw/sweep.json");
  const Result table = shell("ulimit -v 4000000; timeout 60 " + hsm("sweep table '" + dir + "/sw'"));
  EXPECT_EQ(table.exit_code, 1) << table.out;
  EXPECT_NE(table.out.find("sweep.json' is a device, not a regular file"), std::string::npos) << table.out;
  const Result spec = shell("ulimit -v 4000000; timeout 60 " + hsm("sweep /dev/zero --check"));
  EXPECT_EQ(spec.exit_code, 1) << spec.out;
  EXPECT_NE(spec.out.find("'/dev/zero' is a device, not a regular file"), std::string::npos) << spec.out;
}
