// `hsm sweep SPEC.json --out SWEEP [--jobs N] [--slurm] [--device D] [--events]`: a grid of runs
// over models, placements, training settings, seeds, tasks (hsm/sweep.h, docs/sweeps.md); `hsm
// sweep --out SWEEP` alone continues the grid there (a lab's too); `hsm sweep run SWEEP --point
// K` trains one point (what the launcher's children and each Slurm array task run); `hsm sweep
// table SWEEP [--json|--csv] [--group SETTING]` compares the runs.
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "number_options.h"
#include "hsm/files.h"
#include "hsm/grid_workers.h"
#include "hsm/sweep.h"

namespace hsm::cli {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

json number(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

json settings_json(const std::vector<std::pair<std::string, std::string>>& settings) {
  json j = json::object();
  for (const auto& [a, v] : settings) j[a] = json::parse(v);
  return j;
}

std::string settings_text(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::string s;
  for (const auto& [a, v] : settings) {
    const json j = json::parse(v);
    s += (s.empty() ? "" : " ") + a + "=" + (j.is_string() ? j.get<std::string>() : v);
  }
  return s;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string num_text(double x, const char* fmt = "%.6g") {
  if (!std::isfinite(x)) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

int print_table(const std::string& dir, bool as_json, bool as_csv, const std::string& group) {
  const std::vector<SweepRow> rows = sweep_table(dir);
  if (!group.empty()) {
    const std::vector<SweepGroup> groups = group_sweep_rows(rows, group);
    const std::vector<std::pair<const char*, SweepStat SweepGroup::*>> metrics = {
        {"final_val_loss", &SweepGroup::final_val_loss}, {"best_val_loss", &SweepGroup::best_val_loss},
        {"final_accuracy", &SweepGroup::final_accuracy}, {"best_accuracy", &SweepGroup::best_accuracy},
        {"tokens_per_s", &SweepGroup::tokens_per_s},     {"wall_s", &SweepGroup::wall_s}};
    if (as_json) {
      json out = json::array();
      for (const SweepGroup& g : groups) {
        json m = json::object();
        for (const auto& [name, field] : metrics)
          m[name] = {{"mean", number((g.*field).mean)}, {"std", number((g.*field).std)}, {"n", (g.*field).n}};
        out.push_back({{"settings", settings_json(g.settings)}, {"runs", g.runs}, {"metrics", m}});
      }
      std::cout << json{{"sweep", dir}, {"group", group}, {"groups", out}}.dump(2) << "\n";
      return 0;
    }
    if (as_csv) {
      std::cout << "settings,runs";
      for (const auto& [name, field] : metrics) std::cout << "," << name << "_mean," << name << "_std," << name << "_n";
      std::cout << "\n";
      for (const SweepGroup& g : groups) {
        std::cout << csv_field(settings_text(g.settings)) << "," << g.runs.size();
        for (const auto& [name, field] : metrics)
          std::cout << "," << num_text((g.*field).mean) << "," << num_text((g.*field).std) << "," << (g.*field).n;
        std::cout << "\n";
      }
      return 0;
    }
    std::printf("%-44s %4s %20s %20s\n", "settings", "n", "best val_loss", "final accuracy");
    for (const SweepGroup& g : groups)
      std::printf("%-44s %4lld %10.4f ± %-7.4f %10.4f ± %-7.4f\n", settings_text(g.settings).c_str(),
                  static_cast<long long>(g.best_val_loss.n), g.best_val_loss.mean, g.best_val_loss.std,
                  g.final_accuracy.mean, g.final_accuracy.std);
    return 0;
  }
  if (as_json) {
    json out = json::array();
    for (const SweepRow& r : rows) {
      json j = {{"run", r.run},
                {"settings", settings_json(r.settings)},
                {"params", r.params},
                {"macs_per_token", r.macs_per_token},
                {"final_val_loss", number(r.final_val_loss)},
                {"best_val_loss", number(r.best_val_loss)},
                {"final_accuracy", number(r.final_accuracy)},
                {"best_accuracy", number(r.best_accuracy)},
                {"tokens_per_s", number(r.tokens_per_s)},
                {"wall_s", number(r.wall_s)},
                {"step", r.step},
                {"total_steps", r.total_steps},
                {"state", r.state}};
      if (!r.error.empty()) j["error"] = r.error;
      out.push_back(j);
    }
    std::cout << json{{"sweep", dir}, {"rows", out}}.dump(2) << "\n";
    return 0;
  }
  if (as_csv) {
    std::cout << "run,settings,params,macs_per_token,final_val_loss,best_val_loss,final_accuracy,best_accuracy,"
                 "tokens_per_s,wall_s,step,total_steps,state,error\n";
    for (const SweepRow& r : rows)
      std::cout << csv_field(r.run) << "," << csv_field(settings_text(r.settings)) << "," << r.params << ","
                << r.macs_per_token << "," << num_text(r.final_val_loss) << "," << num_text(r.best_val_loss) << ","
                << num_text(r.final_accuracy) << "," << num_text(r.best_accuracy) << "," << num_text(r.tokens_per_s)
                << "," << num_text(r.wall_s) << "," << r.step << "," << r.total_steps << "," << r.state << ","
                << csv_field(r.error) << "\n";
    return 0;
  }
  std::printf("%-40s %9s %9s %9s %9s %8s %8s %8s\n", "run", "params", "MACs/tok", "val_loss", "best", "acc", "tok/s",
              "state");
  for (const SweepRow& r : rows)
    std::printf("%-40s %9lld %9lld %9.4f %9.4f %8.4f %8.0f %8s%s\n", r.run.c_str(), static_cast<long long>(r.params),
                static_cast<long long>(r.macs_per_token), r.final_val_loss, r.best_val_loss, r.final_accuracy,
                r.tokens_per_s, r.state.c_str(), r.error.empty() ? "" : ("  " + r.error).c_str());
  return 0;
}

std::string with_device(const std::string& spec_text, const std::string& device) {
  nlohmann::ordered_json spec = nlohmann::ordered_json::parse(spec_text, nullptr, false);
  if (!spec.is_object()) return spec_text;  // the parser names what is wrong with it
  if (!spec.contains("train") || !spec["train"].is_object()) spec["train"] = nlohmann::ordered_json::object();
  spec["train"]["device"] = device;
  return spec.dump();
}

}  // namespace

int write_grid_slurm(const std::string& dir) {
  const std::string script = write_sweep_sbatch(dir, own_exe());
  std::cout << "wrote " << script << " (" << load_sweep(dir).points.size()
            << " array tasks); submit it with: sbatch " << script << "\n";
  return 0;
}

std::string own_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "hsm" : p.string();
}

Command add_sweep_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("sweep",
                                 "Train a sweep of runs (axes over models, placements, settings, seeds) "
                                 "locally or as a Slurm array job; compare them with `hsm sweep table`");
  struct Args {
    std::string spec, out, data, dir, group;
    int jobs = 1, threads = 0;
    int64_t point = -1;
    std::string device;
    bool slurm = false, check = false, json = false, csv = false, events = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("spec", a->spec, "The sweep spec (JSON; docs/sweeps.md)")->check(CLI::ExistingFile);
  cmd->add_option("--out", a->out, "Sweep folder (created; a folder holding this sweep continues it)");
  cmd->add_option("--data", a->data, "Use this corpus instead of the spec's data")->check(CLI::ExistingPath);
  cmd->add_option("--jobs", a->jobs, "Points trained at a time on this machine, the cores split among them (default 1)")
      ->check(whole_in(1, 256));
  cmd->add_flag("--slurm", a->slurm,
                "Write SWEEP/sweep.sbatch, a Slurm array job (one task per point), instead of "
                "training here");
  cmd->add_flag("--check", a->check, "Check the spec and list its points; train nothing");
  cmd->add_option("--device", a->device, "Train every point on this device (cpu, cuda, cuda:N, auto): the spec's train.device");
  cmd->add_flag("--events", a->events, kEventsHelp);
  auto* run = cmd->add_subcommand("run", "Train one point of a sweep here (a Slurm array task runs this)");
  run->add_option("sweep", a->dir, "The sweep folder")->required()->check(CLI::ExistingDirectory);
  run->add_option("--point", a->point, "The point's index (SLURM_ARRAY_TASK_ID)")->required()->check(whole_in(0));
  add_threads_option(run, a->threads, "LibTorch threads (0: the default)");
  run->add_flag("--events", a->events,
                "Print the point's progress events on stdout, one a line: 'hsm-grid-event ' and a JSON object "
                "(hsm/grid_workers.h)");
  auto* table = cmd->add_subcommand("table", "A row per run of a sweep: the settings that differ and the metrics");
  table->add_option("sweep", a->dir, "The sweep folder")->required()->check(CLI::ExistingDirectory);
  auto* js = table->add_flag("--json", a->json, "As JSON");
  table->add_flag("--csv", a->csv, "As CSV")->excludes(js);
  table->add_option("--group", a->group, "Group the rows over this setting (e.g. seed): mean, std and n");
  cmd->require_subcommand(0, 1);
  return {cmd, [a, run, table]() {
            if (table->parsed()) return print_table(a->dir, a->json, a->csv, a->group);
            if (run->parsed()) {
              // SIGINT, SIGTERM (the launcher, Slurm) and SIGHUP (a closed terminal): the point
              // stops at a step with a checkpoint.
              StopSignals stop(true);
              // A reader of the events gone (a studio closed) is no reason to die without a checkpoint.
              if (a->events) std::signal(SIGPIPE, SIG_IGN);
              std::function<void(const std::string&)> on_event;
              if (a->events) on_event = write_grid_event;
              const std::string state = run_sweep_point(
                  a->dir, a->point, a->threads, StopSignals::flag(),
                  [](const std::string& line) { std::cerr << line << "\n"; }, on_event);
              std::cerr << "point " << a->point << ": " << state << "\n";
              return state == "done" ? 0 : 130;
            }
            if (a->events) std::signal(SIGPIPE, SIG_IGN);  // as its workers do
            auto launch = [&]() {
              const int rc = run_sweep_local(
                  a->out, a->jobs, own_exe(), [](const std::string& line) { std::cerr << "hsm sweep: " << line << "\n"; },
                  a->events);
              if (rc == 0 && !a->events) print_table(a->out, false, false, "");
              return rc;
            };
            // A folder that holds a grid continues it (a lab's too).
            if (a->spec.empty() && !a->out.empty() && a->data.empty() && a->device.empty() && !a->check) {
              load_sweep(a->out);  // refuses a folder holding none, naming it
              if (a->slurm) return write_grid_slurm(a->out);
              return launch();
            }
            if (a->spec.empty()) throw std::invalid_argument("give a sweep spec: hsm sweep SPEC.json --out SWEEP");
            // --data is taken from the working directory, the spec's own paths from beside it.
            const std::string data = a->data.empty() ? "" : fs::absolute(a->data).lexically_normal().string();
            std::string spec_text = read_text_file(a->spec, "sweep spec");
            if (!a->device.empty()) spec_text = with_device(spec_text, a->device);
            const Sweep sweep = parse_sweep_spec(spec_text, fs::path(a->spec).parent_path().string(), data);
            if (a->check) {
              // Each point's model, so a path or a placement can be seen to do what was meant.
              for (const SweepPoint& p : sweep.points) {
                std::string layers;
                for (const LayerSpec& l : p.model.layers)
                  layers += (layers.empty() ? "" : ",") + l.mixer + "/" + std::to_string(l.ffn) + "/" +
                            std::to_string(l.heads);
                std::cout << p.index << " " << p.name << " layers=" << layers << " d_model=" << p.model.d_model
                          << " seed=" << p.train.seed << "\n";
              }
              return 0;
            }
            if (a->out.empty()) throw std::invalid_argument("give the sweep folder: --out SWEEP");
            open_sweep_folder(a->out, sweep);
            if (a->slurm) return write_grid_slurm(a->out);
            return launch();
          }};
}

}  // namespace hsm::cli
