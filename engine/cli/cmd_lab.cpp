// `hsm lab --out DIR [--task SPEC]... [--model NAME]... [--lr X]... [--seeds N] [--steps N]
// [--batch N] [--size lab|tiny|as_is] [--device D] [--jobs N] [--slurm] [--json | --csv]`: the mixer
// lab (hsm/lab.h, docs/lab.md), the friendly front of a grid of task runs: it writes the grid
// and trains it with the one launcher (`hsm sweep`'s). A folder that holds a lab continues it
// (`hsm lab --out DIR` alone); --table prints its table without training; `hsm lab convert DIR`
// converts a lab folder of an older hsm.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "hsm/grid_workers.h"
#include "hsm/lab.h"
#include "hsm/sweep.h"

namespace hsm::cli {
namespace {

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
    std::string convert;
    bool json = false, csv = false, table_only = false, slurm = false, events = false;
    int jobs = 0;
  };
  auto a = std::make_shared<Args>();
  a->grid = default_lab_grid();
  cmd->add_option("--out", a->out, "Lab folder (created; a folder holding a lab continues it)");
  auto* tasks = cmd->add_option("--task", a->grid.tasks, "A task spec NAME[:key=value,...]; repeat for several "
                                                          "(default: mqar, recall_at and in_context_recall at context 64)");
  auto* models = cmd->add_option("--model", a->grid.models,
                                 "A preset or config file; repeat for several (default: gpt, hsm_ab, hybrid_0_6)");
  auto* lrs = cmd->add_option("--lr", a->grid.lrs, "A learning rate; repeat for several (default 0.003)");
  auto* seeds = cmd->add_option("--seeds", a->grid.seeds, "Training seeds per cell (default 2)")
                    ->check(CLI::Range(int64_t{1}, int64_t{100}));
  auto* steps = cmd->add_option("--steps", a->grid.steps, "Steps per run (default 600)")
                    ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  auto* batch = cmd->add_option("--batch", a->grid.batch, "Examples per step (default 128)")
                    ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  auto* size = cmd->add_option("--size", a->grid.size, "lab (d 64, up to 4 layers of each model, one head, no MLP; the default), tiny (the same with the "
                               "model's heads and an FFN of 4·d) or as_is");
  auto* examples = cmd->add_option("--test-examples", a->grid.test_examples, "Fresh test examples per run (1280)")
                       ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_flag("--json", a->json, "Print the table as JSON");
  cmd->add_flag("--csv", a->csv, "Print the table as CSV (the folder always holds table.csv)");
  cmd->add_flag("--table", a->table_only, "Print the table of the lab in --out without training");
  auto* device = cmd->add_option("--device", a->grid.device, "Where every run trains and is scored (default cpu)");
  cmd->add_option("--jobs", a->jobs,
                  "Runs trained at once, the cores split among them, as hsm sweep --jobs (default: one per core)")
      ->check(CLI::Range(1, 256));
  cmd->add_flag("--slurm", a->slurm, "Write DIR/sweep.sbatch, a Slurm array job (one task per run), instead of training");
  cmd->add_flag("--events", a->events,
                "Print the workers' progress events on stdout, one JSON object a line (hsm/grid_workers.h)");
  auto* convert = cmd->add_subcommand("convert", "Convert a lab folder of an older hsm (lab.json) to the grid format");
  convert->add_option("dir", a->convert, "The lab folder")->required()->check(CLI::ExistingDirectory);
  cmd->require_subcommand(0, 1);
  const std::vector<CLI::Option*> grid_options = {tasks, models, lrs, seeds, steps, batch, size, examples, device};
  return {cmd, [a, grid_options, convert]() {
            if (convert->parsed()) {
              convert_old_lab(a->convert, [](const std::string& line) { std::cerr << "hsm lab: " << line << "\n"; });
              std::cout << "converted " << a->convert << "; hsm lab --out " << a->convert << " continues it\n";
              return 0;
            }
            if (a->out.empty()) throw std::invalid_argument("give the lab folder: hsm lab --out DIR");
            bool grid_given = false;
            for (CLI::Option* o : grid_options) grid_given = grid_given || o->count() > 0;
            // A lab folder continues with its own grid unless another one is given (then refused).
            LabGrid grid = a->grid;
            if (!grid_given && std::filesystem::exists(std::filesystem::path(a->out) / "sweep.json"))
              grid = Lab::stored_grid(a->out);
            Lab lab(a->out, grid);
            if (a->slurm) return write_grid_slurm(a->out);
            // The one launcher: `jobs` workers (`hsm sweep run DIR --point K`), the cores split
            // among them; a stop signal reaches each as SIGTERM and each keeps its checkpoint.
            const int jobs = a->jobs > 0 ? a->jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
            const int rc = a->table_only ? 0
                                         : run_sweep_local(
                                               a->out, jobs, own_exe(),
                                               [](const std::string& line) { std::cerr << "hsm lab: " << line << "\n"; },
                                               a->events);
            std::vector<std::string> warnings;
            const std::vector<LabCell> cells = lab.table(&warnings);
            for (const std::string& w : warnings) std::cerr << "hsm: warning: " << w << "\n";
            const std::string csv = Lab::table_csv(cells);
            if (!a->table_only) {
              // The exit status says whether every cell finished (issue 46): a stop, a failed or
              // stopped worker, leaves cells unfinished and the launcher names them.
              bool all = true;
              for (const LabCell& c : cells) all = all && c.finished();
              if (!all || rc != 0)
                throw std::runtime_error(std::string(rc == 130 ? "stopped" : "not every run finished") +
                                         "; " + unfinished_cells(cells) + "; hsm lab --out " + a->out +
                                         " continues the lab");
              // --table only reads; a training lab writes its table whole, never through a link.
              lab.write_table_csv(csv);
            }
            if (a->events) return 0;  // the events were the output
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
