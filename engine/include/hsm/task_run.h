#pragma once
// Runs trained on a synthetic task (hsm/tasks.h): what the run folder records of its task, and
// scoring one on a fresh test set (`hsm eval RUN` on a task run, the lab). Plain C++.
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "hsm/config.h"
#include "hsm/tasks.h"

namespace hsm {

struct TaskScore {
  double loss = NAN;               // mean cross-entropy over the answer tokens (nats)
  double answer_accuracy = NAN;    // answer tokens predicted exactly (top-1)
  double sequence_accuracy = NAN;  // examples whose every answer is right
  int64_t answers = 0, examples = 0;
  // recall_at: distance -> (right, answers), for accuracy against distance.
  std::map<int64_t, std::pair<int64_t, int64_t>> by_difficulty;
};

// RUN/task.json names the task a run trains on; a corpus run has none.
std::string task_file(const std::string& run_dir);
// The run's task spec (Task::spec()), "" for a corpus run.
std::string run_task(const std::string& run_dir);

// A preset is a shape, not a vocabulary: the model takes the task's vocabulary and context.
void adopt_task_shape(ModelConfig& model, const Task& task);
// Throws TaskError when a model cannot train on the task (another vocabulary or context): a
// config is never changed behind its author's back.
void check_model_fits_task(const ModelConfig& model, const Task& task);

// Scores the run's latest weights on `examples` fresh test examples of its task (test seeds:
// none is a training or validation example). Throws for a folder that is not a task run.
TaskScore score_task_run(const std::string& run_dir, int64_t examples, const std::string& device = "cpu");

}  // namespace hsm
