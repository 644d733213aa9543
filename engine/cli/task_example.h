#pragma once
// What `hsm diagnose` and `hsm probe` share for a run trained on a synthetic task (docs/lab.md,
// "A task run in the other views"): its prompt is test example N of its task (--example N), not
// text; and how the example and the model's answers are printed.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "hsm/model.h"
#include "hsm/prober.h"

namespace hsm::cli {

// The prompt of `run`: for a task run, test example `example` of its task with the model's
// answers (returned; `prompt` becomes its description), refused without --example; for a corpus
// run, nothing (the text `prompt` is used), refused with --example or without a prompt. Each
// refusal is one line naming the option to give.
TaskPrompt task_example_prompt(const Model& model, const Prober& prober, const std::string& run, int64_t example,
                               std::string& prompt);
// The example as the studio's exports write it (task, split, index, answers with right and predicted).
nlohmann::json task_example_json(const TaskPrompt& p);
// One line per answer: "answer at 16: predicted v4, right v25".
void print_task_answers(const TaskPrompt& p);
// A note on stderr when a prompt of `prompt_tokens` tokens was looked at as `used` of them (its
// `which`, "first" or "last"), naming why: the model's context or --max-tokens (issue 65: nothing
// of the user's is cut without a word).
void note_prompt_cut(const Model& model, int64_t prompt_tokens, int64_t used, const char* which, int64_t max_tokens);

}  // namespace hsm::cli
