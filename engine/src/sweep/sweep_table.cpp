// The table of a sweep: a row per point from its run folder's own metrics.jsonl, and rows
// grouped over one setting (seeds) with mean, standard deviation and n.
#include <cmath>
#include <filesystem>
#include <map>

#include "hsm/cost.h"
#include "hsm/params.h"
#include "hsm/sweep.h"

namespace hsm {
namespace fs = std::filesystem;

std::vector<SweepRow> sweep_table(const std::string& dir) {
  const Sweep sweep = load_sweep(dir);
  const bool task = !sweep.task.empty();
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
    const std::string run = sweep_run_dir(dir, p);
    if (fs::exists(fs::path(run) / "metrics.jsonl")) {
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
