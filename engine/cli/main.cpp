// `hsm`: the command-line front end of the engine. Errors are caught here and printed as
// one line; the exit status is non-zero on any failure.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "commands.h"
#include "hsm/cpu_threads.h"
#include "hsm/errors.h"
#include "hsm/version.h"

namespace {

// Commands whose parallel regions follow each other closely (training, evaluation, benchmarks):
// they run with a short OpenMP spin (hsm/cpu_threads.h: start_before_libraries), which costs
// loading the program twice (a fraction of a second) and so is not worth it for the others.
// Plain C (strcmp): it runs before the C++ library's initialisers.
bool runs_parallel_work(int argc, char** argv) {
  if (argc < 2 || argv == nullptr || argv[1] == nullptr) return false;
  for (const char* c : {"train", "eval", "bench", "diagnose", "probe", "trace", "ablate", "compare", "lab", "sweep"})
    if (std::strcmp(argv[1], c) == 0) return true;
  return false;
}

// Before any library starts: the short spin for those commands, and for every command the
// address-space limit's check (OpenBLAS would hang under too low a one; start_before_libraries).
void before_libraries(int argc, char** argv, char** envp) {
  hsm::start_before_libraries(argv, envp, runs_parallel_work(argc, argv));
}
HSM_BEFORE_LIBRARIES(before_libraries);

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hsm: train, inspect and sample GPT-style models with Hierarchical Shift Mixing"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("hsm ") + HSM_VERSION);
  const std::vector<hsm::cli::Command> commands = {
      hsm::cli::add_presets_command(app),
      hsm::cli::add_inspect_command(app),
      hsm::cli::add_tokenizer_command(app),
      hsm::cli::add_train_command(app),
      hsm::cli::add_eval_command(app),
      hsm::cli::add_generate_command(app),
      hsm::cli::add_bench_command(app),
      hsm::cli::add_diagnose_command(app),
      hsm::cli::add_probe_command(app),
      hsm::cli::add_trace_command(app),
      hsm::cli::add_ablate_command(app),
      hsm::cli::add_compare_command(app),
      hsm::cli::add_weights_command(app),
      hsm::cli::add_export_command(app),
      hsm::cli::add_task_command(app),
      hsm::cli::add_lab_command(app),
      hsm::cli::add_sweep_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Out without the libraries' exit handlers, as for an error below (an OpenBLAS worker that
    // could not map its buffer under ulimit -v would keep a plain return from ever exiting).
    // Every refusal exits 1, a usage error too (CLI11's own codes, 105 for a value out of range,
    // 106 for a missing option..., told a script nothing more than "refused"); help exits 0.
    const int status = app.exit(e);
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(status == 0 ? 0 : 1);
  }
  try {
    for (const auto& c : commands)
      if (c.sub->parsed()) return c.run();
  } catch (const std::exception& e) {
    std::cerr << "hsm: error: " << hsm::error_text(e) << std::endl;
    // Out without the libraries' exit handlers: under an address-space limit an OpenBLAS
    // worker may be retrying a buffer map forever (blas_memory_alloc), and OpenBLAS's handler
    // waits for it, so a plain return printed the error and never exited (issue 34).
    std::cout.flush();
    std::_Exit(1);
  }
  return 1;
}
