// Worker processes and stop signals (hsm/worker_process.h, issue 66): a stop signal raises the
// flag and the previous handler comes back; a worker is stopped by the signal its launcher passes
// on, even where the launcher ignored that signal; a worker dies with its launcher; its
// environment and its log.
#include "hsm/worker_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using hsm::signal_workers;
using hsm::start_worker;
using hsm::StopSignals;
using hsm::wait_worker;
using hsm::WorkerOptions;

namespace {

using Clock = std::chrono::steady_clock;

// The wait status of `pid`, or nothing when it has not ended within `seconds`.
std::optional<int> wait_for(pid_t pid, double seconds) {
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  while (Clock::now() < deadline) {
    int status = 0;
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid) return status;
    if (got < 0) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

// Whether `pid` has started `program` within 10 s (its command line begins with it).
bool runs_program(pid_t pid, const std::string& program) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
    std::string argv0;
    if (std::getline(in, argv0, '\0') && argv0 == program) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// Ends a child the test lost track of (a failed assertion), so no sleep outlives the test.
struct Reap {
  pid_t pid;
  ~Reap() {
    if (pid > 0 && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, nullptr, 0);
  }
};

// /bin/sleep 30 as a worker.
WorkerOptions sleeper() {
  WorkerOptions o;
  o.argv = {"/bin/sleep", "30"};
  return o;
}

}  // namespace

TEST(WorkerProcess, AStopSignalRaisesTheFlagAndThePreviousHandlerComesBack) {
  struct sigaction previous {}, mine {};
  mine.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGHUP, &mine, &previous), 0);
  {
    StopSignals stop(true);
    EXPECT_FALSE(StopSignals::raised());
    ::kill(::getpid(), SIGHUP);  // to the process, as a closed terminal sends it: its receiver takes it
    for (int i = 0; i < 200 && !StopSignals::raised(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(StopSignals::raised());
    EXPECT_TRUE(StopSignals::flag()->load());
    EXPECT_EQ(StopSignals::signal(), SIGHUP);
    EXPECT_EQ(StopSignals::take(), SIGHUP);
    EXPECT_EQ(StopSignals::take(), 0);  // taken once
    EXPECT_EQ(StopSignals::signal(), SIGHUP);
  }
  struct sigaction now {};
  ::sigaction(SIGHUP, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_IGN);  // ours again
  ::sigaction(SIGHUP, &previous, nullptr);
}

// A training process handles its stop signals on a thread of StopSignals' own, never on the
// thread that made it or one that thread starts (they compute: oneDNN's JIT products point rsp
// at the heap, and a signal frame written there corrupted it, worker_process.h). Linux hands a
// process-directed signal to the main thread when it does not block it: the old handling ran
// every one of them here. A launcher's (no restart) still interrupts its own wait.
TEST(WorkerProcess, ATrainingProcessHandlesStopSignalsOffTheThreadsThatCompute) {
  const long main_thread = static_cast<long>(::gettid());
  {
    StopSignals stop(true);
    std::atomic<long> compute_thread{0};
    std::atomic<bool> done{false};
    std::thread compute([&] {  // started after: it inherits the blocked signals, as LibTorch's pools do
      compute_thread = static_cast<long>(::gettid());
      volatile double x = 0;
      while (!done) x = x + 1;  // busy, as a matrix product is
    });
    while (compute_thread == 0) std::this_thread::yield();
    for (const int sig : {SIGTERM, SIGINT, SIGHUP, SIGTERM, SIGTERM}) {
      ASSERT_EQ(::kill(::getpid(), sig), 0);
      for (int i = 0; i < 300 && StopSignals::take() != sig; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      EXPECT_EQ(StopSignals::signal(), sig);
      const long handled_on = StopSignals::handler_thread();
      EXPECT_NE(handled_on, 0);
      EXPECT_NE(handled_on, main_thread) << "a stop signal was handled on the thread that computes";
      EXPECT_NE(handled_on, compute_thread.load()) << "a stop signal was handled on a thread it started";
    }
    done = true;
    compute.join();
  }
  // Afterwards the thread's mask is as it was: the signals reach it again.
  sigset_t now;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &now);
  EXPECT_FALSE(sigismember(&now, SIGTERM) || sigismember(&now, SIGINT) || sigismember(&now, SIGHUP));
  {
    StopSignals launcher(false);
    ::kill(::getpid(), SIGTERM);  // unblocked here: Linux delivers it to this (main) thread at once
    EXPECT_TRUE(StopSignals::raised());
    EXPECT_EQ(StopSignals::handler_thread(), main_thread);
  }
}

// A launcher blocked in its wait: a SIGINT sent to it alone interrupts the wait, and the signal it
// passes on stops the worker. The launcher ignored SIGINT before: the worker still has default
// handling, or it would never stop.
TEST(WorkerProcess, AWorkerIsStoppedByTheSignalItsLauncherPassesOn) {
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &previous);
  const pid_t worker = start_worker(sleeper());
  Reap reap{worker};
  ASSERT_GT(worker, 0);
  {
    StopSignals stop(false);
    const pid_t launcher = ::getpid();
    const pid_t sender = ::fork();  // sends the launcher a SIGINT while it waits
    if (sender == 0) {
      ::usleep(500 * 1000);
      ::kill(launcher, SIGINT);
      _exit(0);
    }
    ASSERT_GT(sender, 0);
    const auto t0 = Clock::now();
    hsm::WorkerEnd end = wait_worker({worker});  // the sender's end is passed over
    EXPECT_EQ(end.pid, 0) << "the wait should have been interrupted by the SIGINT";
    EXPECT_TRUE(StopSignals::raised());
    const int sig = StopSignals::take();
    EXPECT_EQ(sig, SIGINT);
    signal_workers({-1, worker}, sig);
    while (end.pid == 0) end = wait_worker({worker});
    ASSERT_EQ(end.pid, worker);
    reap.pid = -1;
    EXPECT_TRUE(WIFSIGNALED(end.status) && WTERMSIG(end.status) == SIGINT) << "status " << end.status;
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 10.0);
    ::waitpid(sender, nullptr, 0);
  }
  ::sigaction(SIGINT, &previous, nullptr);
}

// The launcher killed with SIGKILL (it could pass nothing on): its worker gets SIGTERM. This test
// is the launcher's parent and takes its orphans (a subreaper), so it sees the worker's end.
TEST(WorkerProcess, AWorkerDiesWithItsLauncher) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t launcher = ::fork();
  if (launcher == 0) {
    ::close(fds[0]);
    pid_t worker = -1;
    try {
      worker = start_worker(sleeper());
    } catch (...) {
    }
    if (::write(fds[1], &worker, sizeof worker) != static_cast<ssize_t>(sizeof worker)) _exit(1);
    ::pause();
    _exit(0);
  }
  ASSERT_GT(launcher, 0);
  ::close(fds[1]);
  pid_t worker = -1;
  ASSERT_EQ(::read(fds[0], &worker, sizeof worker), static_cast<ssize_t>(sizeof worker));
  ::close(fds[0]);
  Reap reap{worker};
  ASSERT_GT(worker, 0);
  ASSERT_TRUE(runs_program(worker, "/bin/sleep"));  // past its start (a launcher dead before it exits 1)
  ::kill(launcher, SIGKILL);
  ::waitpid(launcher, nullptr, 0);
  const std::optional<int> status = wait_for(worker, 10);
  ASSERT_TRUE(status.has_value()) << "the worker outlived its launcher";
  reap.pid = -1;
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGTERM) << "status " << *status;
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(WorkerProcess, AWorkerGetsItsEnvironmentAndWritesItsLog) {
  const fs::path dir = fs::temp_directory_path() / ("hsm_worker_process_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string log = (dir / "worker.log").string();
  ::unsetenv("HSM_BLAS_THREADS");
  WorkerOptions o;
  o.argv = {"sh", "-c", "echo \"$HSM_WORKER_TEST $HSM_BLAS_THREADS\" >&2; echo out"};
  o.program = "/bin/sh";  // not argv[0]
  o.env = {{"HSM_WORKER_TEST", "given"}};
  o.log = log;
  const pid_t pid = start_worker(o);
  const std::optional<int> status = wait_for(pid, 10);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "given 1\nout\n");  // stderr and stdout, HSM_BLAS_THREADS=1 as it was unset

  // A log that is a link is refused, naming it, and nothing starts.
  const std::string link = (dir / "link.log").string();
  fs::create_symlink(dir / "elsewhere.log", link);
  o.log = link;
  try {
    start_worker(o);
    ADD_FAILURE() << "a log through a link was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + link + "' is a symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "elsewhere.log"));
  fs::remove_all(dir);

  // A program that cannot be executed: the worker exits with 127.
  WorkerOptions missing_program;
  missing_program.argv = {"/nonexistent/hsm"};
  const pid_t missing = start_worker(missing_program);
  const std::optional<int> gone = wait_for(missing, 10);
  ASSERT_TRUE(gone.has_value());
  EXPECT_TRUE(WIFEXITED(*gone) && WEXITSTATUS(*gone) == 127);
}
