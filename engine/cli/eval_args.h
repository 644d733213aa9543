#pragma once
// What `hsm eval` and `hsm ablate` share: the run, the corpus and its windows, the device and
// threads, and a progress line on a terminal. Both evaluate through Session's one evaluation
// path, so the same flags mean the same windows in both.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "hsm/session.h"

namespace hsm::cli {

struct EvalArgs {
  std::string run, data, device = "auto", cache_dir;
  std::string run_b;  // `hsm compare`'s second run
  EvalOptions options;
  int threads = 0;
  bool json = false;
};

// Registers run, --data, --split, --windows, --batch, --max-windows, --device, --threads,
// --cache-dir and --json on cmd; with two_runs, the runs as run_a and run_b (`hsm compare`).
void add_eval_args(CLI::App* cmd, EvalArgs& a, bool two_runs = false);

// Sets the threads, opens the run, and fills `data` (default: the run's training corpus) and
// `options` (the cache folder; on a terminal, a progress line on stderr).
struct EvalSetup {
  std::unique_ptr<Session> session;
  std::string data;
  EvalOptions options;
  bool progress_line = false;
};
EvalSetup open_eval(const EvalArgs& a);
// Clears the progress line, if one was drawn.
void end_progress(const EvalSetup& s);

}  // namespace hsm::cli
