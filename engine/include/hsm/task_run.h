#pragma once
// Runs trained on a synthetic task (hsm/tasks.h): scoring one on a fresh test set (`hsm task
// score`, `hsm eval RUN` on a task run, the lab). What the run folder records of its task is
// RunFolder's (run_task, check_run_fits_task: hsm/run_folder.h). Plain C++.
#include <cstdint>
#include <string>

#include "hsm/config.h"
#include "hsm/run_folder.h"
#include "hsm/tasks.h"

namespace hsm {

// Scores the run's latest weights on `examples` fresh test examples of its task (test seeds:
// none is a training or validation example): Evaluator(Model::load(run_dir, device)).score_task.
// Throws for a folder that is not a task run.
TaskScore score_task_run(const std::string& run_dir, int64_t examples, const std::string& device = "cpu");

}  // namespace hsm
