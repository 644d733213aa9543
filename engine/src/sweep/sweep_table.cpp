// The table of a sweep: a row per point from its run folder's own metrics.jsonl, and rows
// grouped over one setting (seeds) with mean, standard deviation and n.
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "hsm/cost.h"
#include "hsm/params.h"
#include "hsm/run_folder.h"
#include "hsm/settings.h"
#include "hsm/sweep.h"

namespace hsm {
namespace fs = std::filesystem;

namespace {

// The metrics of a row from its run folder's metrics.jsonl (none yet: left NaN). task: the
// accuracy is a task run's answer accuracy, else next-token accuracy.
void read_row_metrics(SweepRow& r, const std::string& run, bool task) {
  if (!fs::exists(RunFolder(run).metrics)) return;
  MetricsReader reader(run);
  double tps_sum = 0;
  int64_t tps_n = 0;
  for (const MetricRecord& m : reader.poll()) {
    r.step = std::max(r.step, m.step);
    r.total_steps = m.total_steps;
    if (m.wall_s > 0) r.wall_s = m.wall_s;
    if (m.kind == "train" && std::isfinite(m.tokens_per_s)) tps_sum += m.tokens_per_s, ++tps_n;
    if (m.kind != "eval") continue;
    const double acc = task ? m.answer_accuracy : m.val_accuracy;
    if (std::isfinite(m.val_loss)) {
      r.final_val_loss = m.val_loss;
      if (!(r.best_val_loss <= m.val_loss)) r.best_val_loss = m.val_loss;
    }
    if (std::isfinite(acc)) {
      r.final_accuracy = acc;
      if (!(r.best_accuracy >= acc)) r.best_accuracy = acc;
    }
  }
  if (tps_n > 0) r.tokens_per_s = tps_sum / static_cast<double>(tps_n);
}

// A run's model and training settings as axis paths (as a sweep names them) -> compact JSON.
std::vector<std::pair<std::string, std::string>> run_settings(const RunInfo& info) {
  std::vector<std::pair<std::string, std::string>> out;
  const nlohmann::json flat = nlohmann::json::parse(to_json(info.model)).flatten();
  for (const auto& [pointer, value] : flat.items()) {
    std::string path = "model" + pointer;  // "/layers/0/mixer" -> "model.layers.0.mixer"
    for (char& c : path)
      if (c == '/') c = '.';
    out.emplace_back(path, value.is_string() ? value.get<std::string>() : value.dump());
  }
  for (const SettingSpec& s : train_setting_specs()) out.emplace_back("train." + std::string(s.key), s.get(info.training));
  return out;
}

}  // namespace

std::vector<SweepRow> runs_table(const std::vector<std::string>& run_dirs) {
  std::vector<RunInfo> infos;
  std::vector<std::vector<std::pair<std::string, std::string>>> all;
  std::map<std::string, std::set<std::string>> values;  // path -> the values the runs have
  std::map<std::string, size_t> runs_with;               // path -> how many runs have it
  for (const std::string& dir : run_dirs) {
    infos.push_back(read_run_info(dir));
    all.push_back(run_settings(infos.back()));
    for (const auto& [path, value] : all.back()) values[path].insert(value), ++runs_with[path];
  }
  std::vector<SweepRow> rows;
  for (size_t i = 0; i < infos.size(); ++i) {
    const RunInfo& info = infos[i];
    SweepRow r;
    r.run = fs::path(run_dirs[i]).lexically_normal().filename().string();
    if (r.run.empty()) r.run = fs::path(run_dirs[i]).lexically_normal().parent_path().filename().string();
    for (const auto& kv : all[i]) {
      // A path some run lacks (fewer layers) differs too.
      if (values[kv.first].size() > 1 || runs_with[kv.first] < all.size()) r.settings.push_back(kv);
    }
    r.params = count_params(info.model).total();
    r.macs_per_token = model_macs_per_token(info.model, info.model.context);
    read_row_metrics(r, run_dirs[i], false);
    bool task = false;
    if (fs::exists(RunFolder(run_dirs[i]).metrics))
      for (const MetricRecord& m : MetricsReader(run_dirs[i]).poll()) task = task || std::isfinite(m.answer_accuracy);
    if (task) {
      SweepRow t;
      read_row_metrics(t, run_dirs[i], true);
      r.final_accuracy = t.final_accuracy, r.best_accuracy = t.best_accuracy;
    }
    const int64_t total = info.total_steps > 0 ? info.total_steps : r.total_steps;
    r.state = total > 0 && std::max(info.step, r.step) >= total ? "done" : "stopped";
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<SweepRow> sweep_table(const std::string& dir) {
  const Sweep sweep = load_sweep(dir);
  std::vector<SweepRow> rows;
  for (const SweepPoint& p : sweep.points) {
    SweepRow r;
    r.run = p.name;
    r.settings = p.settings;
    r.params = count_params(p.model).total();
    r.macs_per_token = model_macs_per_token(p.model, p.model.context);
    const PointState s = read_point_state(dir, p);
    r.state = s.state;
    r.error = s.error;
    read_row_metrics(r, sweep_run_dir(dir, p), !p.task.empty());  // a task axis' point too
    rows.push_back(std::move(r));
  }
  return rows;
}

namespace {

SweepStat stat(const std::vector<double>& xs) {
  SweepStat s;
  double sum = 0;
  for (double x : xs)
    if (std::isfinite(x)) sum += x, ++s.n;
  if (s.n == 0) return s;
  s.mean = sum / static_cast<double>(s.n);
  double ss = 0;
  for (double x : xs)
    if (std::isfinite(x)) ss += (x - s.mean) * (x - s.mean);
  s.std = s.n > 1 ? std::sqrt(ss / static_cast<double>(s.n - 1)) : 0.0;
  return s;
}

}  // namespace

std::vector<SweepGroup> group_sweep_rows(const std::vector<SweepRow>& rows, const std::string& setting) {
  bool known = false;
  for (const SweepRow& r : rows)
    for (const auto& [a, v] : r.settings) known = known || a == setting;
  if (!rows.empty() && !known) {
    std::string names;
    for (const auto& [a, v] : rows.front().settings) names += (names.empty() ? "" : ", ") + a;
    throw std::invalid_argument("--group " + setting + ": no such setting differs in this sweep; use one of " +
                                (names.empty() ? "(none)" : names));
  }
  std::vector<SweepGroup> groups;
  std::map<std::vector<std::pair<std::string, std::string>>, std::vector<const SweepRow*>> members;
  for (const SweepRow& r : rows) {
    std::vector<std::pair<std::string, std::string>> key;
    for (const auto& kv : r.settings)
      if (kv.first != setting) key.push_back(kv);
    auto [it, fresh] = members.try_emplace(key);
    if (fresh) groups.push_back(SweepGroup{key, {}, {}, {}, {}, {}, {}, {}});
    it->second.push_back(&r);
  }
  for (SweepGroup& g : groups) {
    const auto& rs = members.at(g.settings);
    auto column = [&](double SweepRow::*field) {
      std::vector<double> xs;
      for (const SweepRow* r : rs) xs.push_back(r->*field);
      return stat(xs);
    };
    for (const SweepRow* r : rs) g.runs.push_back(r->run);
    g.final_val_loss = column(&SweepRow::final_val_loss);
    g.best_val_loss = column(&SweepRow::best_val_loss);
    g.final_accuracy = column(&SweepRow::final_accuracy);
    g.best_accuracy = column(&SweepRow::best_accuracy);
    g.tokens_per_s = column(&SweepRow::tokens_per_s);
    g.wall_s = column(&SweepRow::wall_s);
  }
  return groups;
}

}  // namespace hsm
