// `hsm lab --out DIR [--task SPEC]... [--model NAME]... [--lr X]... [--weight-decay X]... [--seeds N] [--steps N]
// [--batch N] [--stop-accuracy A] [--stop-stall-steps N] [--stop-stall-gain G] [--size lab|tiny|as_is] [--device D] [--jobs N] [--slurm] [--json | --csv]`: the mixer
// lab (hsm/lab.h, docs/lab.md), the friendly front of a grid of task runs: it writes the grid
// and trains it with the one launcher (`hsm sweep`'s). A folder that holds a lab continues it
// (`hsm lab --out DIR` alone); --table prints its table (mean ± sd over seeds at the best
// learning rate, the best, ties and chance marked) without training; `--protocol zoology` is a
// named protocol's grid (`--protocol mad`: MAD's); --dry-run prints a grid and its estimated CPU time and writes nothing;
// `hsm lab report DIR` writes the lab's report; `hsm lab convert DIR` converts a lab folder of
// an older hsm.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <thread>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "number_options.h"
#include "hsm/files.h"
#include "hsm/formation.h"
#include "hsm/lab_report.h"
#include "hsm/version.h"
#include "output_file.h"
#include "hsm/grid_workers.h"
#include "hsm/lab.h"
#include "hsm/sweep.h"

namespace hsm::cli {
namespace {

// The cells of the lab some of whose runs are not finished, in words (at most five named).
std::string unfinished_cells(const std::vector<LabCell>& cells) {
  std::string names;
  int64_t count = 0;
  for (const LabCell& c : cells)
    if (!c.finished() && ++count <= 5)
      names += (names.empty() ? "" : ", ") + c.task + " x " + c.model + " (" + std::to_string(c.runs) + "/" +
               std::to_string(c.expected_runs) + " runs)";
  if (count > 5) names += " and " + std::to_string(count - 5) + " more";
  return std::to_string(count) + " of " + std::to_string(cells.size()) + " cells unfinished: " + names;
}

// When each run of a cell at its best setting formed its route from the key (issue 67, the rule of
// hsm/formation.h, read with its light reader): one per seed, in seed order.
struct SeedFormation {
  int64_t seed = 0;
  std::string run;       // the run's folder name under runs/
  bool traced = false;   // it recorded traces (traces.jsonl with a record)
  Formation formation;
  std::string problem;   // the log could not be read
};
using CellFormations = std::vector<std::vector<SeedFormation>>;  // by cell, as the table's

CellFormations cell_formations(const std::vector<LabCell>& cells, const std::vector<LabRun>& runs) {
  CellFormations out(cells.size());
  for (size_t i = 0; i < cells.size(); ++i) {
    const LabCell& c = cells[i];
    if (c.n == 0) continue;
    for (const LabRun& r : runs) {
      if (r.task != c.task || r.model != c.model || r.lr != c.best_lr || r.weight_decay != c.best_weight_decay) continue;
      SeedFormation s;
      s.seed = r.seed;
      s.run = std::filesystem::path(r.run_dir).filename().string();
      try {
        s.formation = run_formation(r.run_dir);
        s.traced = !s.formation.points.empty();
      } catch (const std::exception& e) {
        s.problem = e.what();
      }
      out[i].push_back(std::move(s));
    }
    std::stable_sort(out[i].begin(), out[i].end(),
                     [](const SeedFormation& a, const SeedFormation& b) { return a.seed < b.seed; });
  }
  return out;
}

// A seed's step in the table and table.csv: the step, "none" (traced, no route formed / no
// accuracy jump), "-" (no traces recorded).
std::string formed_text(const SeedFormation& s, bool accuracy) {
  if (!s.traced) return "-";
  const int64_t step = accuracy ? s.formation.accuracy_step : s.formation.formed_step;
  return step >= 0 ? std::to_string(step) : "none";
}

std::string seeds_text(const std::vector<SeedFormation>& seeds, bool accuracy) {
  std::string out;
  for (const SeedFormation& s : seeds) out += (out.empty() ? "" : " ") + formed_text(s, accuracy);
  return out;
}

// Lab::table_csv's table with two columns appended last: formed_steps and accuracy_steps, per seed
// at the best setting in seed order, space-separated as seed_accuracies ("-": no traces, "none":
// none). A record ends at a newline outside quotes.
std::string csv_with_formation(const std::string& csv, const CellFormations& formations) {
  std::string out;
  size_t record = 0;
  bool quoted = false;
  for (char ch : csv) {
    if (ch == '"') quoted = !quoted;
    if (ch == '\n' && !quoted) {
      if (record == 0)
        out += ",formed_steps,accuracy_steps";
      else if (record - 1 < formations.size())
        out += "," + seeds_text(formations[record - 1], false) + "," + seeds_text(formations[record - 1], true);
      ++record;
    }
    out += ch;
  }
  return out;
}

nlohmann::json formation_json(const std::vector<SeedFormation>& seeds) {
  nlohmann::json out = nlohmann::json::array();
  auto step = [](int64_t s) { return s >= 0 ? nlohmann::json(s) : nlohmann::json(nullptr); };
  for (const SeedFormation& s : seeds) {
    nlohmann::json j = {{"seed", s.seed}, {"run", s.run}, {"traced", s.traced}};
    if (s.traced)
      j.update({{"formed_step", step(s.formation.formed_step)},
                {"accuracy_step", step(s.formation.accuracy_step)},
                {"max_share", s.formation.max_share},
                {"share_threshold", s.formation.rule.share_threshold},
                {"records", s.formation.points.size()},
                {"summary", s.formation.summary()}});
    if (!s.problem.empty()) j["problem"] = s.problem;
    out.push_back(j);
  }
  return out;
}

nlohmann::json cell_json(const LabCell& c) {
  nlohmann::json r = {{"task", c.task},   {"model", c.model},   {"runs", c.runs}, {"expected_runs", c.expected_runs},
                      {"finished", c.finished()}, {"chance", c.chance}};
  if (c.n > 0) {
    auto number = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
    r.update({{"best_lr", c.best_lr},
              {"best_weight_decay", c.best_weight_decay},
              {"answer_accuracy", c.answer_accuracy},
              {"mean", c.answer_accuracy},
              {"sd", number(c.answer_sd)},
              {"n", c.n},
              {"sequence_accuracy", c.sequence_accuracy},
              {"seed_accuracy", c.seed_accuracy},
              {"right", c.right},
              {"answers", c.answers},
              {"p_above_chance", c.p_above_chance},
              {"at_chance", c.at_chance},
              {"best", c.best},
              {"tie_test", c.tie_test.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.tie_test)},
              {"p_below_best", c.p_below_best},
              {"tied_with_best", c.tied_with_best},
              {"not_converged", c.not_converged},
              {"not_converged_evidence", c.not_converged_evidence}});
  }
  return r;
}

void print_table(const std::vector<LabCell>& cells, const CellFormations& formations, size_t settings,
                 bool weight_decays) {
  std::printf("%-48s %-18s %8s%s %-22s %6s  %-16s %s\n", "task", "model", "best lr", weight_decays ? "  best wd" : "",
              "answer (mean ± sd, n)", "chance", "route formed at", "marks");
  for (size_t i = 0; i < cells.size(); ++i) {
    const LabCell& c = cells[i];
    if (c.n == 0) {  // never "best lr 0, answer nan"
      std::printf("%-48s %-18s %8s\n", c.task.c_str(), c.model.c_str(), "unfinished");
      continue;
    }
    char answer[64];
    if (c.n >= 2)
      std::snprintf(answer, sizeof answer, "%.3f ± %.3f, n %lld", c.answer_accuracy, c.answer_sd,
                    static_cast<long long>(c.n));
    else
      std::snprintf(answer, sizeof answer, "%.3f, n 1", c.answer_accuracy);
    std::string marks = c.best ? "best" : c.tied_with_best ? "tied with best" : "";
    if (c.at_chance) marks += std::string(marks.empty() ? "" : ", ") + "at chance";
    if (c.not_converged) marks += std::string(marks.empty() ? "" : ", ") + "not converged";
    if (!c.finished())
      marks += std::string(marks.empty() ? "" : ", ") + "unfinished (" + std::to_string(c.runs) + "/" +
               std::to_string(c.expected_runs) + " runs)";
    char wd[32] = "";
    if (weight_decays) std::snprintf(wd, sizeof wd, " %8g", c.best_weight_decay);
    std::printf("%-48s %-18s %8g%s %-23s %6.3g  %-16s %s\n", c.task.c_str(), c.model.c_str(), c.best_lr, wd, answer,
                c.chance, seeds_text(formations[i], false).c_str(), marks.c_str());
  }
  std::printf("best: the row's highest mean; tied with best: one-sided Welch's t-test over seeds (two-proportion "
              "z-test on the pooled answers when a cell has one seed), p >= %g; at chance: one-sided exact binomial "
              "test of the pooled answers against the task's chance rate, p >= %g / %zu %s\n",
              kTieAlpha, kChanceAlpha, settings,
              weight_decays ? "learning rate x weight decay settings" : "learning rate(s)");
  std::printf("route formed at: per seed at the best setting, the step from which the share of the answer's "
              "information flow starting at the corrupted key stayed >= %.2f in the traces recorded while it trained "
              "(hsm trace RUN --over-training); none: no route formed; -: no traces recorded\n",
              FormationRule{}.share_threshold);
  // Not converged: the evidence, one run a line, so that nobody reads such a cell as a capability.
  bool heading = false;
  for (const LabCell& c : cells)
    for (const std::string& e : c.not_converged_evidence) {
      if (!heading)
        std::printf("not converged (no capability claim: a run at the best setting stalled on a plateau or was still "
                    "rising at the end of its steps):\n");
      heading = true;
      std::printf("  %s x %s, %s\n", c.task.c_str(), c.model.c_str(), e.c_str());
    }
}

std::string hours_text(double seconds) {
  char buf[64];
  if (seconds < 120)
    std::snprintf(buf, sizeof buf, "%.0f s", seconds);
  else if (seconds < 7200)
    std::snprintf(buf, sizeof buf, "%.0f min", seconds / 60);
  else
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
  return buf;
}

int64_t max_over_layers(const ModelConfig& m, int64_t LayerSpec::*field) {
  int64_t most = 0;
  for (const LayerSpec& l : m.layers) most = std::max(most, l.*field);
  return most;
}

// The grid and its estimated CPU time, in one paragraph (stderr before a protocol trains, stdout
// for --dry-run) or as JSON.
std::string estimate_text(const LabGrid& g, const Sweep& sweep, int jobs, bool json) {
  const LabEstimate e = estimate_lab(sweep);
  if (json) {
    nlohmann::json points = nlohmann::json::array();
    for (const SweepPoint& p : sweep.points)
      points.push_back({{"name", p.name}, {"task", p.task}, {"model", p.model_source}, {"lr", p.train.lr},
                        {"weight_decay", p.train.weight_decay},
                        {"seed", p.train.seed}, {"steps", p.train.steps}, {"batch", p.train.batch_size},
                        {"d_model", p.model.d_model}, {"layers", p.model.layers.size()},
                        {"heads", max_over_layers(p.model, &LayerSpec::heads)},
                        {"ffn", max_over_layers(p.model, &LayerSpec::ffn)}});
    return nlohmann::json{{"protocol", g.protocol},   {"tasks", g.tasks},     {"models", g.models},
                          {"lrs", g.lrs},             {"weight_decays", g.weight_decays},
                          {"seeds", g.seeds},         {"steps", g.steps},
                          {"batch", g.batch},         {"size", g.size},       {"test_examples", g.test_examples},
                          {"device", g.device},       {"stop_accuracy", g.stop_accuracy},
                          {"stop_stall_steps", g.stop_stall_steps}, {"stop_stall_gain", g.stop_stall_gain}, {"runs", e.runs},       {"cpu_seconds", e.cpu_s},
                          {"longest_run", e.longest_run}, {"longest_run_cpu_seconds", e.longest_run_s},
                          {"jobs", jobs},             {"wall_seconds_on_jobs", e.cpu_s / std::max(1, jobs)},
                          {"points", points}}
               .dump(2) + "\n";
  }
  std::string s = (g.protocol.empty() ? std::string("lab") : "protocol " + g.protocol) + ": " +
                  std::to_string(g.tasks.size()) + " task(s) x " + std::to_string(g.models.size()) + " model(s) x " +
                  std::to_string(g.lrs.size()) + " learning rate(s) x " +
                  (g.weight_decays.empty() ? "" : std::to_string(g.weight_decays.size()) + " weight decay(s) x ") +
                  std::to_string(g.seeds) + " seed(s) = " +
                  std::to_string(e.runs) + " runs of " + std::to_string(g.steps) + " steps of " +
                  std::to_string(g.batch) + "\n";
  for (const std::string& t : g.tasks) s += "  task  " + t + "\n";
  for (const std::string& m : g.models) s += "  model " + m + "\n";
  auto list = [](const std::vector<double>& v) {
    std::string out;
    for (double x : v) out += (out.empty() ? "" : ", ") + exact_number_text(x);
    return out;
  };
  s += "  learning rates {" + list(g.lrs) + "}" +
       (g.weight_decays.empty() ? std::string(", weight decay 0") : " x weight decays {" + list(g.weight_decays) + "}") +
       ": the best counts per cell\n";
  s += "estimated CPU time: " + hours_text(e.cpu_s) + " in all (at most: early stopping can only shorten it), " +
       hours_text(e.cpu_s / std::max(1, jobs)) + " on " + std::to_string(jobs) + " worker(s) of one core; the " +
       "longest run " + hours_text(e.longest_run_s) + " (" + e.longest_run + "); from the runs' multiply-adds at " +
       "1e10 per CPU-second (docs/lab.md, \"What a lab costs\")\n";
  return s;
}

// `hsm lab report DIR`: the page and its figures, every file checked before any is written.
int write_lab_report(const std::string& dir, std::string out, bool force) {
  namespace fs = std::filesystem;
  const LabGrid grid = Lab::stored_grid(dir);
  const Lab lab(dir, grid);
  if (out.empty()) out = (fs::path(dir) / "report.md").string();
  // The report is two files, Markdown and HTML, named by --out's ending (issue 65: --out X.html
  // was written as Markdown, then as HTML); any other ending is refused, so that no file of the
  // lab's (table.csv, sweep.json) is ever a name the report writes.
  const std::string ending = fs::path(out).extension().string();
  if (ending != ".md" && ending != ".html")
    throw std::invalid_argument("--out '" + out + "': name the report's Markdown file (ending .md) or its HTML file "
                                "(ending .html); the other is written beside it");
  const std::string markdown = fs::path(out).replace_extension(".md").string();
  const std::vector<std::pair<std::string, std::string>> files = lab_report_files(lab, markdown, HSM_VERSION);
  // The lab's own files are inputs: never replaced, even with --force (a command replaces only what it made).
  std::vector<std::string> inputs;
  for (const char* own : {"sweep.json", "runs", "points", "table.csv", "models", "sweep.sbatch", "logs", "lab.json",
                          "results.jsonl"})
    inputs.push_back((fs::path(dir) / own).string());
  for (const auto& [path, text] : files) check_output_file("--out", path, inputs, force);
  // A folder named in --out that is not there yet is made (the report's own; nothing in it is replaced).
  const fs::path folder = fs::path(out).parent_path();
  if (!folder.empty()) fs::create_directories(folder);
  for (const auto& [path, text] : files) write_file_atomic(path, text);
  std::cout << "wrote " << files[0].first << " and " << files[1].first << " (" << files.size() - 2
            << " figures beside them)\n";
  return 0;
}

}  // namespace

Command add_lab_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "lab", "Train and score a grid of synthetic tasks x models (best of a few learning rates per cell, as MAD does)");
  struct Args {
    std::string out;
    LabGrid grid;
    std::string convert;
    bool json = false, csv = false, table_only = false, slurm = false, events = false, dry_run = false;
    int jobs = 0;
    std::string protocol, report_dir, report_out;
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  a->grid = default_lab_grid();
  cmd->add_option("--out", a->out, "Lab folder (created; a folder holding a lab continues it)");
  auto* tasks = cmd->add_option("--task", a->grid.tasks, "A task spec NAME[:key=value,...]; repeat for several "
                                                          "(default: mqar at context 64 and 16, in_context_recall)");
  auto* models = cmd->add_option("--model", a->grid.models,
                                 "A preset, a lab model (gpt_2layer: gpt at 2 layers, Zoology's attention) or a config file; repeat "
                                 "for several (default: gpt_2layer, hsm_ab, hybrid_0_6)");
  auto* lrs = cmd->add_option("--lr", a->grid.lrs, "A learning rate; repeat for several: the best counts (default 0.003 and 0.01)")
                  ->check(number_in(0, 10, true));
  auto* wds = cmd->add_option("--weight-decay", a->grid.weight_decays,
                              "A weight decay; repeat for several: an axis, the best over lr x weight decay counts "
                              "(default: none, every run at 0)")
                  ->check(number_in(0, 0.999999));
  auto* seeds = cmd->add_option("--seeds", a->grid.seeds, "Training seeds per cell (default 2)")
                    ->check(whole_in(1, 100));
  auto* steps = cmd->add_option("--steps", a->grid.steps, "Steps per run at most (default 2000)")
                    ->check(whole_in(1, 10000000));
  auto* batch = cmd->add_option("--batch", a->grid.batch, "Examples per step (default 128)")
                    ->check(whole_in(1, 65536));
  auto* size = cmd->add_option("--size", a->grid.size, "lab (d 64, up to 4 layers of each model, one head, no MLP; the default), tiny (the same with the "
                               "model's heads and an FFN of 4·d) or as_is");
  auto* stop = cmd->add_option("--stop-accuracy", a->grid.stop_accuracy,
                               "A run ends, done, at the first validation this accurate (default 0.99; 0: every step)")
                   ->check(number_in(0, 1));
  auto* stall_steps =
      cmd->add_option("--stop-stall-steps", a->grid.stop_stall_steps,
                      "A run ends, done, when its validation loss fell by less than --stop-stall-gain over this many "
                      "steps: it has stopped learning (default 1000; 0: off)")
          ->check(whole_in(0, 10000000));
  auto* stall_gain = cmd->add_option("--stop-stall-gain", a->grid.stop_stall_gain,
                                     "The fraction of its validation loss a run must shed over --stop-stall-steps "
                                     "(default 0.03)")
                         ->check(number_in(0, 1));
  auto* examples = cmd->add_option("--test-examples", a->grid.test_examples, "Fresh test examples per run (1280)")
                       ->check(whole_in(1, 1000000));
  cmd->add_flag("--json", a->json, "Print the table as JSON");
  cmd->add_flag("--csv", a->csv, "Print the table as CSV (the folder always holds table.csv)");
  cmd->add_flag("--table", a->table_only, "Print the table of the lab in --out without training");
  auto* device = cmd->add_option("--device", a->grid.device, "Where every run trains and is scored (default cpu)");
  cmd->add_option("--jobs", a->jobs,
                  "Runs trained at once, the cores split among them, as hsm sweep --jobs (default: one per core)")
      ->check(whole_in(1, 256));
  cmd->add_flag("--slurm", a->slurm, "Write DIR/sweep.sbatch, a Slurm array job (one task per run), instead of training");
  cmd->add_flag("--events", a->events, kEventsHelp);
  auto* protocol = cmd->add_option("--protocol", a->protocol,
                                   "A named protocol's grid instead of --task/--model/...: zoology (Zoology's MQAR grid), "
                                   "mad (MAD's six tasks over their difficulty settings), state (parity, S5 and A5 at 4x the "
                                   "training length; docs/lab.md)");
  cmd->add_flag("--dry-run", a->dry_run, "Print the grid and its estimated CPU time; train nothing, write nothing");
  auto* report = cmd->add_subcommand("report", "Write the lab's report: Markdown and HTML (figures as SVG), the "
                                               "verdict table, the figures, the settings and the command that reruns it");
  report->add_option("dir", a->report_dir, "The lab folder")->required()->check(CLI::ExistingDirectory);
  report->add_option("--out", a->report_out, "The report's Markdown file (.md) or its HTML file (.html); the other, "
                                             "and the figures, are written beside it (default DIR/report.md)");
  report->add_flag("--force", a->force, "Replace files that exist (a link is replaced, never written through)");
  auto* convert = cmd->add_subcommand("convert", "Convert a lab folder of an older hsm (lab.json) to the grid format");
  convert->add_option("dir", a->convert, "The lab folder")->required()->check(CLI::ExistingDirectory);
  cmd->require_subcommand(0, 1);
  const std::vector<CLI::Option*> grid_options = {tasks,      models,     lrs,      wds,         seeds,      steps,
                                                  batch,      size,       stop,     stall_steps, stall_gain, examples,
                                                  device};
  return {cmd, [a, grid_options, convert, report, protocol]() {
            if (report->parsed()) return write_lab_report(a->report_dir, a->report_out, a->force);
            if (convert->parsed()) {
              convert_old_lab(a->convert, [](const std::string& line) { std::cerr << "hsm lab: " << line << "\n"; });
              std::cout << "converted " << a->convert << "; hsm lab --out " << a->convert << " continues it\n";
              return 0;
            }
            if (a->out.empty()) throw std::invalid_argument("give the lab folder: hsm lab --out DIR");
            bool grid_given = false;
            // --device alone may go beside a protocol (where its runs train); the rest is the grid.
            for (size_t i = 0; i + 1 < grid_options.size(); ++i) grid_given = grid_given || grid_options[i]->count() > 0;
            const bool device_given = grid_options.back()->count() > 0;
            const bool exists = std::filesystem::exists(std::filesystem::path(a->out) / "sweep.json");
            // A lab folder continues with its own grid unless another one is given (then refused).
            LabGrid grid = a->grid;
            LabProtocol named;
            if (protocol->count() > 0) {
              if (grid_given)
                throw std::invalid_argument("--protocol " + a->protocol + " sets the grid (tasks, models, learning "
                                            "rates, weight decays, seeds, steps, batch, size, early stop, test examples); give --device, --jobs "
                                            "or --slurm beside it, or a grid without --protocol");
              named = lab_protocol(a->protocol, a->out);
              grid = named.grid;
              if (device_given) grid.device = a->grid.device;
            } else if (!grid_given && !device_given && exists) {
              grid = Lab::stored_grid(a->out);
            }
            const int jobs = a->jobs > 0 ? a->jobs : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
            // What the lab refuses, refused before anything is written, and alike with --dry-run
            // (issue 65: a dry run took a folder, and --out /dev/full, that the lab refuses).
            check_lab_folder(a->out, grid);
            if (protocol->count() > 0 && !exists) check_protocol_models(named);
            if (a->dry_run) {  // nothing written: the grid from the protocol's configs in memory
              std::cout << estimate_text(grid, lab_sweep(grid, named.model_files), a->slurm ? 1 : jobs, a->json);
              return 0;
            }
            if (protocol->count() > 0 && !exists) write_protocol_models(named);
            Lab lab(a->out, grid);
            if (protocol->count() > 0 && !a->table_only)
              std::cerr << "hsm lab: " << named.summary << "\nhsm lab: "
                        << estimate_text(grid, lab.sweep(), a->slurm ? 1 : jobs, false);
            if (a->slurm) return write_grid_slurm(a->out);
            // The one launcher: `jobs` workers (`hsm sweep run DIR --point K`), the cores split
            // among them; a stop signal reaches each as SIGTERM and each keeps its checkpoint.
            const int rc = a->table_only ? 0
                                         : run_sweep_local(
                                               a->out, jobs, own_exe(),
                                               [](const std::string& line) { std::cerr << "hsm lab: " << line << "\n"; },
                                               a->events);
            std::vector<std::string> warnings;
            const std::vector<LabCell> cells = lab.table(&warnings);
            for (const std::string& w : warnings) std::cerr << "hsm: warning: " << w << "\n";
            const CellFormations formations = cell_formations(cells, lab.results());
            const std::string csv = csv_with_formation(Lab::table_csv(cells), formations);
            if (!a->table_only) {
              // The exit status says whether every cell finished (issue 46): a stop, a failed or
              // stopped worker, leaves cells unfinished and the launcher names them.
              bool all = true;
              for (const LabCell& c : cells) all = all && c.finished();
              if (!all || rc != 0)
                throw std::runtime_error(std::string(rc == 130 ? "stopped" : "not every run finished") +
                                         "; " + unfinished_cells(cells) + "; hsm lab --out " + a->out +
                                         " continues the lab");
              // --table only reads; a training lab writes its table whole, never through a link.
              lab.write_table_csv(csv);
            }
            if (a->events) return 0;  // the events were the output
            if (a->csv) {
              std::cout << csv;
            } else if (a->json) {
              nlohmann::json rows = nlohmann::json::array();
              for (size_t i = 0; i < cells.size(); ++i) {
                nlohmann::json row = cell_json(cells[i]);
                if (cells[i].n > 0) row["formation"] = formation_json(formations[i]);
                rows.push_back(row);
              }
              std::cout << nlohmann::json{{"lab", a->out}, {"cells", rows}}.dump(2) << "\n";
            } else {
              print_table(cells, formations, lab_optimiser_settings(lab.grid()), !lab.grid().weight_decays.empty());
            }
            return 0;
          }};
}

}  // namespace hsm::cli
