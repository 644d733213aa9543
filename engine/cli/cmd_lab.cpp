// `hsm lab --out DIR [--task SPEC]... [--model NAME]... [--lr X]... [--seeds N] [--steps N]
// [--batch N] [--size tiny|as_is] [--json | --csv]`: the mixer lab (hsm/lab.h, docs/lab.md).
// A folder that holds a lab continues it (`hsm lab --out DIR` alone); --table prints its table
// without training.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <thread>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <algorithm>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "hsm/grid_workers.h"
#include "hsm/lab.h"

namespace hsm::cli {
namespace {

// `jobs` workers, each this program on its share of the grid with one thread: a tiny model's
// step is too small to keep two cores busy, two of them are not (docs/performance.md).
// SIGINT, SIGTERM or SIGHUP to the launcher reaches every worker as SIGTERM (each stops at its
// step and keeps its checkpoint) and the launcher returns when they have ended; the workers also
// get SIGTERM when the launcher dies (killed), so none trains on as an orphan (hsm/grid_workers.h).
// Returns what went wrong with each worker that did not end well (empty: none); stopped: a stop
// signal reached the launcher.
std::vector<std::string> run_workers(const std::string& out, int jobs, bool& stopped) {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program (/proc/self/exe) to start lab workers");
  exe[n] = '\0';
  GridStopSignals stop(false);
  std::vector<pid_t> running;
  std::map<pid_t, int> worker_of;
  std::vector<std::string> problems;
  for (int w = 0; w < jobs && !GridStopSignals::raised(); ++w) {
    try {
      const pid_t pid = start_grid_worker({exe, "lab", "--out", out, "--worker", std::to_string(w), "--workers",
                                           std::to_string(jobs), "--threads", "1"});
      running.push_back(pid);
      worker_of[pid] = w;
    } catch (const std::exception& e) {
      problems.push_back(e.what());
      for (pid_t p : running) ::kill(p, SIGTERM);  // the others stop at their step
      break;
    }
  }
  bool forwarded = false;
  while (!running.empty()) {
    const WorkerEnd end = wait_grid_worker(running, forwarded);
    if (end.pid < 0) break;
    running.erase(std::find(running.begin(), running.end(), end.pid));
    if (!WIFEXITED(end.status) || WEXITSTATUS(end.status) != 0)
      problems.push_back("worker " + std::to_string(worker_of[end.pid]) + ": " + worker_status_text(end.status));
  }
  stopped = GridStopSignals::raised();
  return problems;
}

// The cells of the lab some of whose runs are not finished, in words (at most five named).
std::string unfinished_cells(const std::vector<LabCell>& cells) {
  std::string names;
  int64_t count = 0;
  for (const LabCell& c : cells)
    if (!c.finished() && ++count <= 5)
      names += (names.empty() ? "" : ", ") + c.task + " x " + c.model + " (" + std::to_string(c.runs) + "/" +
               std::to_string(c.expected_runs) + " runs)";
  if (count > 5) names += " and " + std::to_string(count - 5) + " more";
  return std::to_string(count) + " of " + std::to_string(cells.size()) + " cells unfinished: " + names;
}

}  // namespace

Command add_lab_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "lab", "Train and score a grid of synthetic tasks x models (best of a few learning rates per cell, as MAD does)");
  struct Args {
    std::string out;
    LabGrid grid;
    bool json = false, csv = false, table_only = false;
    int jobs = 0, worker = -1, workers = 1, threads = 0;
    bool progress = false;
  };
  auto a = std::make_shared<Args>();
  a->grid = default_lab_grid();
  cmd->add_option("--out", a->out, "Lab folder (created; a folder holding a lab continues it)")->required();
  auto* tasks = cmd->add_option("--task", a->grid.tasks, "A task spec NAME[:key=value,...]; repeat for several "
                                                          "(default: every task at its lab difficulty)");
  auto* models = cmd->add_option("--model", a->grid.models,
                                 "A preset or config file; repeat for several (default: gpt, hsm_ab, hybrid_0_6, "
                                 "da_static_emb_qk, ex_he)");
  auto* lrs = cmd->add_option("--lr", a->grid.lrs, "A learning rate; repeat for several (default 0.003)");
  auto* seeds = cmd->add_option("--seeds", a->grid.seeds, "Training seeds per cell (default 1)")
                    ->check(CLI::Range(int64_t{1}, int64_t{100}));
  auto* steps = cmd->add_option("--steps", a->grid.steps, "Steps per run (default 300)")
                    ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  auto* batch = cmd->add_option("--batch", a->grid.batch, "Examples per step (default 32)")
                    ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  auto* size = cmd->add_option("--size", a->grid.size, "tiny (d 64, up to 4 layers of each model) or as_is");
  auto* examples = cmd->add_option("--test-examples", a->grid.test_examples, "Fresh test examples per run (1280)")
                       ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_flag("--json", a->json, "Print the table as JSON");
  cmd->add_flag("--csv", a->csv, "Print the table as CSV (the folder always holds table.csv)");
  cmd->add_flag("--table", a->table_only, "Print the table of the lab in --out without training");
  cmd->add_option("--jobs", a->jobs, "Runs trained at once, each on one thread (default: one per core)")
      ->check(CLI::Range(1, 256));
  // A worker of --jobs: its share of the grid, then no table.
  cmd->add_option("--worker", a->worker)->group("")->check(CLI::Range(0, 255));
  cmd->add_option("--workers", a->workers)->group("")->check(CLI::Range(1, 256));
  cmd->add_option("--threads", a->threads)->group("")->check(CLI::Range(0, 256));
  // For the studio's Lab view, which runs the workers: "progress<TAB>fraction<TAB>run" lines
  // on stdout as a run trains (every 1 %), so its bar moves inside a run too.
  cmd->add_flag("--progress", a->progress)->group("");
  const std::vector<CLI::Option*> grid_options = {tasks, models, lrs, seeds, steps, batch, size, examples};
  return {cmd, [a, grid_options]() {
            bool grid_given = false;
            for (CLI::Option* o : grid_options) grid_given = grid_given || o->count() > 0;
            // A lab folder continues with its own grid unless another one is given (then refused).
            LabGrid grid = a->grid;
            if (!grid_given && std::filesystem::exists(std::filesystem::path(a->out) / "lab.json"))
              grid = Lab::stored_grid(a->out);
            Lab lab(a->out, grid);
            auto log = [](const std::string& line) { std::cerr << line << "\n"; };
            if (a->worker >= 0) {
              // Stop after the step and keep the checkpoint: Ctrl-C, a stopping launcher or
              // studio (SIGTERM), a closed terminal (SIGHUP), or the launcher gone (SIGTERM).
              GridStopSignals stop(true);
              std::function<void(const std::string&, double)> on_step;
              if (a->progress)
                on_step = [shown = -1.0, last = std::string()](const std::string& run, double f) mutable {
                  if (run == last && f < 1.0 && f - shown < 0.01) return;
                  last = run;
                  shown = f;
                  std::printf("progress\t%.4f\t%s\n", f, run.c_str());
                  std::fflush(stdout);
                };
              lab.run(log, GridStopSignals::flag(), a->worker, a->workers, a->threads, on_step);
              return GridStopSignals::raised() ? 130 : 0;  // stopped: its share is unfinished
            }
            const int jobs = a->jobs > 0 ? a->jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
            bool stopped = false;
            std::vector<std::string> problems;
            if (!a->table_only && jobs > 1) {
              problems = run_workers(a->out, jobs, stopped);
            } else if (!a->table_only) {
              GridStopSignals stop(true);
              lab.run(log, GridStopSignals::flag());
              stopped = GridStopSignals::raised();
            }
            std::vector<std::string> warnings;
            const std::vector<LabCell> cells = lab.table(&warnings);
            for (const std::string& w : warnings) std::cerr << "hsm: warning: " << w << "\n";
            const std::string csv = Lab::table_csv(cells);
            if (!a->table_only) {
              // The exit status says whether every cell finished (issue 46): a stop, a failed or
              // stopped worker, leaves cells unfinished and the launcher names them.
              bool all = true;
              for (const LabCell& c : cells) all = all && c.finished();
              if (!all) {
                std::string why = stopped ? "stopped" : "not every run finished";
                for (const std::string& p : problems) why += "; " + p;
                throw std::runtime_error(why + "; " + unfinished_cells(cells) + "; hsm lab --out " + a->out +
                                         " continues the lab");
              }
              for (const std::string& p : problems) std::cerr << "hsm: warning: " << p << "\n";
              // --table only reads; a training lab writes its table whole, never through a link.
              lab.write_table_csv(csv);
            }
            if (a->csv) {
              std::cout << csv;
            } else if (a->json) {
              nlohmann::json rows = nlohmann::json::array();
              for (const LabCell& c : cells) {
                nlohmann::json r = {{"task", c.task},
                                     {"model", c.model},
                                     {"runs", c.runs},
                                     {"expected_runs", c.expected_runs},
                                     {"finished", c.finished()}};
                if (c.runs > 0)
                  r.update({{"best_lr", c.best_lr},
                            {"answer_accuracy", c.answer_accuracy},
                            {"sequence_accuracy", c.sequence_accuracy},
                            {"seed_accuracy", c.seed_accuracy}});
                rows.push_back(r);
              }
              std::cout << nlohmann::json{{"lab", a->out}, {"cells", rows}}.dump(2) << "\n";
            } else {
              std::printf("%-48s %-18s %8s %8s %8s\n", "task", "model", "best lr", "answer", "sequence");
              for (const LabCell& c : cells) {
                if (c.runs == 0) {  // never "best lr 0, answer nan"
                  std::printf("%-48s %-18s %8s\n", c.task.c_str(), c.model.c_str(), "unfinished");
                  continue;
                }
                std::printf("%-48s %-18s %8g %8.3f %8.3f%s\n", c.task.c_str(), c.model.c_str(), c.best_lr,
                            c.answer_accuracy, c.sequence_accuracy,
                            c.finished() ? ""
                                         : ("  unfinished (" + std::to_string(c.runs) + "/" +
                                            std::to_string(c.expected_runs) + " runs)")
                                               .c_str());
              }
            }
            return 0;
          }};
}

}  // namespace hsm::cli
