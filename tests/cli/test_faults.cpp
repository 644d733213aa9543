// Kill -9 at any moment loses nothing (issue 19): a tiny `hsm train` is killed with SIGKILL
// inside every file operation of a checkpoint (each open, write, link and rename in the run
// folder while the checkpoint of step 8 is written and published, and each before the first
// checkpoint exists; injected with strace exactly where that system call happens) and at
// moments spread over the run; after each kill the run folder loads and evaluates to a finite loss, and
// resuming it ends on exactly the weights of a run that was never interrupted.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tiny_run.h"

namespace fs = std::filesystem;

namespace {

class Faults : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("hsm-faults-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Stories from a small grammar, and a tiny model with dropout (resume must draw its masks
    // again exactly).
    write_tiny_run_inputs(dir_, 5, 0.1);
    // The reference: never interrupted. It also fills the caches, so every run below opens
    // the same files in the same order.
    const Result r = shell(train_command(dir_ + "/reference"));
    ASSERT_EQ(r.exit_code, 0) << r.out;
    reference_weights_ = new std::string(read_file(dir_ + "/reference/model.safetensors"));
  }
  static void TearDownTestSuite() {
    delete reference_weights_;
    reference_weights_ = nullptr;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string hsm() { return std::string("env HSM_RESOURCES='") + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "'"; }
  static std::string common() {
    return " --data '" + dir_ + "/stories.txt' --cache-dir '" + dir_ + "/cache' --threads 1";
  }
  static std::string train_command(const std::string& out) {
    return hsm() + " train --config '" + dir_ + "/tiny.json' --out '" + out + "'" + common() +
           " --steps 12 --batch 8 --checkpoint-every 4 --eval-every 6 --eval-batches 1 --log-every 2 --seed 3";
  }

  // After a kill: the folder, if it became a run (its first checkpoint was published), loads
  // and evaluates finitely; then resuming it (or, if it never became one, starting it again)
  // finishes on the reference's weights.
  static void expect_recovers(const std::string& run, const std::string& what) {
    if (fs::exists(run + "/config.json")) {
      const Result ev = shell(hsm() + " eval '" + run + "' --max-batches 1 --json" + common());
      ASSERT_EQ(ev.exit_code, 0) << what << ": eval after the kill\n" << ev.out;
      const auto j = nlohmann::json::parse(ev.out.substr(ev.out.find('{')), nullptr, false);
      ASSERT_TRUE(j.is_object()) << what << "\n" << ev.out;
      EXPECT_TRUE(j["loss"].is_number() && std::isfinite(j["loss"].get<double>())) << what << "\n" << ev.out;
      const Result resumed = shell(hsm() + " train --resume --out '" + run + "' --steps 12" + common());
      ASSERT_EQ(resumed.exit_code, 0) << what << ": resume after the kill\n" << resumed.out;
    } else {
      const Result again = shell(train_command(run));
      ASSERT_EQ(again.exit_code, 0) << what << ": a new start after the kill\n" << again.out;
    }
    EXPECT_TRUE(read_file(run + "/model.safetensors") == *reference_weights_)
        << what << ": the final weights differ from the uninterrupted run's";
  }

  static std::string dir_;
  static std::string* reference_weights_;
};

std::string Faults::dir_;
std::string* Faults::reference_weights_ = nullptr;

// A system call of the training process to kill it at: its name and its invocation number in
// the main thread (strace counts per system call and per thread).
struct KillPoint {
  std::string syscall;
  int invocation = 0;
  std::string what;  // the call, as strace printed it
};

TEST_F(Faults, AKillInsideAnyCheckpointFileOperationLosesNothing) {
  if (shell("strace -o /dev/null true").exit_code != 0)
    GTEST_SKIP() << "strace cannot trace here (not installed, or ptrace is not permitted)";
  // 1. Where the run folder's files are opened, written, linked and renamed: one traced run.
  const std::string traced = dir_ + "/traced";
  const std::string log = dir_ + "/trace.log";
  const Result t =
      shell("strace -o '" + log + "' -e trace=openat,write,link,rename -e signal=none " + train_command(traced));
  ASSERT_EQ(t.exit_code, 0) << t.out;
  // The calls before the first checkpoint (a start killed), and those of one whole checkpoint
  // in the middle of the run (every checkpoint makes the same calls).
  bool before_first = true, in_middle = false;
  std::map<std::string, int> count;      // invocations so far, per system call
  std::map<long, std::string> writing;   // fd -> run-folder file open for writing
  std::vector<KillPoint> points;
  const std::regex call(R"(^(\w+)\((.*)\)\s+=\s+(-?\d+))");
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, call)) continue;
    const std::string name = m[1], args = m[2];
    const long result = std::stol(m[3]);
    const int n = ++count[name];
    const bool in_run = args.find(traced) != std::string::npos;
    if (args.find("step-000000000000.tmp") != std::string::npos) before_first = false;
    if (args.find("step-000000000008.tmp") != std::string::npos) in_middle = true;
    if (args.find("step-000000000012.tmp") != std::string::npos) in_middle = false;
    if (!before_first && !in_middle) continue;
    if ((name == "openat" || name == "link" || name == "rename") && in_run) {
      points.push_back({name, n, line.substr(0, 160)});
      if (name == "openat" && result >= 0 && args.find("O_WRONLY") != std::string::npos) writing[result] = args;
    } else if (name == "write") {
      const long fd = std::stol(args.substr(0, args.find(',')));
      auto it = writing.find(fd);
      if (it == writing.end()) continue;
      points.push_back({name, n, "first write after " + it->second.substr(0, 140)});
      writing.erase(it);  // the first write of each file is enough: later ones are alike
    }
  }
  // A checkpoint opens, writes and publishes three files, then the run's two top-level ones.
  ASSERT_GE(points.size(), 20u) << read_file(log).substr(0, 4000);

  // 2. A fresh run killed at each of them.
  int killed = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    const KillPoint& p = points[i];
    const std::string run = dir_ + "/kill-" + std::to_string(i);
    const Result r = shell("strace -o /dev/null -e trace=openat,write,link,rename -e inject=" + p.syscall +
                           ":signal=KILL:when=" + std::to_string(p.invocation) + " " + train_command(run));
    const std::string what = "kill at " + p.syscall + " #" + std::to_string(p.invocation) + " (" + p.what + ")";
    // strace exits with the signal that killed its tracee.
    ASSERT_EQ(r.signal, SIGKILL) << what << ": was not killed there\n" << r.out;
    ++killed;
    expect_recovers(run, what);
    if (HasFatalFailure()) return;
    fs::remove_all(run);
  }
  std::printf("killed at %d file operations; every run recovered\n", killed);
}

// Kills at moments spread over the whole run (no strace needed): preparing data, training,
// validating, checkpointing.
TEST_F(Faults, AKillAtAnyMomentLosesNothing) {
  // How long an uninterrupted run takes here.
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(shell(train_command(dir_ + "/timing")).exit_code, 0);
  const double total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  int killed = 0;
  for (int i = 0; i < 10; ++i) {
    const std::string run = dir_ + "/timed-" + std::to_string(i);
    const int after_ms = static_cast<int>(total_ms * (0.1 + 0.08 * i));
    const Result r = shell("timeout -s KILL " + std::to_string(after_ms / 1000.0) + " " + train_command(run));
    const std::string what = "kill after " + std::to_string(after_ms) + " ms";
    if (r.exit_code == 0) continue;  // finished first on this machine: nothing to recover
    ASSERT_EQ(r.signal, SIGKILL) << what << "\n" << r.out;
    ++killed;
    expect_recovers(run, what);
    if (HasFatalFailure()) return;
    fs::remove_all(run);
  }
  EXPECT_GE(killed, 5) << "most kills land before the run ends";
}

}  // namespace
