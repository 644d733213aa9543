// The task registry, a task's settings and the seeds of its splits (hsm/tasks.h).
#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>

#include "tasks/task_util.h"

namespace hsm {

namespace {

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

struct Entry {
  const char* name;
  std::unique_ptr<Task> (*make)();
};

// The one list of tasks: `hsm task list`, parse_task and the lab read it.
const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {"mqar", tasks::make_mqar},
      {"recall_at", tasks::make_recall_at},
      {"in_context_recall", tasks::make_in_context_recall},
      {"fuzzy_recall", tasks::make_fuzzy_recall},
      {"noisy_recall", tasks::make_noisy_recall},
      {"selective_copy", tasks::make_selective_copy},
      {"compress", tasks::make_compress},
      {"memorize", tasks::make_memorize},
      {"parity", tasks::make_parity},
      {"permutation", tasks::make_permutation},
      {"regbench", tasks::make_regbench},
  };
  return entries;
}

std::string names_text() {
  std::string s;
  for (const Entry& e : registry()) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

}  // namespace

uint64_t TaskRng::next() {
  state += 0x9e3779b97f4a7c15ULL;
  return mix64(state);
}

int64_t TaskRng::below(int64_t n) {
  // Rejection keeps it exactly uniform (a plain modulo favours small values).
  const auto un = static_cast<uint64_t>(n);
  const uint64_t limit = UINT64_MAX - UINT64_MAX % un;
  uint64_t x;
  do x = next();
  while (x >= limit);
  return static_cast<int64_t>(x % un);
}

double TaskRng::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

int64_t Task::get(const std::string& key) const {
  for (const TaskSetting& s : settings_)
    if (s.key == key) return s.value;
  throw TaskError(name() + ": no setting '" + key + "'");
}

void Task::set(const std::string& key, int64_t value) {
  for (TaskSetting& s : settings_)
    if (s.key == key) {
      if (value < s.min || value > s.max)
        throw TaskError(name() + ": " + key + "=" + std::to_string(value) + " is out of range; use " + key + " " +
                        std::to_string(s.min) + " to " + std::to_string(s.max));
      s.value = value;
      return;
    }
  std::string keys;
  for (const TaskSetting& s : settings_) keys += (keys.empty() ? "" : ", ") + s.key;
  throw TaskError(name() + ": no setting '" + key + "'; its settings are " + keys);
}

void Task::add_setting(std::string key, int64_t value, int64_t min, int64_t max, std::string help) {
  settings_.push_back({std::move(key), value, min, max, std::move(help)});
}

std::string Task::spec() const {
  std::string s = name();
  char sep = ':';
  for (const TaskSetting& t : settings_) {
    s += sep + t.key + "=" + std::to_string(t.value);
    sep = ',';
  }
  return s;
}

void Task::add_train_and_seed(int64_t train) {
  add_setting("train", train, 1, 10'000'000, "training examples (an epoch); validation and test examples are others");
  add_setting("seed", 1, 0, 2'147'483'647, "the data's seed: every example is a function of the settings and it");
}

TaskRng Task::rng_of(TaskSplit split, int64_t index) const {
  const auto seed = static_cast<uint64_t>(get("seed"));
  // Stream 4·index + split: injective in (split, index), so the splits never share a seed.
  const uint64_t stream = static_cast<uint64_t>(index) * 4 + static_cast<uint64_t>(split);
  return TaskRng(mix64(seed ^ 0x5851f42d4c957f2dULL) ^ mix64(stream + 0x2545f4914f6cdd1dULL));
}

TaskExample Task::example(TaskSplit split, int64_t index) const {
  TaskRng rng = rng_of(split, index);
  TaskExample ex;
  const auto T = static_cast<size_t>(context());
  ex.tokens.assign(T, 0);
  ex.targets.assign(T, 0);
  ex.mask.assign(T, 0);
  generate_split(rng, split, ex);
  tasks::fill_unmasked_targets(ex);
  return ex;
}

std::string Task::token_label(int32_t id) const {
  return id < 0 || id >= vocab_size() ? "#" + std::to_string(id) : std::to_string(id);
}

bool TaskExample::right_answer(size_t t, int32_t token) const {
  if (t < accepted.size() && !accepted[t].empty())
    return std::binary_search(accepted[t].begin(), accepted[t].end(), token);
  return token == targets[t];
}

bool TaskPrompt::right_at(size_t i) const {
  if (i >= predicted.size() || i >= answers.size()) return false;
  if (i < accepted.size() && !accepted[i].empty())
    return std::binary_search(accepted[i].begin(), accepted[i].end(), predicted[i]);
  return predicted[i] == targets[static_cast<size_t>(answers[i])];
}

int64_t TaskPrompt::right() const {
  int64_t n = 0;
  for (size_t i = 0; i < predicted.size() && i < answers.size(); ++i) n += right_at(i) ? 1 : 0;
  return n;
}

TaskPrompt task_prompt(const Task& task, int64_t index) {
  if (index < 0) throw TaskError(task.name() + ": example " + std::to_string(index) + " does not exist; use 0 or more");
  const TaskExample ex = task.example(TaskSplit::kTest, index);
  TaskPrompt p;
  p.task = task.spec();
  p.index = index;
  p.difficulty = ex.difficulty;
  size_t end = ex.tokens.size();
  for (size_t t = 0; t < ex.mask.size(); ++t)
    if (ex.mask[t]) {
      p.answers.push_back(static_cast<int64_t>(t));
      end = t + 1;
    }
  p.tokens.assign(ex.tokens.begin(), ex.tokens.begin() + static_cast<long>(end));
  p.targets.assign(ex.targets.begin(), ex.targets.begin() + static_cast<long>(end));
  for (int32_t id : p.tokens) p.labels.push_back(task.token_label(id));
  for (int64_t t : p.answers) p.answer_labels.push_back(task.token_label(p.targets[static_cast<size_t>(t)]));
  if (!ex.accepted.empty())
    for (int64_t t : p.answers) p.accepted.push_back(ex.accepted[static_cast<size_t>(t)]);
  return p;
}

std::vector<std::string> task_names() {
  std::vector<std::string> names;
  for (const Entry& e : registry()) names.emplace_back(e.name);
  return names;
}

std::unique_ptr<Task> make_task(const std::string& name) {
  for (const Entry& e : registry())
    if (name == e.name) return e.make();
  throw TaskError("unknown task '" + name + "'; use one of " + names_text() + " (hsm task list)");
}

std::unique_ptr<Task> parse_task(const std::string& spec) {
  const size_t colon = spec.find(':');
  auto task = make_task(spec.substr(0, colon));
  if (colon != std::string::npos) {
    std::stringstream items(spec.substr(colon + 1));
    std::string item;
    std::map<std::string, std::string> given;  // key -> its text, for a key given twice
    while (std::getline(items, item, ',')) {
      if (item.empty()) continue;
      const size_t eq = item.find('=');
      if (eq == std::string::npos)
        throw TaskError(task->name() + ": '" + item + "' is not key=value (e.g. " + task->name() + ":" +
                        task->settings().front().key + "=" + std::to_string(task->settings().front().value) + ")");
      const std::string key = item.substr(0, eq), text = item.substr(eq + 1);
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(text.c_str(), &end, 10);
      task->get(key);  // an unknown key is named before its value
      // A key given twice would keep its last value unsaid (issue 65): refused, naming both.
      if (const auto twice = given.find(key); twice != given.end())
        throw TaskError(task->name() + ": " + key + " is given twice (" + key + "=" + twice->second + " and " + key +
                        "=" + text + "); give it once");
      given[key] = text;
      if (text.empty() || *end != '\0' || errno == ERANGE)
        throw TaskError(task->name() + ": " + key + "='" + text + "' is not a whole number");
      task->set(key, v);
    }
  }
  task->check();
  return task;
}

namespace tasks {

std::vector<int32_t> distinct(TaskRng& rng, int32_t first, int32_t n, int64_t k) {
  // A partial Fisher-Yates shuffle of [first, first + n).
  std::vector<int32_t> pool(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) pool[static_cast<size_t>(i)] = first + i;
  for (int64_t i = 0; i < k; ++i) std::swap(pool[static_cast<size_t>(i)], pool[static_cast<size_t>(i + rng.below(n - i))]);
  pool.resize(static_cast<size_t>(k));
  return pool;
}

void refuse(const Task& task, const std::string& problem) { throw TaskError(task.name() + ": " + problem); }

std::string use_at_least(const Task& task, const std::string& key, int64_t least, const std::string& otherwise) {
  for (const TaskSetting& s : task.settings())
    if (s.key == key) {
      if (least <= s.max) return "use " + key + " " + std::to_string(std::max(least, s.min)) + " to " + std::to_string(s.max);
      return key + " is at most " + std::to_string(s.max) + ": " + otherwise;
    }
  throw TaskError(task.name() + ": no setting '" + key + "'");
}

std::string key_value_label(const Task& task, int32_t id, int32_t values_from, int32_t values_end) {
  if (id < 0 || id >= task.vocab_size()) return "#" + std::to_string(id);
  if (id < values_from) return "k" + std::to_string(id);
  if (id < values_end) return "v" + std::to_string(id - values_from);
  return std::to_string(id);
}

std::string blank_and_marker_label(const Task& task, int32_t id, const char* marker) {
  const auto V = static_cast<int32_t>(task.vocab_size());
  if (id < 0 || id >= V) return "#" + std::to_string(id);
  if (id == V - 2) return "_";
  if (id == V - 1) return marker;
  return "t" + std::to_string(id);
}

void fill_unmasked_targets(TaskExample& ex) {
  const size_t T = ex.tokens.size();
  for (size_t t = 0; t < T; ++t)
    if (!ex.mask[t]) ex.targets[t] = t + 1 < T ? ex.tokens[t + 1] : 0;
}

}  // namespace tasks
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

}  // namespace hsm
