#pragma once
// What `hsm eval`, `hsm ablate` and `hsm compare` share: the run, the corpus and its windows,
// the device and threads, and a progress line on a terminal. All evaluate through Evaluator's
// one evaluation path, so the same flags mean the same windows in all; without --windows, the
// windows the run was trained on (EvalOptions::windows), so the loss is the one its curves show.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "hsm/model.h"
#include "hsm/evaluator.h"

namespace hsm::cli {

struct EvalArgs {
  std::string run, data, device = "auto", cache_dir;
  std::string run_b;  // `hsm compare`'s second run
  std::vector<std::string> runs;  // `hsm eval`'s runs (run is the first)
  EvalOptions options;
  int threads = 0;
  bool json = false;
};

// Registers run, --data, --split, --windows, --batch, --max-windows, --device, --threads,
// --cache-dir and --json on cmd; with two_runs, the runs as run_a and run_b (`hsm compare`).
void add_eval_args(CLI::App* cmd, EvalArgs& a, bool two_runs = false);
// The same without the run arguments (a command that takes its runs its own way).
void add_eval_options(CLI::App* cmd, EvalArgs& a);

// The windows several runs are scored on together: `given` when set (--windows), else the ones
// they were all trained on. Throws std::invalid_argument naming each run's windows when they
// were trained on different ones: scoring one on the other's would favour that one.
std::string common_windows(const std::vector<std::string>& runs,
                           const std::vector<std::shared_ptr<const Model>>& models, const std::string& given);
// How a loss's windows were chosen, for the output: "(--windows)" or "(as trained)".
std::string windows_source(const EvalArgs& a);

// Sets the threads, opens the run, and fills `data` (default: the run's training corpus) and
// `options` (the cache folder; on a terminal, a progress line on stderr).
struct EvalSetup {
  std::shared_ptr<const Model> model;
  std::string data;
  EvalOptions options;
  bool progress_line = false;
};
EvalSetup open_eval(const EvalArgs& a);
// Clears the progress line, if one was drawn.
void end_progress(const EvalSetup& s);

}  // namespace hsm::cli
