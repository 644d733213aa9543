#pragma once
// A task as the trainer's data source (beside the corpus one): batches of examples, the loss
// on answer positions only, and the answer and sequence accuracies (issue 38; docs/lab.md).
#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hsm/progress.h"
#include "hsm/tasks.h"
#include "model/model.h"

namespace hsm {

struct TaskBatch {
  torch::Tensor x, y;  // [B, T] int64: inputs, targets
  torch::Tensor rows;  // [A] int64: the answer positions, as rows of the flattened [B·T]
};

class TaskData {
 public:
  explicit TaskData(std::unique_ptr<Task> task) : task_(std::move(task)) {}
  const Task& task() const { return *task_; }

  // Examples `indices` of `split` as one batch on `device`.
  TaskBatch batch(TaskSplit split, const std::vector<int64_t>& indices, const torch::Device& device,
                  std::vector<TaskExample>* examples = nullptr) const;
  // Mean cross-entropy over the answer positions (the others carry no loss): only their rows
  // of the hidden states reach the tied output layer.
  static torch::Tensor loss(Gpt& model, const TaskBatch& b);
  // Scores examples [0, count) of `split` in batches of `batch_size` (eval mode, no gradients;
  // restores the training flag). The result does not depend on the batch size. An answer is right
  // by TaskExample::right_answer: its target, or any token of its set where the task gives one.
  TaskScore score(Gpt& model, TaskSplit split, int64_t count, int64_t batch_size, const torch::Device& device,
                  const CancelFlag* cancel = nullptr) const;

 private:
  std::unique_ptr<Task> task_;
};

}  // namespace hsm
