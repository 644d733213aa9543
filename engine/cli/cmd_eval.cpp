// `hsm eval RUN_DIR [RUN_DIR...] [--data PATH] [--split val|train|all] [--windows packed|story_start]
// [--skip-layers 0,2,4,6 | --skip-replaced] [--knock-out 3,2:1] [--set-ab 3:0.5:1.2] [--max-windows N]
// [--json]`: validation loss, top-1 accuracy and token count of a trained model on a corpus, on
// the windows it was trained on unless --windows says otherwise (so the loss is the one its
// curves show); every output names the windows and how many. With --knock-out / --set-ab, of the
// model edited in memory as the studio's what-if does (Model::edited: one path for both; the run
// folder is not written). With --per-token FILE, every predicted token's scores as JSON lines
// (docs/diagnostics.md §8), out of the same evaluation.
// Several runs: one table, every run scored on the same windows of the same corpus (the first
// run's, unless --data), read once. Runs with different tokenizers or contexts are refused (their
// losses are per token of different token streams, or over windows of different lengths), and so
// are runs trained on different windows unless --windows chooses the ones to score them all on.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "eval_args.h"
#include "output_file.h"
#include "hsm/evaluator.h"
#include "hsm/model.h"
#include "hsm/task_run.h"
#include "hsm/token_scores.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"
#include "hsm/files.h"

namespace hsm::cli {
namespace {

std::vector<std::string> knock_out_labels(const std::vector<KnockOut>& knock_outs) {
  std::vector<std::string> labels;
  for (const KnockOut& k : knock_outs) labels.push_back(knock_out_label(k));
  return labels;
}

std::vector<std::string> ab_labels(const std::vector<AbEdit>& edits) {
  std::vector<std::string> labels;
  for (const AbEdit& e : edits) labels.push_back(ab_edit_label(e));
  return labels;
}

// One JSON object per line and predicted token (docs/diagnostics.md §8), written whole: a
// temporary beside the file, then one rename (a link or a hard link at `path` is replaced,
// never written through).
void write_per_token(const std::string& path, const TokenScores& s, const Tokenizer& tokenizer) {
  std::string text;
  for (const TokenScore& t : s.tokens) {
    text += nlohmann::json{{"window", t.window},
                           {"position", t.position},
                           {"input", t.input},
                           {"target", t.target},
                           {"loss", t.loss},
                           {"prob", t.prob},
                           {"rank", t.rank},
                           {"distance", t.distance > 0 ? nlohmann::json(t.distance) : nlohmann::json()},
                           {"document", t.document},
                           {"train_count", t.train_count},
                           {"target_text", tokenizer.piece(t.target)}}
                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    text += '\n';
  }
  try {
    write_file_atomic(path, text, /*shared=*/true);  // a temporary of its own name, never <path>.tmp
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("--per-token: ") + e.what() + " (is the folder there and writable?)");
  }
}

// Several runs, one table: refuses what would make the table meaningless (see the top).
int print_several(const EvalArgs& a, const EvalSetup& setup) {
  std::vector<std::shared_ptr<const Model>> models{setup.model};
  for (size_t i = 1; i < a.runs.size(); ++i) {
    if (!run_task(a.runs[i]).empty())
      throw std::invalid_argument(a.runs[i] + " is a task run: evaluate task runs one at a time");
    models.push_back(Model::load(a.runs[i], a.device));
  }
  const Model& first = *models.front();
  for (size_t i = 1; i < models.size(); ++i) {
    const Model& m = *models[i];
    require_same_tokenizer(a.runs[0], first.tokenizer().hash(), first.config().vocab_size, a.runs[i],
                           m.tokenizer().hash(), m.config().vocab_size);
    if (m.config().context != first.config().context)
      throw std::invalid_argument(
          "the runs have different contexts (" + a.runs[0] + " " + std::to_string(first.config().context) + ", " +
          a.runs[i] + " " + std::to_string(m.config().context) +
          "): windows of different lengths are not the same windows; evaluate them one at a time");
  }
  EvalOptions options = setup.options;
  options.windows = common_windows(a.runs, models, options.windows);
  const EvalSet set = Evaluator(models.front()).read(setup.data, options);  // once, for every run
  std::vector<EvalResult> results;
  for (const auto& m : models) results.push_back(Evaluator(m).evaluate(set, options));
  end_progress(setup);
  const EvalResult& r0 = results.front();
  if (a.json) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < results.size(); ++i)
      rows.push_back({{"run", a.runs[i]},
                      {"trained_windows", models[i]->trained_windows()},
                      {"loss", results[i].loss},
                      {"accuracy", results[i].accuracy},
                      {"seconds", results[i].seconds},
                      {"skipped_layers", results[i].skipped_layers}});
    std::cout << nlohmann::json{{"data", setup.data},
                                {"split", r0.split},
                                {"windows", r0.windows},
                                {"window_count", r0.window_count},
                                {"tokens", r0.tokens},
                                {"documents", r0.documents},
                                {"unigram_loss", r0.unigram_loss},
                                {"runs", rows}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::printf(
      "%s split of %s, %s windows (%s), the same %lld windows and %lld tokens for every run; unigram "
      "baseline loss %.4f\n",
      r0.split.c_str(), setup.data.c_str(), r0.windows.c_str(), windows_source(a).c_str(),
      static_cast<long long>(r0.window_count), static_cast<long long>(r0.tokens), r0.unigram_loss);
  size_t width = 3;
  for (const std::string& run : a.runs) width = std::max(width, run.size());
  std::printf("%-*s %9s %9s %12s %8s\n", static_cast<int>(width), "run", "loss", "accuracy", "trained on", "seconds");
  for (size_t i = 0; i < results.size(); ++i)
    std::printf("%-*s %9.4f %9.4f %12s %8.1f\n", static_cast<int>(width), a.runs[i].c_str(), results[i].loss,
                results[i].accuracy, models[i]->trained_windows().c_str(), results[i].seconds);
  return 0;
}

}  // namespace

Command add_eval_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("eval", "Evaluate trained runs on a corpus (loss, accuracy), several in one table");
  struct Args : EvalArgs {
    std::string knock_out, set_ab, per_token;
    bool force = false;
    int64_t examples = 1280;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("runs", a->runs,
                  "Run folders written by `hsm train`; several: one table, all scored on the same windows")
      ->required()
      ->check(CLI::ExistingDirectory);
  add_eval_options(cmd, *a);
  cmd->add_option("--max-batches", a->options.max_batches, "Stop after this many batches (default: all)")
      ->check(whole_in(0, kMaxCount));
  cmd->add_option("--knock-out", a->knock_out,
                  "Replace these layers' mixer output (L) or single heads (L:H) by zero, e.g. 3 or 3,2:1 "
                  "(0-based; `hsm ablate` ranks them all)");
  cmd->add_option("--set-ab", a->set_ab,
                  "Set every a and b of layer L to A and B (layers whose mixer has a and b, e.g. hsm_ab), e.g. "
                  "3:0.5:1.2 or 3:0.5:1.2,4:0:1; the run folder is not changed (`hsm weights` shows the trained ones)");
  cmd->add_option("--skip-layers", a->options.skip_layers,
                  "Evaluate with these layers (0-based, e.g. 0,2,4,6) removed, without retraining (DA's skip)")
      ->delimiter(',')
      ->check(whole_in(0, 1 << 20));
  cmd->add_flag("--skip-replaced", a->options.skip_replaced,
                "Remove every non-attention layer (a DA hybrid's replaced layers)");
  cmd->add_option("--examples", a->examples,
                  "A task run (hsm train --task): how many fresh test examples to score (MAD's test sets: 1280)")
      ->check(whole_in(1, 1000000));
  cmd->add_option("--per-token", a->per_token,
                  "Also write every predicted token's loss, prob, rank, position and distance to this JSONL file "
                  "(docs/diagnostics.md §8); a new file unless --force");
  cmd->add_flag("--force", a->force, "Replace an existing --per-token file (never one in the run folder or the corpus)");
  return {cmd, [a]() {
            a->run = a->runs.front();
            const bool several = a->runs.size() > 1;
            if (several && (!a->knock_out.empty() || !a->set_ab.empty() || !a->per_token.empty()))
              throw std::invalid_argument(
                  "--knock-out, --set-ab and --per-token take one run: give one run folder with them");
            if (!run_task(a->run).empty()) {
              if (several) throw std::invalid_argument(a->run + " is a task run: evaluate task runs one at a time");
              return print_task_score(a->run, a->examples, a->device, a->json);
            }
            EvalSetup setup = open_eval(*a);
            if (several) return print_several(*a, setup);
            const EvalOptions& options = setup.options;
            const std::string& data = setup.data;
            if (!a->per_token.empty()) check_output_file("--per-token", a->per_token, {a->run, data}, a->force);
            WhatIf edits;
            if (!a->knock_out.empty()) edits.knock_out = parse_knock_outs(a->knock_out);
            if (!a->set_ab.empty()) edits.ab = parse_ab_edits(a->set_ab);
            const std::shared_ptr<const Model> model = edits.empty() ? setup.model : setup.model->edited(edits);
            EvalResult r;
            if (a->per_token.empty()) {
              r = Evaluator(model).evaluate(data, options);
            } else {  // the same evaluation, every token's scores kept
              const TokenScores scores = Evaluator(model).score_tokens(data, options);
              r = scores.result;
              write_per_token(a->per_token, scores, model->tokenizer());
            }
            end_progress(setup);
            if (a->json) {
              std::cout << nlohmann::json{{"run", a->run},
                                          {"data", data},
                                          {"split", r.split},
                                          {"windows", r.windows},
                                          {"window_count", r.window_count},
                                          {"trained_windows", model->trained_windows()},
                                          {"loss", r.loss},
                                          {"accuracy", r.accuracy},
                                          {"tokens", r.tokens},
                                          {"documents", r.documents},
                                          {"unigram_loss", r.unigram_loss},
                                          {"seconds", r.seconds},
                                          {"skipped_layers", r.skipped_layers},
                                          {"knock_out", knock_out_labels(r.knock_out)},
                                          {"set_ab", ab_labels(edits.ab)},
                                          {"edits", what_if_label(edits)}}
                               .dump(2)
                        << "\n";
            } else {
              std::printf(
                  "%s split of %s, %s windows (%s, %lld windows): loss %.4f, accuracy %.4f over %lld tokens (%lld "
                  "documents); unigram baseline loss %.4f; %.1f s\n",
                  r.split.c_str(), data.c_str(), r.windows.c_str(), windows_source(*a).c_str(),
                  static_cast<long long>(r.window_count), r.loss, r.accuracy, static_cast<long long>(r.tokens),
                  static_cast<long long>(r.documents), r.unigram_loss, r.seconds);
              if (!r.knock_out.empty()) {
                std::printf("knocked out:");
                for (const std::string& k : knock_out_labels(r.knock_out)) std::printf(" %s;", k.c_str());
                std::printf("\n");
              }
              if (!edits.ab.empty()) {
                std::printf("a and b set:");
                for (const std::string& e : ab_labels(edits.ab)) std::printf(" %s;", e.c_str());
                std::printf("\n");
              }
              if (!r.skipped_layers.empty()) {
                std::printf("layers skipped:");
                for (int64_t l : r.skipped_layers) std::printf(" %lld", static_cast<long long>(l));
                std::printf("\n");
              }
            }
            return 0;
          }};
}

}  // namespace hsm::cli
