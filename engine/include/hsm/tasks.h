#pragma once
// Synthetic tasks that tell token mixers apart (issue 38; docs/lab.md): multi-query associative
// recall (Zoology, Arora et al. 2023), recall at a set distance, and the MAD suite (Poli et al.
// 2024). Each task is one file in src/tasks/ behind the registry below; an example is a
// function of the task's settings, a seed, a split and an index alone, so every split is
// reproducible and the splits share no seed. Plain C++ (no LibTorch): the CLI and the studio
// list, check and sample tasks without the engine.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace hsm {

// A task or setting that cannot be used; one line naming the setting and its range, e.g.
// "mqar: pairs=40 needs context >= 4 x pairs (160); use pairs 1 to 16 at context 64".
struct TaskError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// One integer setting of a task (fractions are given in percent, so every setting is whole).
struct TaskSetting {
  std::string key;
  int64_t value = 0;
  int64_t min = 0, max = 0;
  std::string help;
};

// One window: tokens[t] is the input at position t, targets[t] the token to predict there and
// mask[t] 1 where that prediction is an answer the task scores (the loss is taken there only).
// Where mask[t] is 0, targets[t] is the next input token (or 0 past the end).
struct TaskExample {
  std::vector<int32_t> tokens, targets;
  std::vector<uint8_t> mask;
  int64_t difficulty = -1;  // recall_at: the distance this example asks about; -1: none
};

// Which examples: train (what training draws), validation (what training scores) and test
// (what `hsm eval` scores). Example i of split s comes from seed stream 4·i + s of the task's
// `seed` setting, so no two splits share an example seed (tests/engine/test_tasks.cpp checks it).
enum class TaskSplit { kTrain = 0, kValidation = 1, kTest = 2 };

// A deterministic random stream (splitmix64): the same numbers on every platform and standard
// library (std::uniform_int_distribution is not).
struct TaskRng {
  explicit TaskRng(uint64_t seed) : state(seed) {}
  uint64_t next();
  int64_t below(int64_t n);  // uniform in [0, n), n > 0
  double uniform();          // [0, 1)
  uint64_t state;
};

class Task {
 public:
  virtual ~Task() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;  // one line: what is asked, and after whom
  virtual std::string source() const = 0;        // where the definition is from

  // The settings with their current values (every task has vocab, context and train).
  const std::vector<TaskSetting>& settings() const { return settings_; }
  int64_t get(const std::string& key) const;
  // Sets one; throws TaskError for an unknown key or a value out of its own range (check()
  // then tests how the settings go together).
  void set(const std::string& key, int64_t value);
  // Throws TaskError when the settings do not go together (more pairs than the context holds).
  virtual void check() const {}

  int64_t vocab_size() const { return get("vocab"); }
  int64_t context() const { return get("context"); }
  int64_t train_examples() const { return get("train"); }
  // "mqar:vocab=256,pairs=8,context=64,..." with every setting: what parse_task reads back.
  std::string spec() const;

  // Example `index` of `split` (deterministic from the settings, the `seed` one included; any
  // order, any thread).
  TaskExample example(TaskSplit split, int64_t index) const;

 protected:
  void add_setting(std::string key, int64_t value, int64_t min, int64_t max, std::string help);
  // The settings every task ends with: train (the training set's size) and seed (the data's).
  void add_train_and_seed(int64_t train);
  // Fills ex.tokens / targets / mask (context() long each) from rng. `training`: a train split
  // example (MAD varies some tasks between training and test, e.g. fuzzy recall's key sizes).
  virtual void generate(TaskRng& rng, bool training, TaskExample& ex) const = 0;

 private:
  std::vector<TaskSetting> settings_;
};

// The tasks, in the order `hsm task list` shows them.
std::vector<std::string> task_names();
// A task with its default settings; throws TaskError for an unknown name.
std::unique_ptr<Task> make_task(const std::string& name);
// "NAME" or "NAME:key=value,key=value": the task with those settings, checked. Throws TaskError
// (unknown task or setting, a value that is not a whole number, out of range, settings that do
// not go together).
std::unique_ptr<Task> parse_task(const std::string& spec);

}  // namespace hsm
