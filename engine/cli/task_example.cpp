#include "task_example.h"

#include <cstdio>
#include <stdexcept>

namespace hsm::cli {

TaskPrompt task_example_prompt(const Model& model, const Prober& prober, const std::string& run, int64_t example,
                               std::string& prompt) {
  if (model.task() && example < 0)
    throw std::invalid_argument(run + " was trained on the task " + model.task()->name() +
                                " and reads no text: give --example N (a test example of its task)");
  if (!model.task() && example >= 0)
    throw std::invalid_argument(run + " was trained on a corpus, not a task: give --prompt TEXT");
  if (!model.task()) {
    if (prompt.empty()) throw std::invalid_argument("no prompt, or an empty one: give --prompt TEXT, the text to look at");
    return {};
  }
  TaskPrompt p = prober.task_prompt(example);
  prompt = "test example " + std::to_string(example) + " of " + p.task;
  return p;
}

nlohmann::json task_example_json(const TaskPrompt& p) {
  nlohmann::json answers = nlohmann::json::array();
  for (size_t i = 0; i < p.answers.size(); ++i) {
    const auto t = static_cast<size_t>(p.answers[i]);
    answers.push_back({{"position", t},
                       {"right", p.targets[t]},
                       {"right_label", p.answer_labels[i]},
                       {"predicted", p.predicted[i]},
                       {"predicted_label", p.predicted_labels[i]}});
  }
  return {{"task", p.task}, {"split", "test"}, {"index", p.index}, {"answers", answers}, {"right", p.right()}};
}

void print_task_answers(const TaskPrompt& p) {
  for (size_t i = 0; i < p.answers.size(); ++i)
    std::printf("answer at %lld: predicted %s, right %s\n", static_cast<long long>(p.answers[i]),
                p.predicted_labels[i].c_str(), p.answer_labels[i].c_str());
}

void note_prompt_cut(const Model& model, int64_t prompt_tokens, int64_t used, const char* which, int64_t max_tokens) {
  if (used >= prompt_tokens) return;
  const int64_t context = model.config().context;
  const std::string why = max_tokens > 0 && max_tokens <= context
                              ? "--max-tokens " + std::to_string(max_tokens)
                              : "the model's context of " + std::to_string(context) + " tokens";
  std::fprintf(stderr, "hsm: note: the prompt is %lld tokens; only its %s %lld were used (%s)\n",
               static_cast<long long>(prompt_tokens), which, static_cast<long long>(used), why.c_str());
}

}  // namespace hsm::cli
