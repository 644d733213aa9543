// `hsm lab --out DIR [--task SPEC]... [--model NAME]... [--lr X]... [--seeds N] [--steps N]
// [--batch N] [--size tiny|as_is] [--json | --csv]`: the mixer lab (hsm/lab.h, docs/lab.md).
// A folder that holds a lab continues it (`hsm lab --out DIR` alone); --table prints its table
// without training.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "hsm/lab.h"

namespace hsm::cli {
namespace {

std::atomic<bool> g_lab_interrupted{false};
extern "C" void on_lab_interrupt(int) { g_lab_interrupted = true; }

}  // namespace

Command add_lab_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "lab", "Train and score a grid of synthetic tasks x models (best of a few learning rates per cell, as MAD does)");
  struct Args {
    std::string out;
    LabGrid grid;
    bool json = false, csv = false, table_only = false;
  };
  auto a = std::make_shared<Args>();
  a->grid = default_lab_grid();
  cmd->add_option("--out", a->out, "Lab folder (created; a folder holding a lab continues it)")->required();
  auto* tasks = cmd->add_option("--task", a->grid.tasks, "A task spec NAME[:key=value,...]; repeat for several "
                                                          "(default: every task at its lab difficulty)");
  auto* models = cmd->add_option("--model", a->grid.models,
                                 "A preset or config file; repeat for several (default: gpt, hsm_ab, hybrid_0_6, "
                                 "da_static_emb_qk, ex_he)");
  auto* lrs = cmd->add_option("--lr", a->grid.lrs, "A learning rate; repeat for several (default 0.001 and 0.003)");
  auto* seeds = cmd->add_option("--seeds", a->grid.seeds, "Training seeds per cell (default 1)")
                    ->check(CLI::Range(int64_t{1}, int64_t{100}));
  auto* steps = cmd->add_option("--steps", a->grid.steps, "Steps per run (default 600)")
                    ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  auto* batch = cmd->add_option("--batch", a->grid.batch, "Examples per step (default 32)")
                    ->check(CLI::Range(int64_t{1}, int64_t{65536}));
  auto* size = cmd->add_option("--size", a->grid.size, "tiny (d 64, up to 4 layers of each model) or as_is");
  auto* examples = cmd->add_option("--test-examples", a->grid.test_examples, "Fresh test examples per run (1280)")
                       ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  cmd->add_flag("--json", a->json, "Print the table as JSON");
  cmd->add_flag("--csv", a->csv, "Print the table as CSV (the folder always holds table.csv)");
  cmd->add_flag("--table", a->table_only, "Print the table of the lab in --out without training");
  const std::vector<CLI::Option*> grid_options = {tasks, models, lrs, seeds, steps, batch, size, examples};
  return {cmd, [a, grid_options]() {
            bool grid_given = false;
            for (CLI::Option* o : grid_options) grid_given = grid_given || o->count() > 0;
            // A lab folder continues with its own grid unless another one is given (then refused).
            LabGrid grid = a->grid;
            if (!grid_given && std::filesystem::exists(std::filesystem::path(a->out) / "lab.json"))
              grid = Lab::stored_grid(a->out);
            Lab lab(a->out, grid);
            if (!a->table_only) {
              g_lab_interrupted = false;
              auto previous = std::signal(SIGINT, on_lab_interrupt);
              try {
                lab.run([](const std::string& line) { std::cerr << line << "\n"; }, &g_lab_interrupted);
              } catch (...) {
                std::signal(SIGINT, previous);
                throw;
              }
              std::signal(SIGINT, previous);
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
