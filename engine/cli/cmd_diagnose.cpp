// `hsm diagnose RUN_DIR --prompt TEXT [--layer L] [--json]`: attention / effective mixing
// matrices of every layer and head for a prompt and DA §4.4's indicators (docs/diagnostics.md).
// A task run (docs/lab.md) takes `--example N`: test example N of its task, tokens by its labels.
// Text: a table per layer and head; --json adds the L×L matrices. Both name the run and the
// prompt, so a saved output says what it is a diagnosis of.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "task_example.h"
#include "hsm/diagnostics.h"
#include "hsm/diagnostics_log.h"
#include "hsm/files.h"
#include "hsm/model.h"
#include "hsm/prober.h"
#include "hsm/run_folder.h"
#include "hsm/tokenizer.h"
#include "hsm/trainer.h"

namespace hsm::cli {
namespace {

// The writer diagnostics.jsonl uses too (hsm/diagnostics_log.h): one format for both.
nlohmann::json indicators_json(const Indicators& i) { return nlohmann::json::parse(indicators_to_json(i)); }

nlohmann::json matrix_json(const std::vector<float>& m, int64_t L) {
  nlohmann::json rows = nlohmann::json::array();
  for (int64_t i = 0; i < L; ++i) rows.push_back(std::vector<float>(m.begin() + i * L, m.begin() + (i + 1) * L));
  return rows;
}

nlohmann::json diagnosis_json(const std::string& run, const std::string& prompt, const Diagnosis& d,
                              const std::vector<const LayerDiagnostics*>& layers) {
  nlohmann::json out_layers = nlohmann::json::array();
  for (const LayerDiagnostics* l : layers) {
    nlohmann::json heads = nlohmann::json::array();
    for (const auto& h : l->heads)
      heads.push_back({{"head", h.head},
                       {"shift", h.shift},
                       {"knocked_out", h.knocked_out},
                       {"matrix", matrix_json(h.matrix, d.length)},
                       {"indicators", indicators_json(h.indicators)}});
    out_layers.push_back({{"layer", l->layer},
                          {"mixer", l->mixer},
                          {"matrix_kind", matrix_kind_name(l->kind)},
                          {"knocked_out", l->knocked_out},
                          {"indicators", indicators_json(l->indicators)},
                          {"normalised", indicators_json(l->normalised)},
                          {"heads", heads}});
  }
  return {{"run", run},         {"prompt", prompt},    {"tokens", d.tokens}, {"token_ids", d.token_ids},
          {"length", d.length}, {"layers", out_layers}};
}

void print_row(const char* layer, const char* mixer, const char* kind, const std::string& head,
               const std::string& shift, const Indicators& i) {
  std::printf("%-5s %-13s %-9s %-5s %-5s %8.3f %7.3f %7.4f %6.3f %6.3f %6.3f %6.3f %6.3f\n", layer, mixer, kind,
              head.c_str(), shift.c_str(), i.entropy, i.conc, i.headdiv, i.sink, i.locfoc[0], i.locfoc[1], i.locfoc[2],
              i.locfoc[3]);
}

void print_table(const std::string& run, const std::string& prompt, const Diagnosis& d,
                 const std::vector<const LayerDiagnostics*>& layers) {
  std::printf("run %s, prompt \"%s\"\n", run.c_str(), prompt.c_str());
  std::printf("%lld tokens:", static_cast<long long>(d.length));
  for (const auto& t : d.tokens) std::printf(" [%s]", t.c_str());
  std::printf("\n\n%-5s %-13s %-9s %-5s %-5s %8s %7s %7s %6s %6s %6s %6s %6s\n", "layer", "mixer", "matrix", "head",
              "shift", "entropy", "conc", "headdiv", "sink", "loc0", "loc1", "loc2", "loc3");
  for (const LayerDiagnostics* l : layers) {
    const std::string layer = std::to_string(l->layer);
    // A knocked-out layer or head (a what-if folder, `--knock-out` in `hsm eval`) is marked "x".
    const std::string mixer = l->knocked_out ? l->mixer + " x" : l->mixer;
    print_row(layer.c_str(), mixer.c_str(), matrix_kind_name(l->kind), "mean", "", l->indicators);
    for (const auto& h : l->heads)
      print_row("", "", "", std::to_string(h.head) + (h.knocked_out && !l->knocked_out ? " x" : ""),
                h.shift < 0 ? "-" : std::to_string(h.shift), h.indicators);
  }
  std::printf("\nnormalised across layers (DA footnote 3; 0..1):\n%-5s %8s %7s %7s\n", "layer", "entropy", "conc",
              "headdiv");
  for (const LayerDiagnostics* l : layers)
    std::printf("%-5d %8.3f %7.3f %7.3f\n", l->layer, l->normalised.entropy, l->normalised.conc, l->normalised.headdiv);
  std::printf(
      "\nattention = softmax weights; linear = exact mixing map, jacobian = |dy_i/dx_k|, both with rows "
      "|M|/sum|M|\n");
  for (const LayerDiagnostics* l : layers) {
    bool any = l->knocked_out;
    for (const auto& h : l->heads) any = any || h.knocked_out;
    if (any) {
      std::printf("x = knocked out (what-if): its output is replaced by zero; its row shows what it would mix\n");
      break;
    }
  }
}

// `--record`: the checkpoint's record among the run's others, in step order, written whole
// (temp file + rename) under the run's lock, so a trainer of the folder is never raced.
int record_diagnostics(const std::string& run, const Model& model, const Prober& prober, const std::string& prompt) {
  const RunInfo info = read_run_info(run);
  const std::string text = prompt.empty() ? info.training.probe_text : prompt;
  if (text.empty())
    throw std::invalid_argument("--record: the run's probe text is empty; give the text with --prompt");
  if (model.task()) throw std::invalid_argument("--record: a task run reads no text; it records no diagnostics over time");
  const RunFolder folder(run);
  const bool had_lock = std::filesystem::exists(folder.lock);
  std::vector<DiagnosticsRecord> records;
  size_t layers = 0;
  {
    const RunLock lock(run);
    for (DiagnosticsRecord& r : read_diagnostics_log(run))
      if (r.step != info.step) records.push_back(std::move(r));
    records.push_back(prober.diagnostics_record(text, info.step));
    layers = records.back().layers.size();
    std::stable_sort(records.begin(), records.end(),
                     [](const DiagnosticsRecord& x, const DiagnosticsRecord& y) { return x.step < y.step; });
    std::string lines;
    for (const DiagnosticsRecord& r : records) lines += diagnostics_record_to_json_line(r) + "\n";
    write_file_atomic(folder.diagnostics, lines);
  }
  if (!had_lock) std::filesystem::remove(folder.lock);  // a folder that had none (a bundled model's) keeps none
  std::printf("%s: recorded the diagnosis of \"%s\" at step %lld (%zu layers); %zu record(s) in %s\n", run.c_str(),
              text.c_str(), static_cast<long long>(info.step), layers, records.size(),
              folder.diagnostics.c_str());
  return 0;
}

}  // namespace

Command add_diagnose_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("diagnose", "Attention / mixing matrices and indicators of a prompt (DA §4.4)");
  struct Args {
    std::string run, prompt, device = "auto";
    int layer = -1;
    int64_t max_tokens = 0, example = -1, step = -1;
    int threads = 0;
    bool json = false, record = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("run", a->run, "Run folder written by `hsm train`")->required()->check(CLI::ExistingDirectory);
  auto* prompt = cmd->add_option("--prompt", a->prompt, "Text to diagnose (its first tokens up to the context; a note says when it was cut)");
  cmd->add_option("--example", a->example,
                  "A task run's test example N as the prompt (up to its last answer; docs/lab.md)")
      ->check(whole_in(0))
      ->excludes(prompt);
  cmd->add_option("--layer", a->layer, "Show this layer only (0-based)")->check(whole_in(0));
  cmd->add_option("--max-tokens", a->max_tokens, "Use at most this many prompt tokens")->check(whole_in(1));
  cmd->add_option("--device", a->device, "cpu, cuda, cuda:N or auto");
  add_threads_option(cmd, a->threads);
  auto* step = cmd->add_option("--step", a->step,
                               "The model as it was at step S: a snapshot (hsm train --snapshot-every/--snapshot-log) or a "
                               "kept checkpoint (default: the newest)")
                   ->check(whole_in(0));
  auto* json = cmd->add_flag("--json", a->json, "Print JSON with the matrices (rows = queries)");
  cmd->add_flag("--record", a->record,
                "Record the diagnosis of the run's probe text (or --prompt) at its checkpoint's step in "
                "RUN/diagnostics.jsonl, as training records one at each validation (a record of that step is "
                "replaced): the over-time diagnostics of a run trained before they were kept")
      ->excludes(json)
      ->excludes(step);
  return {cmd, [a]() {
            set_cpu_threads(a->threads);
            const auto model = Model::load(a->run, a->device, a->step);
            const Prober prober(model);
            if (a->record) return record_diagnostics(a->run, *model, prober, a->prompt);
            const TaskPrompt example = task_example_prompt(*model, prober, a->run, a->example, a->prompt);
            const Diagnosis d = model->task() ? prober.diagnose_tokens(example.tokens)
                                              : prober.diagnose(a->prompt, a->max_tokens);
            if (!model->task())
              note_prompt_cut(*model, static_cast<int64_t>(model->tokenizer().encode(a->prompt).size()), d.length,
                              "first", a->max_tokens);
            std::vector<const LayerDiagnostics*> layers;
            for (const auto& l : d.layers)
              if (a->layer < 0 || l.layer == a->layer) layers.push_back(&l);
            if (layers.empty())
              throw std::invalid_argument("--layer " + std::to_string(a->layer) + " is out of range: the model has " +
                                          std::to_string(d.layers.size()) + " layers (0.." +
                                          std::to_string(d.layers.size() - 1) + ")");
            if (a->json) {
              nlohmann::json out = diagnosis_json(a->run, a->prompt, d, layers);
              if (model->task()) out["task_example"] = task_example_json(example);
              std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
            } else {
              print_table(a->run, a->prompt, d, layers);
              print_task_answers(example);
            }
            return 0;
          }};
}

}  // namespace hsm::cli
