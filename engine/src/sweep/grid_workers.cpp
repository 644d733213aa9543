// A grid's launcher and workers (hsm/grid_workers.h): its stop passed on, links, events.
#include "hsm/grid_workers.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace hsm {
namespace fs = std::filesystem;

WorkerEnd wait_grid_worker(const std::vector<pid_t>& running, bool& forwarded) {
  for (;;) {
    if (StopSignals::raised() && !forwarded) {
      signal_workers(running, SIGTERM);
      forwarded = true;
    }
    if (running.empty()) return {};
    const WorkerEnd end = wait_worker(running);
    if (end.pid != 0) return end;  // 0: a signal interrupted the wait
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
