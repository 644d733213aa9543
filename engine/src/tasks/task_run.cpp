// A task run's record (RUN/task.json) and its scoring on a fresh test set (hsm/task_run.h).
#include <filesystem>
#include <nlohmann/json.hpp>

#include "hsm/run_folder.h"
#include "io/io_util.h"
#include "model/torch_compat.h"
#include "tasks/task_data.h"
#include "train/checkpoint.h"

namespace fs = std::filesystem;

namespace hsm {

std::string task_file(const std::string& run_dir) { return (fs::path(run_dir) / "task.json").string(); }

std::string run_task(const std::string& run_dir) {
  const std::string file = task_file(run_dir);
  if (!fs::exists(file)) return "";
  const auto j = nlohmann::json::parse(read_text_file(file, "task record"), nullptr, false);
  if (!j.is_object() || !j.contains("task") || !j["task"].is_string())
    throw std::runtime_error(file + " is damaged: it names no task (\"task\": \"NAME:key=value,...\")");
  return j["task"].get<std::string>();
}

void adopt_task_shape(ModelConfig& model, const Task& task) {
  model.vocab_size = task.vocab_size();
  model.context = task.context();
}

void check_model_fits_task(const ModelConfig& model, const Task& task) {
  if (model.vocab_size != task.vocab_size())
    throw TaskError("vocab_size " + std::to_string(model.vocab_size) + " of the model does not fit task " +
                    task.name() + ", whose vocabulary is " + std::to_string(task.vocab_size()) + " tokens; set " +
                    "vocab_size " + std::to_string(task.vocab_size()) + " in the config, or vocab=" +
                    std::to_string(model.vocab_size) + " in the task");
  // Equal, not merely long enough: the model's windows are the task's (fixed_seq_qk takes its
  // fixed sequence, `context` tokens, from a validation example).
  if (model.context != task.context())
    throw TaskError("context " + std::to_string(model.context) + " of the model does not fit task " + task.name() +
                    "'s windows of " + std::to_string(task.context()) + " tokens; set context " +
                    std::to_string(task.context()) + " in the config, or context=" + std::to_string(model.context) +
                    " in the task");
}

void check_run_fits_task(const std::string& run_dir, const ModelConfig& model, const Task& task) {
  try {
    check_model_fits_task(model, task);
  } catch (const TaskError& e) {
    throw TaskError(task_file(run_dir) + " does not match the run's model (config.json): " + e.what() +
                    "; a task run's task.json must be the one it was trained on");
  }
}

TaskScore score_task_run(const std::string& run_dir, int64_t examples, const std::string& device_name) {
  const std::string spec = run_task(run_dir);
  if (spec.empty())
    throw std::invalid_argument("'" + run_dir + "' was not trained on a task (no task.json): score it with hsm eval");
  if (examples < 1) throw std::invalid_argument("--examples " + std::to_string(examples) + ": use 1 or more");
  auto task = parse_task(spec);
  const RunInfo info = read_run_info(run_dir);
  check_run_fits_task(run_dir, info.model, *task);
  TaskData data(std::move(task));
  torch::manual_seed(0);
  Gpt model(info.model);
  load_weights(model, RunPaths(run_dir).weights);
  const auto device = compat::parse_device(device_name);
  model->to(device);
  return data.score(model, TaskSplit::kTest, examples, 64, device);
}

}  // namespace hsm
