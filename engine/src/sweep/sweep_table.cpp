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

using Settings = std::vector<std::pair<std::string, std::string>>;

// "model.layers.3.mixer" -> layer 3, field "mixer"; false for a path not of one layer.
bool layer_path(const std::string& path, size_t* layer, std::string* field) {
  static const std::string prefix = "model.layers.";
  if (path.rfind(prefix, 0) != 0) return false;
  const size_t dot = path.find('.', prefix.size());
  if (dot == std::string::npos) return false;
  const std::string index = path.substr(prefix.size(), dot - prefix.size());
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) return false;
  *layer = std::stoul(index);
  *field = path.substr(dot + 1);
  return true;
}

// A run's layers' values of one field, consecutive repeats counted: "hsm_ab, attn×5, hsm_ab".
std::string layer_list(const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < values.size();) {
    size_t j = i;
    while (j < values.size() && values[j] == values[i]) ++j;
    if (!out.empty()) out += ", ";
    out += values[i] + (j - i > 1 ? "×" + std::to_string(j - i) : "");
    i = j;
  }
  return out;
}

// The runs' settings as the table compares them (issue 48: the three bundled models differ in
// every field of every layer, about 45 columns). A field of the layers stays one setting per
// layer ("model.layers.1.mixer") while the runs have as many layers and at most two of them
// differ in it; else it is one setting ("model.layers.mixer"), each run's layers as a list. The
// description (free text that differs with the name) and the bookkeeping of a run (when it
// validated, saved and logged, its device and threads) are left out.
std::vector<Settings> compared_settings(const std::vector<Settings>& runs, const std::vector<RunInfo>& infos) {
  // field -> layer -> the values the runs have there ("" where a run has no such layer)
  std::map<std::string, std::map<size_t, std::set<std::string>>> fields;
  for (size_t i = 0; i < runs.size(); ++i)
    for (const auto& [path, value] : runs[i]) {
      size_t layer = 0;
      std::string field;
      if (layer_path(path, &layer, &field)) fields[field][layer];
    }
  bool same_depth = true;
  for (const RunInfo& info : infos) same_depth = same_depth && info.model.layers.size() == infos[0].model.layers.size();
  std::set<std::string> listed;  // the fields shown as one list per run
  for (auto& [field, layers] : fields) {
    int differing = 0;
    for (auto& [layer, values] : layers) {
      for (const Settings& run : runs) {
        std::string v;
        for (const auto& [path, value] : run)
          if (path == "model.layers." + std::to_string(layer) + "." + field) v = value;
        values.insert(v);
      }
      differing += values.size() > 1;
    }
    if (!same_depth || differing > 2) listed.insert(field);
  }
  // How a run was watched, saved and where it ran, not what it learned: no column of its own.
  static const std::set<std::string> bookkeeping = {"train.device",    "train.eval_every", "train.checkpoint_every",
                                                    "train.log_every", "train.keep_best",  "train.threads",
                                                    "train.probe_text", "train.trace_every", "train.trace_example",
                                                    "train.trace_text", "train.trace_corrupt", "train.snapshot_every",
                                                    "train.snapshot_log"};
  std::vector<Settings> out;
  for (const Settings& run : runs) {
    Settings s;
    std::map<std::string, std::vector<std::string>> lists;  // field -> the run's layers' values
    for (const auto& [path, value] : run) {
      size_t layer = 0;
      std::string field;
      if (path == "model.description" || bookkeeping.count(path)) continue;
      if (!layer_path(path, &layer, &field) || !listed.count(field)) {
        s.emplace_back(path, value);
        continue;
      }
      std::vector<std::string>& list = lists[field];
      if (list.empty()) s.emplace_back("model.layers." + field, std::string());  // its place among the settings
      if (list.size() <= layer) list.resize(layer + 1, "-");
      list[layer] = value;
    }
    for (auto& [path, value] : s)
      if (path.rfind("model.layers.", 0) == 0 && lists.count(path.substr(13))) value = layer_list(lists[path.substr(13)]);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::vector<SweepRow> runs_table(const std::vector<std::string>& run_dirs) {
  std::vector<RunInfo> infos;
  std::vector<Settings> all;
  for (const std::string& dir : run_dirs) {
    infos.push_back(read_run_info(dir));
    all.push_back(run_settings(infos.back()));
  }
  all = compared_settings(all, infos);
  std::map<std::string, std::set<std::string>> values;  // path -> the values the runs have
  std::map<std::string, size_t> runs_with;               // path -> how many runs have it
  for (const Settings& run : all)
    for (const auto& [path, value] : run) values[path].insert(value), ++runs_with[path];
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
    std::vector<std::string> damaged;  // a point file that is no state: said in the row (issue 65)
    const PointState s = read_point_state(dir, p, &damaged);
    r.state = s.state;
    r.error = damaged.empty() ? s.error : damaged.front();
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
