#pragma once
// Synthetic tasks that tell token mixers apart (issue 38; docs/lab.md): multi-query associative
// recall (Zoology, Arora et al. 2023), recall at a set distance, the MAD suite (Poli et al.
// 2024), state tracking (parity and permutation composition, Merrill et al. 2024) and in-context
// learning of random regular languages (regbench, Akyürek et al. 2024). Each task is one file in
// src/tasks/ behind the registry below; an example is a function of the task's settings, a seed,
// a split and an index alone, so every split is reproducible and the splits share no seed. Plain C++ (no LibTorch): the CLI and the studio
// list, check and sample tasks without the engine.
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "hsm/config.h"

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
  // Per position, the key-query distance of the answer there (mqar: a window's answers each sit at
  // their own distance; regbench: the index of the answer's word, how many words came before it;
  // 0 where no answer). Empty: every answer is at `difficulty`.
  std::vector<int32_t> distance;
  // The difficulty (distance) of the answer at position t: distance[t], else difficulty.
  int64_t answer_difficulty(size_t t) const { return distance.empty() ? difficulty : distance[t]; }
  // Set-valued answers (regbench): per position, every token that counts as right there, ascending
  // (targets[t], the token the example drew, is one of them). Empty, or empty at t: targets[t] alone.
  std::vector<std::vector<int32_t>> accepted;
  // Whether predicting `token` at position t is right: in accepted[t] where that is given, else
  // token == targets[t]. The one rule every score (TaskData::score, TaskPrompt::right) applies.
  bool right_answer(size_t t, int32_t token) const;
  // What the example was drawn from, as JSON text, for a reader outside the engine to check it
  // against (regbench: its DFA); empty for tasks whose tokens say it all. `hsm task sample --json`
  // prints it as "drawn_from".
  std::string drawn_from;
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

  // How many distinct tokens can be an answer (mqar: its values, vocab - vocab/2; parity: 2;
  // permutation: the group's elements). Each task draws its answers uniformly from them, so a
  // guesser that knows which tokens can be answers but not which one is right scores
  // chance() = 1 / answer_tokens() (the lab's "at chance" test, docs/lab.md).
  virtual int64_t answer_tokens() const = 0;
  // What that guesser scores. A task with set-valued answers (TaskExample::accepted) overrides it:
  // regbench's is the mean over the answers of the first 1,000 test examples of
  // |accepted| / answer_tokens() (docs/lab.md, "regbench").
  virtual double chance() const { return 1.0 / static_cast<double>(answer_tokens()); }
  // True when a scored answer's difficulty is its key-query distance (recall_at, mqar): the score's
  // by_difficulty is then accuracy against distance, and a model's receptive field bounds it (the
  // lab report's distance figure). parity and permutation record their length instead.
  virtual bool answers_carry_distance() const { return false; }
  int64_t vocab_size() const { return get("vocab"); }
  int64_t context() const { return get("context"); }
  int64_t train_examples() const { return get("train"); }
  // "mqar:vocab=256,pairs=8,context=64,..." with every setting: what parse_task reads back.
  std::string spec() const;

  // Example `index` of `split` (deterministic from the settings, the `seed` one included; any
  // order, any thread).
  TaskExample example(TaskSplit split, int64_t index) const;

  // What token `id` stands for in this task, as the studio labels a task example: "k12" (key
  // 12), "v7" (value 7), "_" (a blank), "copy", "pad", ... ; a task without names for its
  // tokens shows the id. An id outside the vocabulary is "#id".
  virtual std::string token_label(int32_t id) const;

 protected:
  void add_setting(std::string key, int64_t value, int64_t min, int64_t max, std::string help);
  // The settings every task ends with: train (the training set's size) and seed (the data's).
  void add_train_and_seed(int64_t train);
  // The random stream example(split, index) draws from (a task that needs only part of an example,
  // as regbench's chance, draws the same numbers without building it).
  TaskRng rng_of(TaskSplit split, int64_t index) const;
  // Fills ex.tokens / targets / mask (context() long each) from rng. `training`: a train split
  // example (MAD varies some tasks between training and test, e.g. fuzzy recall's key sizes).
  virtual void generate(TaskRng& rng, bool training, TaskExample& ex) const = 0;
  // The same for a split: a task whose test split differs from its validation split overrides it
  // (parity and permutation test at four times their training length); the others generate.
  virtual void generate_split(TaskRng& rng, TaskSplit split, TaskExample& ex) const {
    generate(rng, split == TaskSplit::kTrain, ex);
  }

 private:
  std::vector<TaskSetting> settings_;
};

// A test example as a prompt for the studio's Diagnostics and Probe views (issue 38): its
// tokens up to and including its last answer position (the model is causal, so what it does
// at every answer is as in the whole window), with the task's labels and the right answers.
struct TaskPrompt {
  std::string task;                 // Task::spec()
  int64_t index = 0;                // example `index` of TaskSplit::kTest: never a training example
  std::vector<int32_t> tokens;      // the prompt
  std::vector<int32_t> targets;     // the example's targets at those positions
  std::vector<std::string> labels;  // Task::token_label of each token
  std::vector<int64_t> answers;     // the answer positions (mask 1), ascending
  std::vector<std::string> answer_labels;  // the right answer's label at each
  // Per answer, every token counted right there where more than the target is (regbench's legal
  // next symbols; TaskExample::accepted); empty: the target alone.
  std::vector<std::vector<int32_t>> accepted;
  // The model's most likely token at each answer position (Prober::task_prompt fills it).
  std::vector<int32_t> predicted;
  std::vector<std::string> predicted_labels;
  int64_t difficulty = -1;  // TaskExample::difficulty
  // Whether answer i's prediction is right (TaskExample::right_answer's rule: in accepted[i] where
  // that is given, else the target); false before predicted is filled.
  bool right_at(size_t i) const;
  // How many of the answers the model predicts right (0 before predicted is filled).
  int64_t right() const;
};
// Test example `index` (>= 0) of `task` as a prompt, nothing predicted yet; the whole window
// when the example has no answer.
TaskPrompt task_prompt(const Task& task, int64_t index);

// The tasks, in the order `hsm task list` shows them.
std::vector<std::string> task_names();
// A task with its default settings; throws TaskError for an unknown name.
std::unique_ptr<Task> make_task(const std::string& name);
// "NAME" or "NAME:key=value,key=value": the task with those settings, checked. Throws TaskError
// (unknown task or setting, a value that is not a whole number, out of range, settings that do
// not go together).
std::unique_ptr<Task> parse_task(const std::string& spec);

// A task run's score on fresh test examples (Evaluator::score_task, score_task_run).
struct TaskScore {
  double loss = NAN;               // mean cross-entropy over the answer tokens (nats)
  double answer_accuracy = NAN;    // answer tokens predicted exactly (top-1)
  double sequence_accuracy = NAN;  // examples whose every answer is right
  int64_t answers = 0, examples = 0;
  // An answer's difficulty (TaskExample::answer_difficulty) -> (right, answers): accuracy against
  // key-query distance for recall_at and mqar (Task::answers_carry_distance), against length for
  // parity and permutation.
  std::map<int64_t, std::pair<int64_t, int64_t>> by_difficulty;
};

// A preset is a shape, not a vocabulary: the model takes the task's vocabulary and context.
void adopt_task_shape(ModelConfig& model, const Task& task);
// Throws TaskError when a model cannot train on the task (another vocabulary or context): a
// config is never changed behind its author's back.
void check_model_fits_task(const ModelConfig& model, const Task& task);

}  // namespace hsm
