// `hsm task list [--json]` and `hsm task sample NAME[:key=value,...] [--n N] [--seed S]
// [--split train|validation|test] [--json]`: the synthetic tasks (hsm/tasks.h) and examples of
// one, so anyone can check the data against the papers' definitions (docs/lab.md). Also the
// scoring of a task run that `hsm eval` hands over.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "hsm/task_run.h"
#include "hsm/tasks.h"

namespace hsm::cli {
namespace {

// The most tokens `hsm task sample` makes in one call (--n x the task's context): 16M, about
// 150 MB of JSON.
constexpr int64_t kMaxSampleTokens = int64_t{1} << 24;

nlohmann::json task_json(const Task& t) {
  nlohmann::json settings = nlohmann::json::array();
  for (const TaskSetting& s : t.settings())
    settings.push_back({{"key", s.key}, {"default", s.value}, {"min", s.min}, {"max", s.max}, {"help", s.help}});
  return {{"name", t.name()}, {"description", t.description()}, {"source", t.source()},
          {"spec", t.spec()}, {"answer_tokens", t.answer_tokens()}, {"chance", t.chance()},
          {"settings", settings}};
}

TaskSplit split_named(const std::string& name) {
  if (name == "train") return TaskSplit::kTrain;
  if (name == "validation") return TaskSplit::kValidation;
  if (name == "test") return TaskSplit::kTest;
  throw std::invalid_argument("--split " + name + ": use train, validation or test");
}

}  // namespace

int print_task_score(const std::string& run, int64_t examples, const std::string& device, bool json) {
  const TaskScore s = score_task_run(run, examples, device);
  if (json) {
    nlohmann::json by = nlohmann::json::object();
    for (const auto& [d, c] : s.by_difficulty)
      by[std::to_string(d)] = {{"answer_accuracy", static_cast<double>(c.first) / static_cast<double>(c.second)},
                               {"answers", c.second}};
    nlohmann::json j = {{"run", run},          {"task", run_task(run)},   {"split", "test"},
                        {"loss", s.loss},      {"answer_accuracy", s.answer_accuracy},
                        {"sequence_accuracy", s.sequence_accuracy}, {"answers", s.answers},
                        {"examples", s.examples}};
    if (!s.by_difficulty.empty()) j["by_distance"] = by;
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("%s on %lld fresh test examples of %s: answer accuracy %.4f, sequence accuracy %.4f, loss %.4f "
                "over %lld answers\n",
                run.c_str(), static_cast<long long>(s.examples), run_task(run).c_str(), s.answer_accuracy,
                s.sequence_accuracy, s.loss, static_cast<long long>(s.answers));
  }
  return 0;
}

Command add_task_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("task", "List the synthetic tasks (hsm train --task) and print examples of one");
  cmd->require_subcommand(1);
  struct Args {
    bool json = false;
    std::string spec, split = "train";
    int64_t n = 4, seed = -1, first = 0;
  };
  auto a = std::make_shared<Args>();
  auto* list = cmd->add_subcommand("list", "The tasks, their settings and where their definitions are from");
  list->add_flag("--json", a->json, "As JSON");
  auto* sample = cmd->add_subcommand("sample", "Examples of a task: tokens, targets (the token to predict at each "
                                                "position) and the answer mask");
  sample->add_option("task", a->spec, "NAME or NAME:key=value,... (hsm task list)")->required();
  sample->add_option("--n", a->n, "How many examples")->check(whole_in(1, 100000));
  sample->add_option("--seed", a->seed, "The data seed (the task's seed setting)")
      ->check(whole_in(0, 2147483647));
  sample->add_option("--first", a->first, "Index of the first example")->check(whole_in(0, int64_t{1} << 40));
  sample->add_option("--split", a->split, "train, validation or test (disjoint seeds)");
  sample->add_flag("--json", a->json,
                   "As JSON: {\"examples\": [{\"tokens\", \"targets\", \"mask\"}]}; regbench adds \"accepted\" (every "
                   "right answer per position) and \"drawn_from\" (the example's DFA)");
  return {cmd, [a, list]() {
            if (list->parsed()) {
              nlohmann::json tasks = nlohmann::json::array();
              for (const std::string& name : task_names()) {
                const auto t = make_task(name);
                if (a->json) {
                  tasks.push_back(task_json(*t));
                } else {
                  std::printf("%-18s %s\n%-18s   %s\n%-18s   default: %s\n", name.c_str(), t->description().c_str(),
                              "", t->source().c_str(), "", t->spec().c_str());
                  const auto tokens = static_cast<long long>(t->answer_tokens());
                  if (t->chance() == 1.0 / static_cast<double>(tokens))
                    std::printf("%-18s   chance: 1/%lld = %.4g (answers drawn from %lld tokens)\n", "", tokens,
                                t->chance(), tokens);
                  else  // set-valued answers (regbench): a uniform guess over the answer tokens
                    std::printf("%-18s   chance: %.4g (a uniform guess over %lld tokens, right when in the answer's "
                                "set: mean |set| / %lld)\n",
                                "", t->chance(), tokens, tokens);
                }
              }
              if (a->json) std::cout << nlohmann::json{{"tasks", tasks}}.dump(2) << "\n";
              return 0;
            }
            auto task = parse_task(a->spec);
            if (a->seed >= 0) task->set("seed", a->seed);
            const TaskSplit split = split_named(a->split);
            // Checked before anything is made (issue 46: 100,000 examples of 32,768 tokens were
            // built as one JSON value and ended in an uncaught std::bad_alloc).
            if (a->n > kMaxSampleTokens / task->context())
              throw std::invalid_argument(
                  "--n " + std::to_string(a->n) + " examples of " + std::to_string(task->context()) +
                  " tokens each is more than the " + std::to_string(kMaxSampleTokens) +
                  " tokens `hsm task sample` prints at once: give --n " +
                  std::to_string(std::max<int64_t>(1, kMaxSampleTokens / task->context())) + " or fewer (and --first to go on)");
            // --json: one example at a time, as it is made (the whole array is never held).
            if (a->json) std::cout << "{\"task\":" << nlohmann::json(task->spec()).dump() << ",\"examples\":[";
            for (int64_t i = a->first; i < a->first + a->n; ++i) {
              const TaskExample ex = task->example(split, i);
              nlohmann::json j = {{"tokens", ex.tokens}, {"targets", ex.targets}, {"mask", ex.mask}};
              if (ex.difficulty >= 0) j["distance"] = ex.difficulty;
              if (!ex.distance.empty()) j["distances"] = ex.distance;  // per position (mqar, regbench)
              if (!ex.accepted.empty()) j["accepted"] = ex.accepted;   // set-valued answers (regbench)
              if (!ex.drawn_from.empty()) j["drawn_from"] = nlohmann::json::parse(ex.drawn_from);
              if (a->json) {
                std::cout << (i > a->first ? "," : "") << j.dump();
                continue;
              }
              std::printf("example %lld:\n  tokens ", static_cast<long long>(i));
              for (int32_t t : ex.tokens) std::printf(" %d", t);
              std::printf("\n  answers");
              for (size_t t = 0; t < ex.tokens.size(); ++t)
                if (ex.mask[t]) {
                  std::printf(" @%zu->%d", t, ex.targets[t]);
                  if (t < ex.accepted.size() && !ex.accepted[t].empty()) {  // every right answer there
                    std::printf("{");
                    for (size_t k = 0; k < ex.accepted[t].size(); ++k) std::printf(k ? ",%d" : "%d", ex.accepted[t][k]);
                    std::printf("}");
                  }
                }
              std::printf("\n");
              if (!ex.drawn_from.empty()) std::printf("  drawn from %s\n", ex.drawn_from.c_str());
            }
            if (a->json) std::cout << "]}\n";
            return 0;
          }};
}

}  // namespace hsm::cli
