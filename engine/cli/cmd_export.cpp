// `hsm export RUN_DIR --out DIR [--dtype f16|bf16|f32] [--best] [--force]`: a run folder for
// distribution (e.g. the bundled demo models): smaller weights, no optimizer state. DIR is new,
// empty or an earlier export unless --force (docs/safety.md).
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "hsm/export.h"
#include "hsm/run_folder.h"

namespace hsm::cli {

Command add_export_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("export", "Copy a run for distribution with F16/BF16 weights (no optimizer state)");
  struct Args {
    std::string run, out, dtype = "f16";
    bool best = false, force = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("run", a->run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--out", a->out, "Folder to write")->required();
  cmd->add_option("--dtype", a->dtype, "f16 (default), bf16 or f32")->check(CLI::IsMember({"f16", "bf16", "f32"}));
  cmd->add_flag("--force", a->force,
                "Replace an existing --out folder that is not an earlier export, with everything in it (never a "
                "folder holding the run or any run's checkpoints)");
  cmd->add_flag("--best", a->best, "Export the best validation checkpoint (best.safetensors) when there is one");
  return {cmd, [a]() {
            ExportOptions o;
            o.dtype = a->dtype == "f16" ? "F16" : a->dtype == "bf16" ? "BF16" : "F32";
            o.best = a->best;
            o.force = a->force;
            export_run(a->run, a->out, o);
            const auto bytes = std::filesystem::file_size(RunFolder(a->out).weights);
            std::cout << "exported " << a->run << " to " << a->out << " (" << o.dtype << " weights, "
                      << (bytes + 512 * 1024) / (1024 * 1024) << " MB)\n";
            return 0;
          }};
}

}  // namespace hsm::cli
