// Data-parallel training (issue 25, docs/distributed.md), run as a user would: `hsm train
// --nproc 2` on the loopback with Gloo against one process with the same global batch, a
// 2-rank run resumed by one process, a rank killed with SIGKILL, bad launcher settings, a group
// of one rank (the launcher environment with WORLD_SIZE=1) and the backend each device gets.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
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
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tiny_run.h"

namespace fs = std::filesystem;

namespace {

// step -> a metric ("train_loss" of the train records, "val_loss" of the eval ones), from a run
// folder's metrics.jsonl
std::map<int64_t, double> curve(const std::string& run, const std::string& kind, const std::string& field) {
  std::map<int64_t, double> values;
  std::istringstream in(read_file(run + "/metrics.jsonl"));
  std::string line;
  while (std::getline(in, line)) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("kind", "") == kind) values[j["step"].get<int64_t>()] = j[field].get<double>();
  }
  return values;
}
std::map<int64_t, double> train_losses(const std::string& run) { return curve(run, "train", "train_loss"); }
std::map<int64_t, double> val_losses(const std::string& run) { return curve(run, "eval", "val_loss"); }

// The largest relative difference between two curves over the steps of `a` (all must be in b).
double max_relative_difference(const std::map<int64_t, double>& a, const std::map<int64_t, double>& b) {
  double worst = 0;
  for (const auto& [step, v] : a) {
    const auto it = b.find(step);
    if (it == b.end()) return INFINITY;
    worst = std::max(worst, std::abs(v - it->second) / std::max(std::abs(it->second), 1e-12));
  }
  return worst;
}

class Distributed : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HSM_TEST_DATA_PARALLEL)
      GTEST_SKIP() << "no data-parallel training in this build (a LibTorch without c10d's Gloo, or "
                      "HSM_DATA_PARALLEL=OFF)";
  }
  static void SetUpTestSuite() {
    dir_ = (fs::temp_directory_path() / ("hsm-dist-" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Dropout 0: the two runs then differ only by the order of floating-point sums.
    write_tiny_run_inputs(dir_, 7, 0.0);
  }
  // The two 20-step runs the first two tests compare, made on first use (ctest runs each test
  // in a process of its own).
  static void train_both() {
    if (one_) return;
    one_ = new Result(shell(train(dir_ + "/one", "--batch 16")));
    two_ = new Result(shell(train(dir_ + "/two", "--nproc 2 --batch 8")));
  }
  static void TearDownTestSuite() {
    delete one_;
    delete two_;
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  static std::string hsm() { return std::string("env HSM_RESOURCES='") + HSM_RESOURCES_PATH + "' '" + HSM_CLI_PATH + "'"; }
  static std::string common() { return " --data '" + dir_ + "/stories.txt' --cache-dir '" + dir_ + "/cache'"; }
  static std::string train(const std::string& out, const std::string& extra, int steps = 20) {
    return hsm() + " train --config '" + dir_ + "/tiny.json' --out '" + out + "'" + common() + " --steps " +
           std::to_string(steps) + " --log-every 1 --eval-every 10 --eval-batches 3 --seed 3 --lr 0.003 " + extra;
  }

  static inline std::string dir_;
  static inline Result* one_ = nullptr;
  static inline Result* two_ = nullptr;
};

TEST_F(Distributed, TwoRanksOfBatch8LearnAsOneProcessOfBatch16) {
  train_both();
  ASSERT_EQ(one_->exit_code, 0) << one_->out;
  ASSERT_EQ(two_->exit_code, 0) << two_->out;
  EXPECT_NE(two_->out.find("global batch 16 = 8 per rank x 2 ranks"), std::string::npos) << two_->out;
  const auto a = train_losses(dir_ + "/two"), b = train_losses(dir_ + "/one");
  ASSERT_EQ(a.size(), 20u);
  ASSERT_EQ(b.size(), 20u);
  EXPECT_GT(a.begin()->second - a.rbegin()->second, 0.1) << "the model learns";
  const double worst = max_relative_difference(a, b);
  std::printf("max relative difference of the per-step losses, 2 ranks x 8 vs 1 x 16: %.3g\n", worst);
  EXPECT_LT(worst, 1e-4);
  // ... and the agreement is not trivial: one process on batch 8 (rank 0's share alone) differs.
  const Result half = shell(train(dir_ + "/half", "--batch 8"));
  ASSERT_EQ(half.exit_code, 0) << half.out;
  EXPECT_GT(max_relative_difference(a, train_losses(dir_ + "/half")), 1e-3);
  // Validation is split over the ranks and summed: the same numbers as one process's.
  const auto va = val_losses(dir_ + "/two"), vb = val_losses(dir_ + "/one");
  ASSERT_EQ(va.size(), 2u);
  EXPECT_LT(max_relative_difference(va, vb), 1e-4);
  EXPECT_TRUE(fs::exists(dir_ + "/two/model.safetensors"));
}

TEST_F(Distributed, ATwoRankRunResumesInOneProcess) {
  train_both();
  ASSERT_EQ(two_->exit_code, 0) << two_->out;
  ASSERT_EQ(one_->exit_code, 0) << one_->out;
  fs::copy(dir_ + "/two", dir_ + "/two-resumed", fs::copy_options::recursive);
  fs::copy(dir_ + "/one", dir_ + "/one-resumed", fs::copy_options::recursive);
  const Result r2 = shell(hsm() + " train --resume --out '" + dir_ + "/two-resumed' --steps 30" + common());
  ASSERT_EQ(r2.exit_code, 0) << r2.out;
  const Result r1 = shell(hsm() + " train --resume --out '" + dir_ + "/one-resumed' --steps 30" + common());
  ASSERT_EQ(r1.exit_code, 0) << r1.out;
  // The run's batch is the global one (16): one process goes on with it, as the 1-process run does.
  const auto a = train_losses(dir_ + "/two-resumed"), b = train_losses(dir_ + "/one-resumed");
  ASSERT_EQ(a.size(), 30u);
  EXPECT_LT(max_relative_difference(a, b), 1e-4);
}

// The PIDs of a process's children.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> kids;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::istringstream stat(read_file(e.path() / "stat"));
    std::string pid, comm, state;
    pid_t ppid = 0;
    stat >> pid >> comm >> state >> ppid;
    if (ppid == parent) kids.push_back(std::stoi(name));
  }
  return kids;
}

TEST_F(Distributed, KillingOneRankEndsTheRunWithAMessage) {
  const std::string run = dir_ + "/killed", log = dir_ + "/killed.log";
  const pid_t launcher = ::fork();
  ASSERT_GE(launcher, 0);
  if (launcher == 0) {
    const std::string cmd = "exec " + train(run, "--nproc 2 --batch 8 --timeout 20 --checkpoint-every 5", 100000) +
                            " > '" + log + "' 2>&1";
    ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until training runs (a train record), then kill the rank whose RANK is 1.
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  while (train_losses(run).size() < 6 && elapsed() < 60) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(train_losses(run).size(), 6u) << read_file(log);
  pid_t victim = -1;
  for (pid_t kid : children_of(launcher))
    if (read_file("/proc/" + std::to_string(kid) + "/environ").find(std::string("RANK=1") + '\0') != std::string::npos)
      victim = kid;
  ASSERT_GT(victim, 0) << "no rank 1 among the launcher's children";
  ::kill(victim, SIGKILL);
  const auto killed_at = elapsed();
  int status = 0;
  pid_t done = 0;
  while ((done = ::waitpid(launcher, &status, WNOHANG)) == 0 && elapsed() - killed_at < 60)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (done == 0) {
    for (pid_t kid : children_of(launcher)) ::kill(kid, SIGKILL);
    ::kill(launcher, SIGKILL);
    ::waitpid(launcher, &status, 0);
    FAIL() << "the run still ran 60 s after rank 1 was killed\n" << read_file(log);
  }
  const std::string out = read_file(log);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0) << out;
  EXPECT_NE(out.find("rank 1 died (signal 9)"), std::string::npos) << out;  // the launcher
  EXPECT_NE(out.find("rank 0: "), std::string::npos) << out;                 // rank 0's own words
  EXPECT_NE(out.find("rank 1 stopped responding"), std::string::npos) << out;
  std::printf("the run ended %.1f s after rank 1 was killed\n", elapsed() - killed_at);
  // The last checkpoint loads and evaluates.
  const Result ev = shell(hsm() + " eval '" + run + "' --max-batches 1 --json" + common());
  EXPECT_EQ(ev.exit_code, 0) << ev.out;
}

#if !HSM_TEST_DATA_PARALLEL
// A build without data-parallel training (CMake found no c10d's Gloo in LibTorch, or
// HSM_DATA_PARALLEL=OFF): the suites above skip, and what a user then gets is checked instead, so
// that something runs in every configuration: `--nproc 2` refused in words, nothing trained.
class SingleProcessBuild : public Distributed {
 protected:
  void SetUp() override {}
};

TEST_F(SingleProcessBuild, NprocIsRefusedInWordsAndNothingIsTrained) {
  const Result r = shell(train(dir_ + "/refused", "--nproc 2 --batch 8"));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("data-parallel training"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("docs/distributed.md"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ + "/refused/model.safetensors")) << r.out;
  EXPECT_TRUE(train_losses(dir_ + "/refused").empty()) << r.out;
}
#endif

TEST_F(Distributed, BadLauncherSettingsAreNamed) {
  const std::string base = train(dir_ + "/bad", "--batch 8");
  Result r = shell("WORLD_SIZE=2 " + base);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("WORLD_SIZE=2 is set but RANK is not"), std::string::npos) << r.out;
  r = shell("RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29511 " + base);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("RANK=2 is not below WORLD_SIZE=2"), std::string::npos) << r.out;

  // A port something listens on: rank 0 says so instead of waiting.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  r = shell("RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " + base +
            " --timeout 10");
  ::close(fd);
  EXPECT_NE(r.exit_code, 0);
  const std::string why = "MASTER_PORT " + std::to_string(port) + " on 127.0.0.1 is in use";
  EXPECT_NE(r.out.find(why), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir_ + "/bad"));
}

// A TCP port nothing listens on now (bound to port 0 on the loopback, then closed).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  return ok ? ntohs(addr.sin_port) : 29513;
}

// The launcher environment with WORLD_SIZE=1 (torchrun --nproc-per-node 1) makes a group of one
// rank: the same rendezvous, process group (Gloo for CPU tensors) and Reducer as two ranks, and
// it learns exactly as the one process it is (the check a backend gets on one device; NCCL's on
// one GPU is CudaCli.OneRankOverNcclLearnsAsOneProcess).
TEST_F(Distributed, AOneRankGroupIsGlooOnTheCpuAndLearnsAsOneProcess) {
  train_both();
  ASSERT_EQ(one_->exit_code, 0) << one_->out;
  const std::string env = "RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(free_port()) + " ";
  const Result r = shell(env + train(dir_ + "/one-rank", "--batch 16 --timeout 30"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("data parallel: rank 0 of 1 (gloo on cpu, rendezvous 127.0.0.1:"), std::string::npos) << r.out;
  const auto a = train_losses(dir_ + "/one-rank"), b = train_losses(dir_ + "/one");
  ASSERT_EQ(a.size(), 20u);
  const double worst = max_relative_difference(a, b);
  std::printf("max relative difference of the per-step losses, a one-rank group vs one process: %.3g\n", worst);
  EXPECT_LT(worst, 1e-6);
  EXPECT_LT(max_relative_difference(val_losses(dir_ + "/one-rank"), val_losses(dir_ + "/one")), 1e-6);
}

// The backend follows the device: Gloo for CPU tensors (above), NCCL for CUDA tensors where the
// build has it. NCCL asked for where it cannot carry the tensors is refused in words before any
// rendezvous (WORLD_SIZE=2 with no second rank: a wait would take --timeout), and no run folder
// is made.
TEST_F(Distributed, NcclIsRefusedInWordsWhereItCannotCarryTheTensors) {
  const std::string base = "RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(free_port()) +
                           " " + train(dir_ + "/nccl", "--batch 8 --timeout 20");
  const auto t0 = std::chrono::steady_clock::now();
  Result r = shell(base + " --backend nccl");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("--backend nccl carries CUDA tensors, and this run trains on the CPU"), std::string::npos)
      << r.out;
  r = shell(base + " --backend nccl --device cuda");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  if (!HSM_TEST_NCCL)  // this LibTorch has no NCCL (Debian 12's 1.13 is a CPU build)
    EXPECT_NE(r.out.find("--backend nccl: this build has no NCCL: this build's LibTorch"), std::string::npos) << r.out;
  else  // NCCL is built in; on a machine without a GPU the device is refused next, still before any rendezvous
    EXPECT_NE(r.out.find("asked for, but"), std::string::npos) << r.out;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 15.0) << "no rendezvous";
  EXPECT_FALSE(fs::exists(dir_ + "/nccl"));
}

}  // namespace
