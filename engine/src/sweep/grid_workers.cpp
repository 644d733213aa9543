// A grid's launcher and workers (hsm/grid_workers.h): stop signals, worker processes, links.
#include "hsm/grid_workers.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace hsm {
namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};
extern "C" void on_grid_stop(int sig) {
  g_stop_signal = sig;
  g_stop = true;
}
constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_previous[3];

}  // namespace

GridStopSignals::GridStopSignals(bool restart) {
  g_stop = false;
  g_stop_signal = 0;
  struct sigaction on {};
  on.sa_handler = on_grid_stop;
  on.sa_flags = restart ? SA_RESTART : 0;
  sigemptyset(&on.sa_mask);
  for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &on, &g_previous[i]);
}

GridStopSignals::~GridStopSignals() {
  for (int i = 0; i < 3; ++i) ::sigaction(kStopSignals[i], &g_previous[i], nullptr);
}

const std::atomic<bool>* GridStopSignals::flag() { return &g_stop; }
bool GridStopSignals::raised() { return g_stop; }
int GridStopSignals::signal() { return g_stop_signal; }

pid_t start_grid_worker(const std::vector<std::string>& argv_text, const std::string& log, bool keep_stdout) {
  int log_fd = -1;
  if (!log.empty()) {
    log_fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      const int e = errno;
      if (e == ELOOP) throw std::runtime_error("'" + log + "' is a symbolic link: refusing to write the log through it");
      throw std::runtime_error("cannot write the log '" + log + "': " + std::strerror(e));
    }
    struct stat st {};
    if (::fstat(log_fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(log_fd);
      throw std::runtime_error("'" + log + "' is not a regular file: refusing to write the log to it");
    }
  }
  std::vector<std::string> args = argv_text;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    if (log_fd >= 0) ::close(log_fd);
    throw std::runtime_error("cannot start a worker (" + args.front() + "): " + std::strerror(e));
  }
  if (pid == 0) {
    // The worker ends with its launcher (killed, a terminal closed): no orphan training on.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != launcher) _exit(1);  // the launcher died before prctl
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : kStopSignals) ::sigaction(sig, &dfl, nullptr);
    if (log_fd >= 0) {
      if (!keep_stdout) ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    if (!std::getenv("HSM_BLAS_THREADS")) ::setenv("HSM_BLAS_THREADS", "1", 1);
    ::execv(argv[0], argv.data());
    _exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
  return pid;
}

WorkerEnd wait_grid_worker(const std::vector<pid_t>& running, bool& forwarded) {
  for (;;) {
    if (g_stop && !forwarded) {
      for (pid_t p : running) ::kill(p, SIGTERM);
      forwarded = true;
    }
    if (running.empty()) return {};
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) return {};
    if (std::find(running.begin(), running.end(), pid) == running.end()) continue;
    return {pid, status};
  }
}

void write_grid_event(const std::string& json_object) {
  const std::string line = kGridEventPrefix + json_object + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader is gone
    done += static_cast<size_t>(n);
  }
}

std::string worker_status_text(int status) {
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + ::strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 130) return "stopped by a signal (exit status 130)";
  return "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

void check_grid_folder(const std::string& dir, const std::string& what) {
  for (const char* sub : {"runs", "points"}) {
    const fs::path p = fs::path(dir) / sub;
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (ec || !fs::exists(st)) continue;
    if (fs::is_symlink(st))
      throw std::invalid_argument("'" + p.string() + "' is a symbolic link: the " + what +
                                  "'s runs would train outside its folder; make it a folder of its own");
    if (!fs::is_directory(st))
      throw std::invalid_argument("'" + p.string() + "' is not a folder; the " + what + " keeps its runs there");
  }
}

void check_grid_run_dir(const std::string& run_dir) {
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(run_dir, ec)))
    throw std::invalid_argument("'" + run_dir + "' is a symbolic link: refusing to train outside the grid's folder");
}

std::string exact_number_text(double x) {
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, x);
    if (std::strtod(buf, nullptr) == x) break;
  }
  return buf;
}

}  // namespace hsm
