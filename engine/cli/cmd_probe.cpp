// `hsm probe RUN_DIR --prompt TEXT [--top K] [--story-start] [--json]`: the logit lens (what
// the residual stream after the embedding and after each block predicts through the final
// LayerNorm and the tied output layer) and attention rollout (Abnar & Zuidema) of a prompt,
// tokenised as `hsm diagnose` tokenises it, or with --story-start as `hsm generate` feeds it
// (<|endoftext|> in front). docs/diagnostics.md, "Probe". A task run (docs/lab.md) takes
// `--example N`: test example N of its task, the lens ranking the right answer at each answer.
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "task_example.h"
#include "hsm/model.h"
#include "hsm/probe.h"
#include "hsm/prober.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"

namespace hsm::cli {
namespace {

nlohmann::json probe_json(const Probe& p) {
  nlohmann::json lens = nlohmann::json::array();
  for (const LensLayer& l : p.lens) {
    nlohmann::json top = nlohmann::json::array(), ranks = nlohmann::json::array();
    for (const auto& position : l.top) {
      nlohmann::json tokens = nlohmann::json::array();
      for (const LensToken& t : position) tokens.push_back({{"id", t.id}, {"piece", t.piece}, {"prob", t.prob}});
      top.push_back(tokens);
    }
    for (int64_t r : l.target_rank) ranks.push_back(r < 0 ? nlohmann::json() : nlohmann::json(r));
    lens.push_back({{"layer", l.layer}, {"top", top}, {"kl_to_final", l.kl_to_final}, {"target_rank", ranks}});
  }
  nlohmann::json rollout = nlohmann::json::array();
  for (size_t i = 0; i < p.rollout.size(); ++i) {
    const RolloutLayer& r = p.rollout[i];
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t row = 0; row < p.length; ++row)
      rows.push_back(std::vector<float>(r.matrix.begin() + row * p.length, r.matrix.begin() + (row + 1) * p.length));
    rollout.push_back({{"layer", r.layer}, {"matrix_kind", matrix_kind_name(p.matrix_kinds[i])}, {"matrix", rows}});
  }
  return {{"tokens", p.tokens}, {"token_ids", p.token_ids}, {"length", p.length}, {"lens", lens}, {"rollout", rollout}};
}

// A piece as one short cell: control characters shown as escapes.
std::string cell(const std::string& piece) {
  std::string s;
  for (char c : piece) s += c == '\n' ? std::string("\\n") : c == '\t' ? std::string("\\t") : std::string(1, c);
  return s.size() > 10 ? s.substr(0, 10) : s;
}

void print_lens(const Probe& p) {
  std::printf("%lld tokens:", static_cast<long long>(p.length));
  for (const auto& t : p.tokens) std::printf(" [%s]", t.c_str());
  std::printf("\n\nlogit lens: each layer's top next token per position (prob), mean KL to the final layer, "
              "mean rank of the actual next token\n");
  for (const LensLayer& l : p.lens) {
    double kl = 0, rank = 0;
    int64_t ranked = 0;
    for (double v : l.kl_to_final) kl += v;
    for (int64_t r : l.target_rank)
      if (r > 0) rank += static_cast<double>(r), ++ranked;
    std::printf("%-9s KL %7.3f  rank %8.1f |", l.layer < 0 ? "embedding" : ("layer " + std::to_string(l.layer)).c_str(),
                kl / static_cast<double>(p.length), ranked ? rank / static_cast<double>(ranked) : 0.0);
    for (const auto& position : l.top) std::printf(" %s(%.2f)", cell(position[0].piece).c_str(), position[0].prob);
    std::printf("\n");
  }
}

void print_rollout(const Probe& p) {
  if (p.rollout.empty()) return;
  const RolloutLayer& last = p.rollout.back();
  const int64_t L = p.length;
  std::printf("\nattention rollout after layer %d: what the last position draws on (R[L-1, j])\n", last.layer);
  for (int64_t j = 0; j < L; ++j)
    std::printf("  %3lld %-12s %.4f\n", static_cast<long long>(j), cell(p.tokens[static_cast<size_t>(j)]).c_str(),
                last.matrix[static_cast<size_t>((L - 1) * L + j)]);
  std::printf("matrices per layer:");
  for (size_t i = 0; i < p.matrix_kinds.size(); ++i) std::printf(" %zu:%s", i, matrix_kind_name(p.matrix_kinds[i]));
  std::printf(" (--json prints every layer's R)\n");
}

}  // namespace

Command add_probe_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("probe", "Logit lens and attention rollout of a prompt");
  struct Args {
    std::string run, prompt, device = "auto";
    int64_t top = 5, max_tokens = 0, example = -1, step = -1;
    int threads = 0;
    bool json = false, story_start = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("run", a->run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  auto* prompt =
      cmd->add_option("--prompt", a->prompt, "Text to probe (tokenised as `hsm diagnose` does: its first tokens up to the context, a note when cut)");
  cmd->add_option("--example", a->example,
                  "A task run's test example N as the prompt (up to its last answer; docs/lab.md)")
      ->check(whole_in(0))
      ->excludes(prompt);
  cmd->add_option("--top", a->top, "Next tokens per position and layer (default 5)")->check(whole_in(1, 65536));
  cmd->add_option("--max-tokens", a->max_tokens, "Use at most this many prompt tokens")->check(whole_in(1));
  cmd->add_option("--device", a->device, "cpu, cuda, cuda:N or auto");
  add_threads_option(cmd, a->threads);
  cmd->add_option("--step", a->step,
                  "The model as it was at step S: a snapshot (hsm train --snapshot-every/--snapshot-log) or a kept "
                  "checkpoint (default: the newest)")
      ->check(whole_in(0));
  cmd->add_flag("--story-start", a->story_start,
                "Put <|endoftext|> in front, as `hsm generate` does: the last lens entry's top token at the last "
                "position is then generate's first greedy token (default: the tokens as `hsm diagnose` takes them)");
  cmd->add_flag("--json", a->json, "Print JSON: lens (L+1 entries) and rollout (L matrices)");
  return {cmd, [a]() {
            set_cpu_threads(a->threads);
            const std::shared_ptr<const Model> model = Model::load(a->run, a->device, a->step);
            const Prober prober(model);
            const TaskPrompt example = task_example_prompt(*model, prober, a->run, a->example, a->prompt);
            Probe p;
            if (model->task()) {
              p = prober.probe_tokens(example.tokens, a->top, example.targets);
            } else if (a->story_start) {  // as Generator::run starts: <|endoftext|>, then the prompt's last tokens
              std::vector<int32_t> ids = {model->tokenizer().end_of_text_id()};
              for (int32_t id : model->tokenizer().encode(a->prompt)) ids.push_back(id);
              const auto whole = static_cast<int64_t>(ids.size());
              if (a->max_tokens > 0 && static_cast<int64_t>(ids.size()) > a->max_tokens) ids.resize(a->max_tokens);
              p = prober.probe_tokens(ids, a->top);
              // --max-tokens keeps the first tokens, the context then the last of those.
              if (p.length < static_cast<int64_t>(ids.size()))
                note_prompt_cut(*model, whole, p.length, "last", 0);
              else
                note_prompt_cut(*model, whole, p.length, "first", a->max_tokens);
            } else {
              p = prober.probe(a->prompt, a->top, a->max_tokens);
              note_prompt_cut(*model, static_cast<int64_t>(model->tokenizer().encode(a->prompt).size()), p.length,
                              "first", a->max_tokens);
            }
            if (a->json) {
              nlohmann::json out = probe_json(p);
              if (model->task()) out["task_example"] = task_example_json(example);
              std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
            } else {
              print_lens(p);
              print_rollout(p);
              print_task_answers(example);
            }
            return 0;
          }};
}

}  // namespace hsm::cli
