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
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "hsm/lab.h"

namespace hsm::cli {
namespace {

std::atomic<bool> g_lab_interrupted{false};
extern "C" void on_lab_interrupt(int) { g_lab_interrupted = true; }

// `jobs` workers, each this program on its share of the grid with one thread: a tiny model's
// step is too small to keep two cores busy, two of them are not (docs/performance.md).
// SIGINT or SIGTERM to the launcher reaches every worker as SIGINT (each stops at its step
// and keeps its checkpoint) and the launcher returns when they have ended; the workers also
// get SIGINT when the launcher dies (killed), so none trains on as an orphan.
// Returns false when a worker failed (its error is on stderr) or the lab was stopped.
bool run_workers(const std::string& out, int jobs) {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw std::runtime_error("cannot find this program (/proc/self/exe) to start lab workers");
  exe[n] = '\0';
  g_lab_interrupted = false;
  struct sigaction on {}, old_int{}, old_term{};
  on.sa_handler = on_lab_interrupt;
  ::sigaction(SIGINT, &on, &old_int);
  ::sigaction(SIGTERM, &on, &old_term);
  const pid_t launcher = ::getpid();
  std::vector<pid_t> pids;
  for (int w = 0; w < jobs; ++w) {
    std::vector<std::string> args = {exe, "lab", "--out", out, "--worker", std::to_string(w), "--workers",
                                     std::to_string(jobs), "--threads", "1"};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("cannot start lab worker " + std::to_string(w));
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGINT);
      if (::getppid() != launcher) _exit(1);  // the launcher died before prctl
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      ::sigaction(SIGINT, &dfl, nullptr);
      ::sigaction(SIGTERM, &dfl, nullptr);
      ::execv(exe, argv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  bool ok = true, forwarded = false;
  for (size_t i = 0; i < pids.size();) {
    int status = 0;
    if (::waitpid(pids[i], &status, 0) < 0) {
      if (errno != EINTR) ++i;
      if (g_lab_interrupted && !forwarded) {  // Ctrl-C or SIGTERM: every worker stops at its step
        for (size_t k = i; k < pids.size(); ++k) ::kill(pids[k], SIGINT);
        forwarded = true;
      }
      continue;
    }
    ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    ++i;
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  return ok && !g_lab_interrupted;
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
              // studio (SIGTERM), or the studio gone (its workers get SIGINT then).
              std::signal(SIGINT, on_lab_interrupt);
              std::signal(SIGTERM, on_lab_interrupt);
              std::function<void(const std::string&, double)> on_step;
              if (a->progress)
                on_step = [shown = -1.0, last = std::string()](const std::string& run, double f) mutable {
                  if (run == last && f < 1.0 && f - shown < 0.01) return;
                  last = run;
                  shown = f;
                  std::printf("progress\t%.4f\t%s\n", f, run.c_str());
                  std::fflush(stdout);
                };
              lab.run(log, &g_lab_interrupted, a->worker, a->workers, a->threads, on_step);
              return 0;
            }
            const int jobs = a->jobs > 0 ? a->jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
            if (!a->table_only && jobs > 1) {
              if (!run_workers(a->out, jobs))
                throw std::runtime_error(std::string(g_lab_interrupted ? "stopped" : "a lab worker failed (see above)") +
                                         "; hsm lab --out " + a->out + " continues the lab");
            } else if (!a->table_only) {
              g_lab_interrupted = false;
              auto previous_int = std::signal(SIGINT, on_lab_interrupt);
              auto previous_term = std::signal(SIGTERM, on_lab_interrupt);
              try {
                lab.run(log, &g_lab_interrupted);
              } catch (...) {
                std::signal(SIGINT, previous_int);
                std::signal(SIGTERM, previous_term);
                throw;
              }
              std::signal(SIGINT, previous_int);
              std::signal(SIGTERM, previous_term);
              if (g_lab_interrupted) throw std::runtime_error("stopped; hsm lab --out " + a->out + " continues the lab");
            }
            const std::vector<LabCell> cells = lab.table();
            const std::string csv = Lab::table_csv(cells);
            {
              std::ofstream f(std::filesystem::path(a->out) / "table.csv");
              f << csv;
            }
            if (a->csv) {
              std::cout << csv;
            } else if (a->json) {
              nlohmann::json rows = nlohmann::json::array();
              for (const LabCell& c : cells) {
                nlohmann::json r = {{"task", c.task}, {"model", c.model}, {"runs", c.runs}};
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
              for (const LabCell& c : cells)
                std::printf("%-48s %-18s %8g %8.3f %8.3f\n", c.task.c_str(), c.model.c_str(), c.best_lr,
                            c.answer_accuracy, c.sequence_accuracy);
            }
            return g_lab_interrupted ? 130 : 0;
          }};
}

}  // namespace hsm::cli
