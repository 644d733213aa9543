// Worker processes and stop signals (hsm/worker_process.h): one set of handlers, one fork.
#include "hsm/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace hsm {

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};     // the last one
std::atomic<int> g_untaken{0};         // the last one since take()
std::atomic<long> g_handler_thread{0};  // the thread that handled it
extern "C" void on_stop_signal(int sig) {
  g_handler_thread = static_cast<long>(::syscall(SYS_gettid));  // async-signal-safe
  g_stop_signal = sig;
  g_untaken = sig;
  g_stop = true;
}
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kStopSignals) sigaddset(&set, sig);
  return set;
}

// A training process's receiver of the stop signals (StopSignals(true)): a thread that only
// sleeps, so the handler's frame lands on a stack of its own; the constructing thread's mask
// as it was, restored at the end.
std::thread g_receiver;
std::atomic<bool> g_receiver_done{false};
sigset_t g_mask_before;

// The log file, opened without following a link, or -1 when there is none.
int open_log(const std::string& log) {
  if (log.empty()) return -1;
  const int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int e = errno;
    if (e == ELOOP) throw std::runtime_error("'" + log + "' is a symbolic link: refusing to write the log through it");
    throw std::runtime_error("cannot write the log '" + log + "': " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error("'" + log + "' is not a regular file: refusing to write the log to it");
  }
  return fd;
}

// This process's environment with `set` over it and HSM_BLAS_THREADS=1 unless set: made before
// the fork, so the child calls only async-signal-safe functions until it executes.
std::vector<std::string> worker_environment(const std::vector<std::pair<std::string, std::string>>& set) {
  std::vector<std::string> out;
  auto named = [](const std::string& entry, const std::string& name) {
    return entry.size() > name.size() && entry.compare(0, name.size(), name) == 0 && entry[name.size()] == '=';
  };
  for (char** e = environ; e && *e; ++e) {
    const std::string entry = *e;
    if (std::none_of(set.begin(), set.end(), [&](const auto& kv) { return named(entry, kv.first); }))
      out.push_back(entry);
  }
  for (const auto& [name, value] : set) out.push_back(name + "=" + value);
  if (std::none_of(out.begin(), out.end(), [&](const std::string& entry) { return named(entry, "HSM_BLAS_THREADS"); }))
    out.push_back("HSM_BLAS_THREADS=1");
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& texts) {
  std::vector<char*> out;
  for (std::string& t : texts) out.push_back(t.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

StopSignals::StopSignals(bool restart) {
  g_stop = false;
  g_stop_signal = 0;
  g_untaken = 0;
  g_handler_thread = 0;
  struct sigaction on {};
  on.sa_handler = on_stop_signal;
  on.sa_flags = restart ? SA_RESTART : 0;
  sigemptyset(&on.sa_mask);
  for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &on, &g_previous[i]);
  if (!restart) return;  // a launcher computes nothing: its wait is what a signal interrupts
  const sigset_t set = stop_signal_set();
  g_receiver_done = false;
  g_receiver = std::thread([set] {
    ::pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
    while (!g_receiver_done) ::usleep(50 * 1000);  // a signal ends the sleep early; its handler ran here
  });
  ::pthread_sigmask(SIG_BLOCK, &set, &g_mask_before);
}

StopSignals::~StopSignals() {
  if (g_receiver.joinable()) {
    g_receiver_done = true;
    g_receiver.join();
    ::pthread_sigmask(SIG_SETMASK, &g_mask_before, nullptr);
  }
  for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &g_previous[i], nullptr);
}

const std::atomic<bool>* StopSignals::flag() { return &g_stop; }
bool StopSignals::raised() { return g_stop; }
int StopSignals::signal() { return g_stop_signal; }
int StopSignals::take() { return g_untaken.exchange(0); }
long StopSignals::handler_thread() { return g_handler_thread; }

pid_t start_worker(const WorkerOptions& o) {
  if (o.argv.empty()) throw std::invalid_argument("start_worker: no command line");
  const std::string what = o.what.empty() ? "a worker (" + o.argv.front() + ")" : o.what;
  std::vector<std::string> args = o.argv, env = worker_environment(o.env);
  const std::string program = o.program.empty() ? o.argv.front() : o.program;
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  const int log_fd = open_log(o.log);
  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    if (log_fd >= 0) ::close(log_fd);
    throw std::runtime_error("cannot start " + what + ": " + std::strerror(e));
  }
  if (pid == 0) {
    // The worker ends with its launcher (killed, a terminal closed): no orphan training on.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != launcher) _exit(1);  // the launcher died before prctl
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : kStopSignals) ::sigaction(sig, &dfl, nullptr);
    if (log_fd >= 0) {
      if (!o.keep_stdout) ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    ::execve(program.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
  return pid;
}

void signal_workers(const std::vector<pid_t>& pids, int sig) {
  for (pid_t p : pids)
    if (p > 0) ::kill(p, sig);
}

WorkerEnd wait_worker(const std::vector<pid_t>& running, bool poll) {
  int status = 0;
  const pid_t pid = ::waitpid(-1, &status, poll ? WNOHANG : 0);
  if (pid < 0 && errno == EINTR) return {0, 0};
  if (pid <= 0) return {pid, 0};
  // Another child: not a worker's end, but the signal that may have come with it is looked at
  // before the next wait (a child that sends a stop and exits at once is reaped first).
  if (std::find(running.begin(), running.end(), pid) == running.end()) return {0, 0};
  return {pid, status};
}

}  // namespace hsm
