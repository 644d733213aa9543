// Running a sweep: one point in this process (`hsm sweep run DIR --point K`, a Slurm array
// task), the local launcher (`hsm sweep SPEC --jobs N`) and the Slurm array job.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <cmath>
#include <nlohmann/json.hpp>

#include "hsm/errors.h"
#include "hsm/grid_workers.h"
#include "hsm/lab.h"
#include "hsm/run_folder.h"
#include "hsm/sweep.h"
#include "hsm/train_until_stopped.h"
#include "hsm/trainer.h"
#include "io/io_util.h"

namespace hsm {
namespace fs = std::filesystem;

namespace {

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

}  // namespace

std::string run_sweep_point(const std::string& dir, int64_t index, int threads, const std::atomic<bool>* stop,
                            const std::function<void(const std::string&)>& on_log,
                            const std::function<void(const std::string&)>& on_event) {
  const Sweep sweep = load_sweep(dir);
  if (index < 0 || index >= static_cast<int64_t>(sweep.points.size()))
    throw std::invalid_argument("--point " + std::to_string(index) + ": the sweep in " + dir + " has points 0.." +
                                std::to_string(sweep.points.size() - 1));
  const SweepPoint& p = sweep.points[static_cast<size_t>(index)];
  auto event = [&](nlohmann::json e) {
    if (!on_event) return;
    e["point"] = p.index;
    e["name"] = p.name;
    on_event(e.dump());
  };
  // A done point is not trained again (an array job submitted again after a stop).
  if (read_point_state(dir, p).state == "done") {
    event({{"event", "finished"}, {"state", "done"}});
    return "done";
  }
  check_grid_folder(dir, "grid");
  RunSpec spec;
  spec.run_dir = sweep_run_dir(dir, p);
  check_grid_run_dir(spec.run_dir);
  spec.data_path = sweep.data;
  spec.task = p.task;
  spec.model = p.model;
  spec.train = p.train;
  spec.threads = threads;
  // A run folder with a checkpoint continues from it (an interrupted point); the trainer
  // removes what a run killed before its first checkpoint left.
  spec.resume = fs::exists(RunFolder(spec.run_dir).checkpoints) && is_run_folder(spec.run_dir);
  if (spec.resume && on_log) on_log("continuing " + p.name + " from its checkpoint");
  PointState state;
  state.state = "running";
  state.pid = ::getpid();
  write_point_state(dir, p, state);
  event({{"event", "started"}, {"resumed", spec.resume}});
  const auto t0 = std::chrono::steady_clock::now();
  double val_loss = NAN;
  TrainCallbacks cb;
  cb.on_metric = [&](const MetricRecord& m) {
    if (m.kind != "eval") return;
    val_loss = m.val_loss;
    if (on_log)
      on_log(p.name + ": step " + std::to_string(m.step) + "/" + std::to_string(m.total_steps) + " val_loss " +
             std::to_string(m.val_loss));
  };
  if (on_log) cb.on_log = on_log;
  if (on_event)
    cb.on_progress = [&, shown = -1.0, last = std::chrono::steady_clock::time_point()](const std::string& stage,
                                                                                       double f) mutable {
      // Every 1 % of the run, and at least every half second of a long one.
      const auto now = std::chrono::steady_clock::now();
      if (stage != "training" || (f < 1.0 && f - shown < 0.01 && now - last < std::chrono::milliseconds(500))) return;
      shown = f;
      last = now;
      event({{"event", "step"}, {"fraction", f}});
    };
  try {
    Trainer trainer(spec, cb);
    const TrainSummary s = train_until_stopped(trainer, stop);
    state.state = s.stopped ? "stopped" : "done";
    // A task grid's score on fresh test examples (a lab's): part of the point's "done".
    if (!s.stopped && sweep.test_examples > 0 && !p.task.empty()) {
      state.score = score_task_run(spec.run_dir, sweep.test_examples, p.train.device);
      state.scored = true;
    }
  } catch (const std::exception& e) {
    state.state = "failed";
    state.error = error_text(e);
    event({{"event", "finished"}, {"state", "failed"}, {"error", state.error}});
    try {
      write_point_state(dir, p, state);
    } catch (const std::exception& w) {
      throw std::runtime_error(state.error + "; and its state could not be recorded: " + error_text(w));
    }
    throw;
  }
  state.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_point_state(dir, p, state);
  nlohmann::json done = {{"event", "finished"}, {"state", state.state}, {"val_loss", number_or_null(val_loss)}};
  if (state.scored) {
    done["answer_accuracy"] = number_or_null(state.score.answer_accuracy);
    done["sequence_accuracy"] = number_or_null(state.score.sequence_accuracy);
    // What a lab's cell and its distance panel need of the run (the studio keeps them from the
    // events, hsm::Lab::run_of_event): the score as its state file holds it, by distance too,
    // and how its training ended, read once here from its validations.
    done["score"] = nlohmann::json::parse(task_score_json(state.score));
    done["wall_s"] = state.wall_s;
    done["convergence"] = nlohmann::json::parse(run_convergence_json(read_run_convergence(spec.run_dir, p.train)));
    if (on_log) {
      char line[256];
      std::snprintf(line, sizeof line, "%s: answer accuracy %.3f, sequence accuracy %.3f (%.1f s)", p.name.c_str(),
                    state.score.answer_accuracy, state.score.sequence_accuracy, state.wall_s);
      on_log(line);
    }
  }
  // Workers share the launcher's output: a line over PIPE_BUF could interleave with another's.
  // A score too long for one (a task of thousands of distances) is left to the point's state file.
  done["point"] = p.index;
  done["name"] = p.name;
  if (done.dump().size() + sizeof(kGridEventPrefix) > PIPE_BUF) {  // the prefix's size counts the newline
    done.erase("score");
    done.erase("convergence");
  }
  event(done);
  return state.state;
}

int run_sweep_local(const std::string& dir, int jobs, const std::string& exe,
                    const std::function<void(const std::string&)>& report, bool events) {
  const Sweep sweep = load_sweep(dir);
  check_grid_folder(dir, "sweep");
  // The workers' logs go to points/; a grid whose points/ was cleaned away by hand runs again.
  fs::create_directories(fs::path(dir) / "points");
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
  if (events)
    write_grid_event(nlohmann::json{{"event", "grid"}, {"points", sweep.points.size()},
                                    {"done", sweep.points.size() - todo.size()}, {"jobs", jobs}}
                         .dump());

  // A point's end that its worker could not report itself (it never started, or was killed).
  auto ended_event = [](const SweepPoint& p, const std::string& state, const std::string& error) {
    nlohmann::json e = {{"event", "finished"}, {"point", p.index}, {"name", p.name}, {"state", state}};
    if (!error.empty()) e["error"] = error;
    write_grid_event(e.dump());
  };
  // SIGINT, SIGTERM, SIGHUP: passed on to the points (each stops at a step with a checkpoint),
  // no new point starts, and the launcher returns when they have ended (hsm/worker_process.h).
  StopSignals stop(false);
  std::map<pid_t, size_t> running;
  bool forwarded = false, reported = false;
  size_t next = 0;
  while (next < todo.size() || !running.empty()) {
    while (!StopSignals::raised() && next < todo.size() && static_cast<int>(running.size()) < jobs) {
      const SweepPoint& p = sweep.points[todo[next++]];
      const std::string log = (fs::path(dir) / "points" / (p.name + ".log")).string();
      try {
        WorkerOptions worker;
        worker.argv = {exe, "sweep", "run", dir, "--point", std::to_string(p.index), "--threads", std::to_string(threads)};
        if (events) worker.argv.push_back("--events");
        worker.log = log;
        worker.keep_stdout = events;  // the launcher's output carries the events
        const pid_t pid = start_worker(worker);
        running[pid] = static_cast<size_t>(p.index);
        report("started " + p.name);
      } catch (const std::exception& e) {
        PointState failed;
        failed.state = "failed";
        failed.error = error_text(e);
        write_point_state(dir, p, failed);
        report("failed " + p.name + ": " + error_text(e));
        if (events) ended_event(p, "failed", failed.error);
      }
    }
    if (running.empty()) break;
    std::vector<pid_t> pids;
    for (const auto& [pid, k] : running) pids.push_back(pid);
    const WorkerEnd end = wait_grid_worker(pids, forwarded);
    if (forwarded && !reported) {
      reported = true;
      report("stopping: " + std::to_string(running.size()) +
             " point(s) write a checkpoint; start the sweep again to continue");
    }
    if (end.pid < 0) break;
    const SweepPoint& p = sweep.points[running.at(end.pid)];
    running.erase(end.pid);
    const int status = end.status;
    const PointState s = read_point_state(dir, p);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && s.state == "done") {
      report("done " + p.name);
    } else if (s.state == "stopped" || (StopSignals::raised() && WIFSIGNALED(status))) {
      report("stopped " + p.name);
      if (events && WIFSIGNALED(status)) ended_event(p, "stopped", "");  // killed with no time to say so
    } else {
      PointState f = s;
      const bool said = f.state == "failed";  // the worker's own event said so
      f.state = "failed";
      if (f.error.empty()) f.error = worker_status_text(status);
      write_point_state(dir, p, f);
      report("failed " + p.name + ": " + f.error);
      if (events && !said) ended_event(p, "failed", f.error);  // a worker killed with no time to say so
    }
  }
  // The exit status says whether every point finished (issue 46), naming those that did not.
  std::string left;
  size_t unfinished = 0;
  for (const SweepPoint& p : sweep.points)
    if (read_point_state(dir, p).state != "done" && ++unfinished <= 5) left += (left.empty() ? "" : ", ") + p.name;
  if (unfinished > 5) left += " and " + std::to_string(unfinished - 5) + " more";
  if (unfinished > 0)
    report(std::to_string(unfinished) + " of " + std::to_string(sweep.points.size()) + " points unfinished: " + left +
           "; hsm sweep --out " + dir + " continues the grid");
  if (StopSignals::raised()) return 130;
  return unfinished > 0 ? 1 : 0;
}

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

namespace {

// A path that can stand in an #SBATCH line as it is: no space, quote, newline, % (a Slurm
// file pattern) or other character Slurm's or the shell's parsing would take apart.
bool sbatch_safe_path(const std::string& p) {
  return !p.empty() && p.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+,=@-") ==
                           std::string::npos;
}

}  // namespace

std::string sweep_sbatch_script(const std::string& dir, const std::string& exe) {
  const Sweep sweep = load_sweep(dir);
  const std::string abs_dir = fs::absolute(dir).lexically_normal().string();
  const bool safe = sbatch_safe_path(abs_dir);
  const SweepResources& r = sweep.resources;
  std::string s = "#!/bin/bash\n";
  // The name, time and partition were checked against what Slurm accepts (parse_sweep_spec).
  s += "# The sweep " + sweep.name + " as a Slurm array job: one array task per point (docs/sweeps.md).\n";
  s += "# Submit: sbatch " + (safe ? abs_dir + "/sweep.sbatch" : std::string("sweep.sbatch (in the sweep's folder)")) +
       "   (again after a stop: done points are skipped)\n";
  s += "#SBATCH --job-name=hsm-" + sweep.name + "\n";
  s += "#SBATCH --array=0-" + std::to_string(sweep.points.size() - 1) + "\n";
  s += "#SBATCH --cpus-per-task=" + std::to_string(r.cpus) + "\n";
  s += "#SBATCH --mem=" + std::to_string(r.mem_gb) + "G\n";
  s += "#SBATCH --time=" + r.time + "\n";
  if (r.gpus > 0) s += "#SBATCH --gres=gpu:" + std::to_string(r.gpus) + "\n";
  if (!r.partition.empty()) s += "#SBATCH --partition=" + r.partition + "\n";
  // A folder whose path an #SBATCH line cannot hold: the task's output goes there from the
  // script (below), the path quoted.
  s += "#SBATCH --output=" + (safe ? abs_dir + "/points/slurm-%A_%a.log" : std::string("/dev/null")) + "\n";
  s += "# Slurm stops a task with SIGTERM: the point writes a checkpoint and resumes from it next time.\n";
  s += "#SBATCH --signal=TERM@60\n";
  s += "sweep_dir=" + shell_quoted(abs_dir) + "\n";
  s += "hsm_exe=" + shell_quoted(exe) + "\n";
  if (!safe)
    s += "exec >>\"$sweep_dir/points/slurm-${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.log\" 2>&1\n";
  s += "export HSM_BLAS_THREADS=${HSM_BLAS_THREADS:-1}\n";
  s += "exec \"$hsm_exe\" sweep run \"$sweep_dir\" --point \"$SLURM_ARRAY_TASK_ID\" --threads \"${SLURM_CPUS_PER_TASK:-" +
       std::to_string(r.cpus) + "}\"\n";
  return s;
}

std::string write_sweep_sbatch(const std::string& dir, const std::string& exe) {
  const std::string script = (fs::path(dir) / "sweep.sbatch").string();
  write_file_atomic(script, sweep_sbatch_script(dir, exe), false, 0755);
  return script;
}

}  // namespace hsm
