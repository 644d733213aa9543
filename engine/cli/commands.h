#pragma once
// The `hsm` subcommands: each file registers one on the CLI11 app and runs it.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>

namespace hsm::cli {

// The bounds of the numeric options the evaluation and generation commands share, declared
// once (issue 34: a batch of 2^63 windows evaluated nothing and reported loss 0).
inline constexpr int64_t kMaxEvalBatch = 65536;          // windows per evaluation batch
inline constexpr int64_t kMaxCount = int64_t{1} << 40;   // windows, batches
inline constexpr int kMaxThreads = 1024;                 // CPU threads (0 = all cores)

// The --events flag's help (hsm lab, hsm sweep): the line format a reader parses (issue 65: it
// said "one JSON object a line", but each line starts with the prefix).
inline constexpr const char* kEventsHelp =
    "Print the workers' progress events on stdout, one a line: the text 'hsm-grid-event ' and then a JSON object "
    "({\"event\": \"grid\" | \"started\" | \"step\" | \"finished\", ...}; hsm/grid_workers.h)";

// A registered subcommand and what runs when it was chosen (returns the exit code).
struct Command {
  CLI::App* sub;
  std::function<int()> run;
};
Command add_presets_command(CLI::App& app);
Command add_inspect_command(CLI::App& app);
Command add_tokenizer_command(CLI::App& app);
Command add_train_command(CLI::App& app);
Command add_eval_command(CLI::App& app);
Command add_generate_command(CLI::App& app);
Command add_bench_command(CLI::App& app);
Command add_diagnose_command(CLI::App& app);
Command add_probe_command(CLI::App& app);
Command add_trace_command(CLI::App& app);
Command add_ablate_command(CLI::App& app);
Command add_compare_command(CLI::App& app);
Command add_weights_command(CLI::App& app);
Command add_export_command(CLI::App& app);
Command add_task_command(CLI::App& app);
Command add_lab_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);

// `hsm eval` of a task run: its answer and sequence accuracy on fresh test examples (cmd_task.cpp).
int print_task_score(const std::string& run, int64_t examples, const std::string& device, bool json);
// This program's path (/proc/self/exe), what a grid's launcher starts its workers with.
std::string own_exe();
// Writes DIR/sweep.sbatch, the Slurm array job of the grid in DIR (a lab's or a sweep's), and says so.
int write_grid_slurm(const std::string& dir);

}  // namespace hsm::cli
