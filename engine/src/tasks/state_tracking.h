#pragma once
// What the state-tracking tasks share (parity, permutation; Merrill, Petty & Sabharwal 2024,
// "The Illusion of State in State-Space Models"): a word of `length` group elements, and at every
// position the answer is the product of the word so far (the running state), so the loss is taken
// at every element. Training and validation words have `length` elements; test words
// `test_length` (four times as long by default): the length-generalisation split, on positions a
// model never trained on. The rest of the window is padding (no loss there).
#include <string>

#include "tasks/task_util.h"

namespace hsm::tasks {

class StateTrackingTask : public Task {
 protected:
  // vocab and context first, as every task; then the lengths, train and seed.
  void add_lengths(int64_t length, int64_t test_length) {
    add_setting("length", length, 1, 65536, "elements in a training (and validation) word");
    add_setting("test_length", test_length, 1, 65536,
                "elements in a test word: the length-generalisation split (4 x length by default)");
    add_train_and_seed(100'000);
  }
  void check_lengths() const {
    const int64_t T = get("context");
    for (const char* key : {"length", "test_length"})
      if (get(key) > T)
        refuse(*this, std::string(key) + "=" + std::to_string(get(key)) + " does not fit context " +
                          std::to_string(T) + "; use " + key + " 1 to " + std::to_string(T) + " or a longer context");
  }
  int64_t length_of(TaskSplit split) const { return get(split == TaskSplit::kTest ? "test_length" : "length"); }

  // A word of `n` elements at positions [0, n), its running products as the answers.
  virtual void generate_word(TaskRng& rng, int64_t n, TaskExample& ex) const = 0;

  void generate_split(TaskRng& rng, TaskSplit split, TaskExample& ex) const override {
    const int64_t n = length_of(split);
    generate_word(rng, n, ex);
    ex.difficulty = n;
  }
  void generate(TaskRng& rng, bool training, TaskExample& ex) const override {
    generate_split(rng, training ? TaskSplit::kTrain : TaskSplit::kValidation, ex);
  }
};

}  // namespace hsm::tasks
