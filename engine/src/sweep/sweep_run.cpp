// Running a sweep: one point in this process (`hsm sweep run DIR --point K`, a Slurm array
// task), the local launcher (`hsm sweep SPEC --jobs N`) and the Slurm array job.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "hsm/errors.h"
#include "hsm/sweep.h"
#include "hsm/train_until_stopped.h"
#include "hsm/trainer.h"

namespace hsm {
namespace fs = std::filesystem;

std::string run_sweep_point(const std::string& dir, int64_t index, int threads, const std::atomic<bool>* stop,
                            const std::function<void(const std::string&)>& on_log) {
  const Sweep sweep = load_sweep(dir);
  if (index < 0 || index >= static_cast<int64_t>(sweep.points.size()))
    throw std::invalid_argument("--point " + std::to_string(index) + ": the sweep in " + dir + " has points 0.." +
                                std::to_string(sweep.points.size() - 1));
  const SweepPoint& p = sweep.points[static_cast<size_t>(index)];
  // A done point is not trained again (an array job submitted again after a stop).
  if (read_point_state(dir, p).state == "done") return "done";
  RunSpec spec;
  spec.run_dir = sweep_run_dir(dir, p);
  spec.data_path = sweep.data;
  spec.task = sweep.task;
  spec.model = p.model;
  spec.train = p.train;
  spec.threads = threads;
  // A run folder with a checkpoint continues from it (an interrupted point); the trainer
  // removes what a run killed before its first checkpoint left.
  spec.resume = fs::exists(fs::path(spec.run_dir) / "checkpoints") && is_run_folder(spec.run_dir);
  PointState state;
  state.state = "running";
  state.pid = ::getpid();
  write_point_state(dir, p, state);
  TrainCallbacks cb;
  if (on_log) {
    cb.on_log = on_log;
    cb.on_metric = [&](const MetricRecord& m) {
      if (m.kind == "eval")
        on_log(p.name + ": step " + std::to_string(m.step) + "/" + std::to_string(m.total_steps) + " val_loss " +
               std::to_string(m.val_loss));
    };
  }
  try {
    Trainer trainer(spec, cb);
    const TrainSummary s = train_until_stopped(trainer, stop);
    state.state = s.stopped ? "stopped" : "done";
  } catch (const std::exception& e) {
    state.state = "failed";
    state.error = error_text(e);
    write_point_state(dir, p, state);
    throw;
  }
  write_point_state(dir, p, state);
  return state.state;
}

namespace {

// The signal the launcher got (a handler can only set a flag); read by its wait loop.
std::atomic<int> g_signal{0};
extern "C" void on_sweep_signal(int sig) { g_signal = sig; }

}  // namespace

int run_sweep_local(const std::string& dir, int jobs, const std::string& exe,
                    const std::function<void(const std::string&)>& report) {
  const Sweep sweep = load_sweep(dir);
  jobs = std::max(1, jobs);
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  const int threads = std::max(1, cores / jobs);
  std::vector<size_t> todo;
  for (size_t k = 0; k < sweep.points.size(); ++k) {
    const PointState s = read_point_state(dir, sweep.points[k]);
    if (s.state == "done") continue;
    if (s.state == "running")
      throw std::invalid_argument("point " + sweep.points[k].name + " is running (process " + std::to_string(s.pid) +
                                  "); wait for it or stop it before starting the sweep again");
    todo.push_back(k);
  }
  report(std::to_string(sweep.points.size()) + " points, " + std::to_string(sweep.points.size() - todo.size()) +
         " done; running " + std::to_string(todo.size()) + ", " + std::to_string(jobs) + " at a time, " +
         std::to_string(threads) + " thread(s) each");

  // SIGINT/SIGTERM: forwarded to the points (each stops at a step with a checkpoint), no new
  // point starts, and the launcher returns when they have ended.
  g_signal = 0;
  struct sigaction on {
  }, old_int{}, old_term{};
  on.sa_handler = on_sweep_signal;
  ::sigaction(SIGINT, &on, &old_int);
  ::sigaction(SIGTERM, &on, &old_term);
  const pid_t launcher = ::getpid();
  std::map<pid_t, size_t> running;
  bool failed = false, forwarded = false;
  size_t next = 0;
  while (next < todo.size() || !running.empty()) {
    if (g_signal && !forwarded) {
      for (const auto& [pid, k] : running) ::kill(pid, SIGTERM);
      forwarded = true;
      report("stopping: " + std::to_string(running.size()) +
             " point(s) write a checkpoint; start the sweep again to continue");
    }
    while (!g_signal && next < todo.size() && static_cast<int>(running.size()) < jobs) {
      const SweepPoint& p = sweep.points[todo[next++]];
      const std::string log = (fs::path(dir) / "points" / (p.name + ".log")).string();
      std::vector<std::string> args = {
          exe, "sweep", "run", dir, "--point", std::to_string(p.index), "--threads", std::to_string(threads)};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      const pid_t pid = ::fork();
      if (pid < 0) throw std::runtime_error(std::string("cannot start a point: ") + std::strerror(errno));
      if (pid == 0) {
        // The point ends with its launcher (killed, a terminal closed): no orphan training on.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (::getppid() != launcher) _exit(1);  // the launcher died before prctl
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        ::sigaction(SIGINT, &dfl, nullptr);
        ::sigaction(SIGTERM, &dfl, nullptr);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
          ::dup2(fd, STDOUT_FILENO);
          ::dup2(fd, STDERR_FILENO);
          ::close(fd);
        }
        if (!std::getenv("HSM_BLAS_THREADS")) ::setenv("HSM_BLAS_THREADS", "1", 1);
        ::execv(argv[0], argv.data());
        _exit(127);
      }
      running[pid] = static_cast<size_t>(p.index);
      report("started " + p.name);
    }
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const auto it = running.find(pid);
    if (it == running.end()) continue;
    const SweepPoint& p = sweep.points[it->second];
    running.erase(it);
    const PointState s = read_point_state(dir, p);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && s.state == "done") {
      report("done " + p.name);
    } else if (s.state == "stopped" || (g_signal && WIFSIGNALED(status))) {
      report("stopped " + p.name);
    } else {
      failed = true;
      PointState f = s;
      f.state = "failed";
      if (f.error.empty())
        f.error = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                      : "exit status " + std::to_string(WEXITSTATUS(status));
      write_point_state(dir, p, f);
      report("failed " + p.name + ": " + f.error);
    }
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (g_signal) return 130;
  return failed ? 1 : 0;
}

std::string sweep_sbatch_script(const std::string& dir, const std::string& exe) {
  const Sweep sweep = load_sweep(dir);
  const std::string abs_dir = fs::absolute(dir).lexically_normal().string();
  const SweepResources& r = sweep.resources;
  std::string s = "#!/bin/bash\n";
  s += "# The sweep " + sweep.name + " as a Slurm array job: one array task per point (docs/sweeps.md).\n";
  s += "# Submit: sbatch " + abs_dir + "/sweep.sbatch   (again after a stop: done points are skipped)\n";
  s += "#SBATCH --job-name=hsm-" + sweep.name + "\n";
  s += "#SBATCH --array=0-" + std::to_string(sweep.points.size() - 1) + "\n";
  s += "#SBATCH --cpus-per-task=" + std::to_string(r.cpus) + "\n";
  s += "#SBATCH --mem=" + std::to_string(r.mem_gb) + "G\n";
  s += "#SBATCH --time=" + r.time + "\n";
  if (r.gpus > 0) s += "#SBATCH --gres=gpu:" + std::to_string(r.gpus) + "\n";
  if (!r.partition.empty()) s += "#SBATCH --partition=" + r.partition + "\n";
  s += "#SBATCH --output=" + abs_dir + "/points/slurm-%A_%a.log\n";
  s += "# Slurm stops a task with SIGTERM: the point writes a checkpoint and resumes from it next time.\n";
  s += "#SBATCH --signal=TERM@60\n";
  s += "export HSM_BLAS_THREADS=${HSM_BLAS_THREADS:-1}\n";
  s += "exec '" + exe + "' sweep run '" + abs_dir +
       "' --point \"$SLURM_ARRAY_TASK_ID\" --threads \"${SLURM_CPUS_PER_TASK:-" + std::to_string(r.cpus) + "}\"\n";
  return s;
}

}  // namespace hsm
