// The report of a lab (hsm/lab_report.h): one page, Markdown and HTML, built once as blocks.
#include "hsm/lab_report.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "hsm/formation.h"
#include "hsm/grid_workers.h"
#include "hsm/receptive_field.h"
#include "hsm/settings.h"
#include "hsm/svg_plot.h"
#include "hsm/tasks.h"

namespace fs = std::filesystem;

namespace hsm {

namespace {

// A page as blocks, rendered twice (Markdown, HTML).
struct Block {
  enum Kind { kHeading, kText, kTable, kFigure, kCode } kind = kText;
  std::string text;                             // heading, paragraph, code; a figure's caption
  std::vector<std::vector<std::string>> rows;   // a table: the header first
  std::string file, svg;                        // a figure; a code block's language in file ("sh" when empty)

  // `{Block::kText, "..."}` and the like, the fields not given empty.
  Block(Kind kind, std::string text = {}, std::vector<std::vector<std::string>> rows = {}, std::string file = {})
      : kind(kind), text(std::move(text)), rows(std::move(rows)), file(std::move(file)) {}
};

std::string fixed(double x, int digits = 3) {
  if (!std::isfinite(x)) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, x);
  return buf;
}

std::string general(double x) {
  if (!std::isfinite(x)) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", x);
  return buf;
}

// A model's short name: a config file's stem, or the preset's name.
std::string model_label(const std::string& model) {
  const fs::path p(model);
  return p.has_extension() ? p.stem().string() : p.filename().string();
}

std::string markdown_cell(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string render_markdown(const std::vector<Block>& blocks) {
  std::ostringstream s;
  for (const Block& b : blocks) {
    switch (b.kind) {
      case Block::kHeading: s << b.text << "\n\n"; break;
      case Block::kText: s << b.text << "\n\n"; break;
      case Block::kCode: s << "```" << (b.file.empty() ? "sh" : b.file) << "\n" << b.text << "\n```\n\n"; break;
      case Block::kFigure: s << "![" << b.text << "](" << b.file << ")\n\n"; break;
      case Block::kTable:
        for (size_t r = 0; r < b.rows.size(); ++r) {
          s << "|";
          for (const std::string& c : b.rows[r]) s << " " << markdown_cell(c) << " |";
          s << "\n";
          if (r == 0) {
            s << "|";
            for (size_t c = 0; c < b.rows[0].size(); ++c) s << "---|";
            s << "\n";
          }
        }
        s << "\n";
        break;
    }
  }
  return s.str();
}

// Markdown's **bold** in a table cell or paragraph as <b> (the only inline markup the blocks use).
std::string html_inline(const std::string& text) {
  std::string e = xml_escape(text), out;
  bool open = false;
  for (size_t i = 0; i < e.size(); ++i) {
    if (e.compare(i, 2, "**") == 0) {
      out += open ? "</b>" : "<b>";
      open = !open;
      ++i;
    } else if (e.compare(i, 1, "`") == 0) {
      const size_t end = e.find('`', i + 1);
      if (end == std::string::npos) {
        out += e[i];
        continue;
      }
      out += "<code>" + e.substr(i + 1, end - i - 1) + "</code>";
      i = end;
    } else {
      out += e[i];
    }
  }
  return out;
}

std::string render_html(const std::string& title, const std::vector<Block>& blocks) {
  std::ostringstream s;
  s << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << xml_escape(title)
    << "</title>\n<style>body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
       "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:3px 8px;text-align:left;"
       "font-size:14px}th{background:#eee}pre{background:#f4f4f4;padding:8px;overflow-x:auto}"
       "figure{margin:1em 0}figcaption{font-size:13px;color:#444}</style></head><body>\n";
  for (const Block& b : blocks) {
    switch (b.kind) {
      case Block::kHeading: {
        const size_t level = std::min<size_t>(6, b.text.find_first_not_of('#'));
        s << "<h" << level << ">" << html_inline(b.text.substr(level + 1)) << "</h" << level << ">\n";
        break;
      }
      case Block::kText: {  // a paragraph; its lines after the first ("- ...") a list
        const std::string html = html_inline(b.text);
        std::string out;
        for (char ch : html) out += ch == '\n' ? std::string("<br>\n") : std::string(1, ch);
        s << "<p>" << out << "</p>\n";
        break;
      }
      case Block::kCode: s << "<pre><code>" << xml_escape(b.text) << "</code></pre>\n"; break;
      case Block::kFigure:
        s << "<figure>\n" << b.svg << "<figcaption>" << html_inline(b.text) << "</figcaption></figure>\n";
        break;
      case Block::kTable:
        s << "<table>\n";
        for (size_t r = 0; r < b.rows.size(); ++r) {
          s << "<tr>";
          for (const std::string& c : b.rows[r]) s << (r == 0 ? "<th>" : "<td>") << html_inline(c) << (r == 0 ? "</th>" : "</td>");
          s << "</tr>\n";
        }
        s << "</table>\n";
        break;
    }
  }
  s << "</body></html>\n";
  return s.str();
}

std::string shell_word(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/._+,=:@-") ==
                        std::string::npos)
    return s;
  return shell_quoted(s);
}

// A converged cell at or above this mean solves its task (the bar for attention on recall).
constexpr double kSolvedLevel = 0.9;

// The verdict cell: mean ± sd (n), the best in bold, a tie, chance and not converged marked.
std::string verdict_text(const LabCell& c) {
  if (c.n == 0) return "unfinished";
  std::string t = fixed(c.answer_accuracy) + (c.n >= 2 ? " ± " + fixed(c.answer_sd) : "") + " (n " +
                  std::to_string(c.n) + ")";
  if (c.best) t = "**" + t + "** best";
  else if (c.tied_with_best) t += " ≈best";
  if (c.at_chance) t += " ○chance";
  if (c.not_converged) t += " ◌not converged";
  if (!c.finished()) t += " (" + std::to_string(c.runs) + "/" + std::to_string(c.expected_runs) + " runs)";
  return t;
}

// A model's name less a trailing "_d<width>" (zoology_attn_d64 -> zoology_attn).
std::string without_width(const std::string& name) {
  const size_t at = name.rfind("_d");
  if (at == std::string::npos || at + 2 == name.size() ||
      name.find_first_not_of("0123456789", at + 2) != std::string::npos)
    return name;
  return name.substr(0, at);
}

struct ModelFamily {
  std::string label;
  std::vector<std::pair<int64_t, size_t>> widths;  // d_model, model index
};

// Models that differ only in d_model (and name) form a family; the lab has a width axis when a
// family has two widths or more.
std::vector<ModelFamily> width_families(const Lab& lab) {
  const LabGrid& g = lab.grid();
  std::map<std::string, ModelFamily> by_key;
  std::vector<std::string> order;
  for (size_t m = 0; m < g.models.size(); ++m) {
    const auto point = std::find_if(lab.sweep().points.begin(), lab.sweep().points.end(),
                                    [&](const SweepPoint& p) { return p.model_source == g.models[m]; });
    if (point == lab.sweep().points.end()) continue;
    std::string key;
    for (const LayerSpec& l : point->model.layers)
      key += l.mixer + "/" + std::to_string(l.ffn) + "/" + std::to_string(l.heads) + ";";
    key += point->model.init;
    if (!by_key.count(key)) {
      order.push_back(key);
      by_key[key].label = without_width(model_label(g.models[m]));
    }
    by_key[key].widths.emplace_back(point->model.d_model, m);
  }
  std::vector<ModelFamily> families;
  bool axis = false;
  for (const std::string& k : order) {
    ModelFamily f = by_key[k];
    std::sort(f.widths.begin(), f.widths.end());
    std::set<int64_t> distinct;
    for (const auto& w : f.widths) distinct.insert(w.first);
    axis = axis || distinct.size() >= 2;
    families.push_back(f);
  }
  return axis ? families : std::vector<ModelFamily>{};
}

}  // namespace

std::string task_title(const std::string& spec) {
  const auto t = parse_task(spec);
  std::string title = t->name();
  std::replace(title.begin(), title.end(), '_', ' ');  // "in context recall", not the CLI's name
  if (t->name() == "mqar")
    title += " context " + std::to_string(t->get("context")) + ", " + std::to_string(t->get("pairs")) + " pairs";
  return title;
}

namespace {

// The point that trains `model` on `task` (its model at the task's shape), or null.
const SweepPoint* point_of(const Lab& lab, const std::string& task, const std::string& model) {
  for (const SweepPoint& p : lab.sweep().points)
    if (p.task == task && p.model_source == model) return &p;
  return nullptr;
}

}  // namespace

std::vector<LabDistancePanel> lab_distance_panels(const Lab& lab, const std::vector<LabCell>& cells,
                                                  const std::vector<LabRun>& runs) {
  const LabGrid& g = lab.grid();
  const size_t M = g.models.size();
  std::vector<LabDistancePanel> panels;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    const auto task = parse_task(g.tasks[t]);
    if (!task->answers_carry_distance()) continue;
    LabDistancePanel d;
    d.task = g.tasks[t];
    d.panel.title = task_title(g.tasks[t]);
    d.panel.x_label = "key–query distance";
    d.panel.y_label = "test answer accuracy";
    d.panel.lines = {{task->chance(), "chance " + general(task->chance())}};
    int64_t farthest = 0;
    for (size_t m = 0; m < M; ++m) {
      const LabCell& c = cells[t * M + m];
      LabDistanceSeries ser;
      ser.model = g.models[m];
      // The cell's runs at its best learning rate (and weight decay), pooled over their seeds.
      for (const LabRun& r : runs)
        if (r.task == d.task && r.model == ser.model && c.n > 0 && r.lr == c.best_lr &&
            r.weight_decay == c.best_weight_decay)
          for (const auto& [dist, n] : r.score.by_difficulty) {
            ser.counts[dist].first += n.first;
            ser.counts[dist].second += n.second;
          }
      if (!ser.counts.empty()) farthest = std::max(farthest, ser.counts.rbegin()->first);
      if (const SweepPoint* p = point_of(lab, d.task, ser.model)) ser.reach = model_reach(p->model);
      d.series.push_back(ser);
    }
    if (farthest == 0) continue;  // no run scored yet
    for (size_t m = 0; m < M; ++m) {
      const LabDistanceSeries& ser = d.series[m];
      SvgSeries line;
      line.label = model_label(ser.model);
      line.colour = static_cast<int>(m);
      for (const auto& [dist, n] : ser.counts) {
        line.x.push_back(static_cast<double>(dist));
        line.y.push_back(n.second > 0 ? static_cast<double>(n.first) / static_cast<double>(n.second) : NAN);
      }
      d.panel.series.push_back(line);
      // A reach inside the distances drawn: keys further back than it never reach the query.
      if (ser.reach >= 0 && ser.reach < farthest)
        d.panel.vlines.push_back({static_cast<double>(ser.reach),
                                  model_label(ser.model) + " reaches " + std::to_string(ser.reach) + " back",
                                  static_cast<int>(m)});
    }
    panels.push_back(std::move(d));
  }
  return panels;
}

namespace {

// The grid's task indices by task name, in first-seen order.
std::vector<std::pair<std::string, std::vector<size_t>>> task_families(const LabGrid& g) {
  std::vector<std::pair<std::string, std::vector<size_t>>> families;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    const std::string name = parse_task(g.tasks[t])->name();
    auto f = std::find_if(families.begin(), families.end(), [&](const auto& x) { return x.first == name; });
    if (f == families.end()) families.push_back({name, {t}});
    else f->second.push_back(t);
  }
  return families;
}

std::map<std::string, int64_t> settings_of(const std::string& spec) {
  std::map<std::string, int64_t> out;
  const auto task = parse_task(spec);
  for (const TaskSetting& s : task->settings())
    if (s.key != "seed") out[s.key] = s.value;
  return out;
}

}  // namespace

std::vector<LabDifficultyPanel> lab_difficulty_panels(const Lab& lab, const std::vector<LabCell>& cells) {
  const LabGrid& g = lab.grid();
  const size_t M = g.models.size();
  std::vector<LabDifficultyPanel> panels;
  for (const auto& [family, tasks] : task_families(g)) {
    if (tasks.size() < 2) continue;
    const std::map<std::string, int64_t> base = settings_of(g.tasks[tasks[0]]);
    std::vector<std::string> keys;                        // changed settings, first-seen order
    std::map<std::string, std::vector<size_t>> changed;  // setting -> tasks changing it alone
    for (size_t i = 1; i < tasks.size(); ++i) {
      std::vector<std::string> differ;
      for (const auto& [k, v] : settings_of(g.tasks[tasks[i]]))
        if (!base.count(k) || base.at(k) != v) differ.push_back(k);
      if (differ.size() != 1) continue;
      if (!changed.count(differ[0])) keys.push_back(differ[0]);
      changed[differ[0]].push_back(tasks[i]);
    }
    for (const std::string& key : keys) {
      LabDifficultyPanel d;
      d.family = family;
      d.setting = key;
      std::vector<std::pair<int64_t, size_t>> points = {{base.at(key), tasks[0]}};
      for (size_t t : changed[key]) points.emplace_back(settings_of(g.tasks[t]).at(key), t);
      std::sort(points.begin(), points.end());
      for (const auto& [v, t] : points) {
        d.values.push_back(v);
        d.tasks.push_back(t);
      }
      d.panel.title = family + ": " + key;
      d.panel.x_label = key;
      d.panel.y_label = "test answer accuracy";
      d.panel.log_x = d.values.front() > 0 && d.values.back() >= 4 * d.values.front();
      const auto base_task = parse_task(g.tasks[tasks[0]]);
      d.panel.lines = {{base_task->chance(), "chance " + general(base_task->chance()) + " (baseline)"}};
      for (size_t m = 0; m < M; ++m) {
        SvgSeries ser;
        ser.label = model_label(g.models[m]);
        ser.colour = static_cast<int>(m);
        for (size_t i = 0; i < d.tasks.size(); ++i) {
          const LabCell& c = cells[d.tasks[i] * M + m];
          ser.x.push_back(static_cast<double>(d.values[i]));
          ser.y.push_back(c.answer_accuracy);
          ser.err.push_back(c.answer_sd);
        }
        d.panel.series.push_back(ser);
      }
      panels.push_back(std::move(d));
    }
  }
  return panels;
}

std::vector<LabFamilyScore> lab_family_scores(const Lab& lab, const std::vector<LabCell>& cells) {
  const LabGrid& g = lab.grid();
  const size_t M = g.models.size();
  std::vector<LabFamilyScore> scores;
  for (const auto& [family, tasks] : task_families(g))
    for (size_t m = 0; m < M; ++m) {
      LabFamilyScore f;
      f.family = family;
      f.model = g.models[m];
      f.settings = static_cast<int64_t>(tasks.size());
      double sum = 0;
      for (size_t t : tasks)
        if (cells[t * M + m].n > 0) {
          sum += cells[t * M + m].answer_accuracy;
          ++f.scored;
        }
      if (f.scored == f.settings) f.mean = sum / static_cast<double>(f.settings);
      scores.push_back(f);
    }
  return scores;
}

namespace {

// ---- The report's steps, in the order of the page (lab_report below reads as their list). Each
// appends its blocks; the figures also go to the report's files.

// What every step reads: the lab, its table and its scored runs, read once.
struct ReportInput {
  const Lab& lab;
  std::vector<std::string> warnings;  // the table's: damaged points, named
  std::vector<LabCell> cells;
  std::vector<LabRun> runs;
  std::vector<std::string> labels;    // the models' short names, in the grid's order
  // Each run's series over training (hsm/formation.h's light reader), by run folder; a run whose
  // traces.jsonl could not be read has its complaint in formation_problems instead.
  std::map<std::string, Formation> formations;
  std::map<std::string, std::string> formation_problems;
  const LabCell& cell(size_t t, size_t m) const { return cells[t * labels.size() + m]; }
};

ReportInput read_report_input(const Lab& lab) {
  ReportInput in{lab, {}, {}, {}, {}, {}, {}};
  in.cells = lab.table(&in.warnings);
  in.runs = lab.results();
  for (const std::string& m : lab.grid().models) in.labels.push_back(model_label(m));
  for (const LabRun& r : in.runs) {
    try {
      in.formations[r.run_dir] = run_formation(r.run_dir);
    } catch (const std::exception& e) {
      in.formation_problems[r.run_dir] = e.what();
    }
  }
  return in;
}

// A figure: its SVG kept as a file of the report and drawn in the page.
struct FigureSink {
  LabReport& report;
  const std::string& stem;
  std::vector<Block>& b;
  void add(const std::string& name, const std::string& caption, const std::string& svg) {
    const std::string file = stem + "-" + name + ".svg";
    report.figures.emplace_back(file, svg);
    Block f{Block::kFigure, caption};
    f.file = file;
    f.svg = svg;
    b.push_back(f);
  }
};

// The title, how much of the lab is scored, and the table's warnings.
void add_header(const ReportInput& in, const std::string& title, const std::string& version, std::vector<Block>& b) {
  const Lab& lab = in.lab;
  const LabGrid& g = lab.grid();
  const std::vector<LabCell>& cells = in.cells;
  const std::vector<LabRun>& runs = in.runs;
  b.push_back({Block::kHeading, "# " + title});
  int64_t finished = 0;
  for (const LabCell& c : cells) finished += c.finished() ? 1 : 0;
  b.push_back({Block::kText, "hsm " + version + ". " + std::to_string(runs.size()) + " of " +
                                 std::to_string(lab_run_count(g)) + " runs scored; " + std::to_string(finished) +
                                 " of " + std::to_string(cells.size()) + " cells finished." +
                                 (g.protocol.empty() ? "" : " Protocol: **" + g.protocol + "**.")});
  for (const std::string& w : in.warnings) b.push_back({Block::kText, "Warning: " + w});
}

// The verdict: the table of cells with their marks, each cell's details, what it claims, and the
// evidence of the cells that did not converge.
void add_verdict(const ReportInput& in, std::vector<Block>& b) {
  const Lab& lab = in.lab;
  const LabGrid& g = lab.grid();
  const std::vector<LabCell>& cells = in.cells;
  const std::vector<std::string>& labels = in.labels;
  const size_t M = g.models.size();
  auto cell = [&](size_t t, size_t m) -> const LabCell& { return in.cell(t, m); };
  const bool wd_axis = !g.weight_decays.empty();
  b.push_back({Block::kHeading, "## The verdict"});
  b.push_back({Block::kText,
               "Test answer accuracy per task and model at the model's best learning rate" +
                   std::string(wd_axis ? " and weight decay (the setting" : " (the rate") +
                   " whose mean over seeds is highest; MAD's rule), as mean ± sample standard deviation over the seeds (n seeds). **Bold**: the "
               "row's best. ≈best: not distinguishable from the row's best (one-sided Welch's t-test over seeds, or "
               "with fewer than two seeds a two-proportion z-test on the pooled test answers; p ≥ " +
                   general(kTieAlpha) + "). ○chance: not distinguishable from the task's chance rate (one-sided exact "
               "binomial test of the pooled test answers at the best rate; p ≥ " + general(kChanceAlpha) +
                   " / " + std::to_string(lab_optimiser_settings(g)) +
                   (wd_axis ? " settings of learning rate x weight decay" : " learning rate(s)") +
                   "). ◌not converged: a run at the cell's best setting ended by the stall rule on a plateau, or "
               "ran all its steps with its validation accuracy still rising (by " + general(kRisingGain) +
               " or more over its last window); such a cell answers neither \"can\" nor \"cannot\" (the "
               "evidence below). Best learning rate per cell below."});
  Block verdict{Block::kTable};
  std::vector<std::string> header = {"task", "chance"};
  header.insert(header.end(), labels.begin(), labels.end());
  verdict.rows.push_back(header);
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    std::vector<std::string> row = {g.tasks[t], general(cell(t, 0).chance)};
    for (size_t m = 0; m < M; ++m) row.push_back(verdict_text(cell(t, m)));
    verdict.rows.push_back(row);
  }
  b.push_back(verdict);
  Block detail{Block::kTable};
  detail.rows.push_back({"task", "model", "best lr", "best wd", "mean", "sd", "n", "right / answers", "p (> chance)", "at chance",
                         "test vs best", "p (best > it)", "tied with best", "not converged"});
  for (const LabCell& c : cells) {
    if (c.n == 0) {
      detail.rows.push_back({c.task, model_label(c.model), "unfinished", "", "", "", "0", "", "", "", "", "", "", ""});
      continue;
    }
    detail.rows.push_back({c.task, model_label(c.model), exact_number_text(c.best_lr),
                           exact_number_text(c.best_weight_decay), fixed(c.answer_accuracy, 4),
                           fixed(c.answer_sd, 4), std::to_string(c.n),
                           std::to_string(c.right) + " / " + std::to_string(c.answers), general(c.p_above_chance),
                           c.at_chance ? "yes" : "no", c.best ? "(best)" : c.tie_test, general(c.p_below_best),
                           c.tied_with_best ? "yes" : "no", c.not_converged ? "yes" : "no"});
  }
  b.push_back(detail);
  // What the verdict claims, per task: a capability only from converged cells.
  std::string claims;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    std::string solved, unsolved, open;
    for (size_t m = 0; m < M; ++m) {
      const LabCell& c = cell(t, m);
      if (c.n == 0) continue;
      std::string& into = c.not_converged ? open : c.answer_accuracy >= kSolvedLevel ? solved : unsolved;
      into += (into.empty() ? "" : ", ") + labels[m];
    }
    claims += "\n- `" + g.tasks[t] + "`: solved (≥ " + general(kSolvedLevel) + ", converged) by " +
              (solved.empty() ? "none" : solved) + "; not solved by " + (unsolved.empty() ? "none" : unsolved) +
              (open.empty() ? "" : "; no answer from " + open + " (not converged)");
  }
  b.push_back({Block::kText, "What the verdict claims: a model solves a task when its cell's mean is at least " +
                                 general(kSolvedLevel) + " and the cell converged; a converged cell below it does not, "
                                 "at this budget; a not-converged cell claims nothing." + claims});
  std::string evidence;
  for (const LabCell& c : cells)
    for (const std::string& e : c.not_converged_evidence)
      evidence += "\n- `" + c.task + "` × " + model_label(c.model) + ", " + e;
  if (!evidence.empty())
    b.push_back({Block::kText, "Not converged, the evidence (each run at the cell's best setting that stalled or "
                               "was still rising):" + evidence});
}

// Accuracy per task and model (bars) and against the learning rate (lines).
void add_accuracy_figures(const ReportInput& in, FigureSink& fig) {
  const Lab& lab = in.lab;
  const LabGrid& g = lab.grid();
  const std::vector<LabRun>& runs = in.runs;
  const std::vector<std::string>& labels = in.labels;
  const size_t M = g.models.size();
  auto cell = [&](size_t t, size_t m) -> const LabCell& { return in.cell(t, m); };
  const bool wd_axis = !g.weight_decays.empty();
  std::vector<SvgPanel> bars, lr_panels;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    const double chance = cell(t, 0).chance;
    SvgPanel p;
    p.title = task_title(g.tasks[t]);
    p.y_label = "test answer accuracy";
    p.categories = labels;
    p.lines = {{chance, "chance " + general(chance)}};
    SvgSeries s;
    s.label = "mean over seeds at the best lr";
    for (size_t m = 0; m < M; ++m) {
      s.y.push_back(cell(t, m).answer_accuracy);
      s.err.push_back(cell(t, m).answer_sd);
    }
    p.series = {s};
    bars.push_back(p);

    SvgPanel l;
    l.title = p.title;
    l.x_label = "learning rate";
    l.y_label = "test answer accuracy";
    l.log_x = true;
    l.lines = p.lines;
    // With a weight-decay axis, a line per model and weight decay.
    const std::vector<double> wds = wd_axis ? g.weight_decays : std::vector<double>{0.0};
    for (size_t m = 0; m < M; ++m)
      for (double wd : wds) {
        SvgSeries ser;
        ser.label = labels[m] + (wd_axis ? ", wd " + exact_number_text(wd) : "");
        ser.colour = static_cast<int>(l.series.size());
        for (double lr : g.lrs) {
          std::vector<double> acc;
          for (const LabRun& r : runs)
            if (r.task == g.tasks[t] && r.model == g.models[m] && r.lr == lr && r.weight_decay == wd)
              acc.push_back(r.score.answer_accuracy);
          const SeedStats st = seed_stats(acc);
          ser.x.push_back(lr);
          ser.y.push_back(st.mean);
          ser.err.push_back(st.sd);
        }
        l.series.push_back(ser);
      }
    lr_panels.push_back(l);
  }
  fig.add("accuracy", "Test answer accuracy per task and model (mean over seeds at the best learning rate, bars: ± "
             "sd; dashed: the task's chance rate)",
             svg_figure("Answer accuracy per task", bars, 3, 320, 240));
  fig.add("lr", "Test answer accuracy against the learning rate (mean over seeds, bars: ± sd; dashed: chance)",
             svg_figure("Accuracy against learning rate", lr_panels, 3));
}

// Accuracy against key-query distance with each model's reach, and its numbers.
void add_distance_figure(const ReportInput& in, FigureSink& fig, std::vector<Block>& b) {
  const Lab& lab = in.lab;
  const std::vector<LabCell>& cells = in.cells;
  const std::vector<LabRun>& runs = in.runs;
  const std::vector<LabDistancePanel> distance = lab_distance_panels(lab, cells, runs);
  if (!distance.empty()) {
    std::vector<SvgPanel> panels;
    for (const LabDistancePanel& d : distance) panels.push_back(d.panel);
    fig.add("distance", "Test answer accuracy against key–query distance (the answers of the best learning rate's "
               "runs, pooled over seeds), one line per model; dashed vertical: a model's reach, the farthest offset "
               "its receptive field carries to the query (model_reach: a 4-layer hsm_ab shifts by 1, 2, 4 and 8, "
               "15 back); a model that reaches every distance has none. The answer's value sits one position after "
               "its key. Dashed horizontal: chance",
               svg_figure("Accuracy against key–query distance", panels, 2, 420, 260));
    for (const LabDistancePanel& d : distance) {
      Block table{Block::kTable};
      std::vector<std::string> header = {"distance"};
      for (const LabDistanceSeries& ser : d.series)
        header.push_back(model_label(ser.model) + " (reach " + std::to_string(ser.reach) + ")");
      table.rows.push_back(header);
      std::set<int64_t> all;
      for (const LabDistanceSeries& ser : d.series)
        for (const auto& [dist, n] : ser.counts) all.insert(dist);
      for (int64_t dist : all) {
        std::vector<std::string> row = {std::to_string(dist)};
        for (const LabDistanceSeries& ser : d.series) {
          const auto n = ser.counts.find(dist);
          row.push_back(n == ser.counts.end() || n->second.second == 0
                            ? "–"
                            : fixed(static_cast<double>(n->second.first) / static_cast<double>(n->second.second)) +
                                  " (" + std::to_string(n->second.first) + " / " + std::to_string(n->second.second) + ")");
        }
        table.rows.push_back(row);
      }
      b.push_back({Block::kText, "The distance figure's numbers for `" + d.task + "`: accuracy (right / answers) per "
                                 "key–query distance, pooled over the seeds at each cell's best learning rate:"});
      b.push_back(table);
    }
  }
}

// MAD's figure (accuracy against each difficulty setting) and MAD's score per task.
void add_difficulty_figure(const ReportInput& in, FigureSink& fig, std::vector<Block>& b) {
  const Lab& lab = in.lab;
  const LabGrid& g = lab.grid();
  const std::vector<LabCell>& cells = in.cells;
  const std::vector<std::string>& labels = in.labels;
  const size_t M = g.models.size();
  const bool wd_axis = !g.weight_decays.empty();
  const std::vector<LabDifficultyPanel> difficulty = lab_difficulty_panels(lab, cells);
  if (!difficulty.empty()) {
    std::vector<SvgPanel> panels;
    for (const LabDifficultyPanel& d : difficulty) panels.push_back(d.panel);
    fig.add("difficulty", "Test answer accuracy against each task's difficulty setting, one line per model (MAD's "
               "figure: each point a task setting that changes one setting of the task's first, its baseline; the "
               "cell's best learning rate" + std::string(wd_axis ? " and weight decay" : "") +
               "; bars: ± sd over seeds; dashed: the baseline's chance)",
               svg_figure("Accuracy against task difficulty", panels, 3, 320, 240));
  }
  // MAD's score: per task, the mean over its settings (when the lab sweeps a task's difficulty).
  if (!difficulty.empty()) {
    b.push_back({Block::kText, "Per task, the mean over its settings in this lab of each cell's mean answer accuracy "
                               "(MAD's score; the settings as listed under \"The exact settings\"):"});
    Block scores{Block::kTable};
    std::vector<std::string> head = {"task", "settings"};
    head.insert(head.end(), labels.begin(), labels.end());
    scores.rows.push_back(head);
    const std::vector<LabFamilyScore> fam = lab_family_scores(lab, cells);
    for (size_t i = 0; i < fam.size(); i += M) {
      std::vector<std::string> row = {fam[i].family, std::to_string(fam[i].settings)};
      for (size_t m = 0; m < M; ++m)
        row.push_back(std::isfinite(fam[i + m].mean) ? fixed(fam[i + m].mean)
                                                    : "unfinished (" + std::to_string(fam[i + m].scored) + "/" +
                                                          std::to_string(fam[i + m].settings) + ")");
      scores.rows.push_back(row);
    }
    b.push_back(scores);
  }
}

// Zoology's figure: accuracy against model width, when the lab has a width axis.
void add_width_figure(const ReportInput& in, FigureSink& fig) {
  const Lab& lab = in.lab;
  const LabGrid& g = lab.grid();
  auto cell = [&](size_t t, size_t m) -> const LabCell& { return in.cell(t, m); };
  const std::vector<ModelFamily> families = width_families(lab);
  if (!families.empty()) {
    std::vector<SvgPanel> width_panels;
    for (size_t t = 0; t < g.tasks.size(); ++t) {
      SvgPanel w;
      w.title = task_title(g.tasks[t]);
      w.x_label = "model width (d_model)";
      w.y_label = "test answer accuracy";
      w.log_x = true;
      w.lines = {{cell(t, 0).chance, "chance " + general(cell(t, 0).chance)}};
      for (size_t f = 0; f < families.size(); ++f) {
        SvgSeries ser;
        ser.label = families[f].label;
        ser.colour = static_cast<int>(f);
        for (const auto& [d, m] : families[f].widths) {
          ser.x.push_back(static_cast<double>(d));
          ser.y.push_back(cell(t, m).answer_accuracy);
          ser.err.push_back(cell(t, m).answer_sd);
        }
        w.series.push_back(ser);
      }
      width_panels.push_back(w);
    }
    fig.add("width", "Test answer accuracy against model width, one line per mixer, one panel per task (Zoology "
               "Fig. 2's shape; best learning rate per point; dashed: chance)",
               svg_figure("Accuracy against model width", width_panels, 2, 360, 250));
  }
}

// The formation figure (issue 67): per task, the route share from the corrupted key over the steps
// of each run at its cell's best setting that recorded traces, a line per run coloured by model, its
// formed step marked; nothing when no run recorded any.
void add_formation_figure(const ReportInput& in, FigureSink& fig) {
  const LabGrid& g = in.lab.grid();
  std::vector<SvgPanel> panels;
  for (size_t t = 0; t < g.tasks.size(); ++t) {
    SvgPanel p;
    p.title = task_title(g.tasks[t]);
    p.x_label = "step";
    p.y_label = "route share from the key";
    p.lines = {{FormationRule{}.share_threshold, "threshold " + general(FormationRule{}.share_threshold)}};
    for (size_t m = 0; m < g.models.size(); ++m) {
      const LabCell& c = in.cell(t, m);
      std::map<int64_t, std::vector<int64_t>> formed;  // step -> the seeds whose route formed then
      for (const LabRun& r : in.runs) {
        if (r.task != g.tasks[t] || r.model != g.models[m] || r.lr != c.best_lr || r.weight_decay != c.best_weight_decay)
          continue;
        auto f = in.formations.find(r.run_dir);
        if (f == in.formations.end() || f->second.points.empty()) continue;
        SvgSeries s;
        s.label = in.labels[m];
        s.colour = static_cast<int>(m);
        for (const FormationPoint& point : f->second.points) {
          s.x.push_back(static_cast<double>(point.step));
          s.y.push_back(point.route_share);
        }
        p.series.push_back(s);
        if (f->second.formed_step >= 0) formed[f->second.formed_step].push_back(r.seed);
      }
      // One line a model and step (seeds that formed at the same step share it, one label).
      for (const auto& [step, seeds] : formed) {
        std::string names;
        for (int64_t seed : seeds) names += (names.empty() ? "" : ", ") + std::to_string(seed);
        p.vlines.push_back({static_cast<double>(step),
                            in.labels[m] + " formed at " + std::to_string(step) + " (seed" +
                                (seeds.size() > 1 ? "s " : " ") + names + ")",
                            static_cast<int>(m)});
      }
    }
    if (!p.series.empty()) panels.push_back(p);
  }
  if (panels.empty()) return;
  fig.add("formation", "When a route from the key formed: the share of the answer's information flow that starts at "
                       "the corrupted key (the traces each run recorded at its validations, `hsm trace RUN "
                       "--over-training`), one line per run at its cell's best learning rate, coloured by model; "
                       "dashed vertical: the step from which a run's share stayed at or above the threshold "
                       "(dashed horizontal), its route formed",
          svg_figure("Route share from the key over training", panels, 2, 420, 260));
}

// The training settings as a table (issue 69): each setting by its label and flag, as declared once
// for the CLI and the studio's form (hsm/settings.h), and its value in words; a key no setting
// declares is shown by its name.
Block train_settings_table(const nlohmann::json& train) {
  Block t{Block::kTable};
  t.rows.push_back({"setting", "flag", "value"});
  for (const auto& [key, value] : train.items()) {
    std::string label = key, flag;
    try {
      const SettingSpec& spec = train_setting(key);
      label = spec.label;
      flag = std::string("`") + spec.flag + "`";
    } catch (const std::invalid_argument&) {
    }
    std::string text = value.is_string()    ? value.get<std::string>()
                       : value.is_boolean() ? (value.get<bool>() ? "on" : "off")
                       : value.is_number_integer() ? value.dump()
                       : value.is_number()  ? exact_number_text(value.get<double>())
                                            : value.dump();
    t.rows.push_back({label, flag, text.empty() ? "–" : text});
  }
  return t;
}

// A model's layers in words, runs of equal layers counted: "hsm_ab (heads 1, FFN 1), 2 × attn
// (heads 1, FFN 1), hsm_ab (heads 1, FFN 1)".
std::string layers_text(const std::vector<LayerSpec>& layers) {
  std::string out;
  for (size_t i = 0; i < layers.size();) {
    size_t n = 1;
    while (i + n < layers.size() && layers[i + n] == layers[i]) ++n;
    out += (out.empty() ? "" : ", ") + (n > 1 ? std::to_string(n) + " × " : std::string()) + layers[i].mixer +
           " (heads " + std::to_string(layers[i].heads) + ", FFN " + std::to_string(layers[i].ffn) + ")";
    i += n;
  }
  return out;
}

// The exact settings: the grid, the tasks, the training settings and the models, as settings.
void add_settings(const ReportInput& in, const std::string& version, std::vector<Block>& b) {
  const Lab& lab = in.lab;
  const LabGrid& g = lab.grid();
  const std::vector<std::string>& labels = in.labels;
  const size_t M = g.models.size();
  const bool wd_axis = !g.weight_decays.empty();
  // ---- The settings.
  b.push_back({Block::kHeading, "## The exact settings"});
  const nlohmann::json spec = nlohmann::json::parse(lab.sweep().spec_json);
  auto list = [](const std::vector<double>& v) {
    std::string out;
    for (double x : v) out += (out.empty() ? "" : ", ") + exact_number_text(x);
    return out;
  };
  const std::string size_text = g.size == "lab"    ? "at lab size (`--size lab`: d 64, up to 4 layers, one head, no MLP)"
                                : g.size == "tiny" ? "at tiny size (`--size tiny`)"
                                                   : "as given";
  // How a run may end before its steps: done at the accuracy, or done because it stopped learning.
  std::string early_stops;
  if (g.stop_accuracy > 0) early_stops = "at the first validation at " + general(g.stop_accuracy) + " answer accuracy";
  if (g.stop_stall_steps > 0)
    early_stops += (early_stops.empty() ? "" : ", or ") + std::string("when its best validation loss fell by less than ") +
                   general(100 * g.stop_stall_gain) + " % over " + std::to_string(g.stop_stall_steps) +
                   " steps (stalled; each run's steps are in the table below)";
  if (!early_stops.empty()) early_stops = ", each ending early " + early_stops;
  b.push_back({Block::kText, "hsm " + version + "; " + std::to_string(g.tasks.size()) + " task(s) x " +
                                 std::to_string(M) + " model(s) x learning rates {" + list(g.lrs) + "} x " +
                                 (wd_axis ? "weight decays {" + list(g.weight_decays) + "} x " : "") + "seeds 1.." +
                                 std::to_string(g.seeds) + " = " + std::to_string(lab_run_count(g)) + " runs of " +
                                 std::to_string(g.steps) + " steps of " + std::to_string(g.batch) +
                                 " examples" +
                                 early_stops +
                                 "; models " + size_text + "; each run scored on " + std::to_string(g.test_examples) +
                                 " fresh test examples; device " + g.device + "."});
  Block tasks{Block::kTable};
  tasks.rows.push_back({"task", "every setting", "answer tokens", "chance"});
  for (const std::string& t : g.tasks) {
    const auto task = parse_task(t);
    tasks.rows.push_back({t, task->spec(), std::to_string(task->answer_tokens()), general(task->chance())});
  }
  b.push_back(tasks);
  b.push_back({Block::kText, "Training settings of every run (the grid spec's `train`; each run's learning rate "
                             "decays to " + general(lab.sweep().min_lr_fraction) + " of it):"});
  b.push_back(train_settings_table(spec.value("train", nlohmann::json::object())));
  b.push_back({Block::kText, "The models as every run built them (the first task's vocabulary and context; each task's "
                             "own are taken), from the snapshot in `sweep.json`:"});
  Block models{Block::kTable};
  models.rows.push_back({"model", "layers", "d_model", "vocabulary", "context", "dropout", "init"});
  for (size_t m = 0; m < M; ++m) {
    const auto point = std::find_if(lab.sweep().points.begin(), lab.sweep().points.end(),
                                    [&](const SweepPoint& p) { return p.model_source == g.models[m]; });
    if (point == lab.sweep().points.end()) continue;
    const ModelConfig& c = point->model;
    models.rows.push_back({labels[m], layers_text(c.layers), std::to_string(c.d_model), std::to_string(c.vocab_size),
                           std::to_string(c.context), exact_number_text(c.dropout), c.init});
  }
  b.push_back(models);
}

// When the run's route from the key formed and when its accuracy jumped, from the traces it
// recorded while it trained (hsm/formation.h, issue 67): "–" for a run without them (a lab made
// before they were recorded) and the reader's complaint for a damaged log.
std::string mechanism_text(const ReportInput& in, const std::string& run_dir) {
  if (auto p = in.formation_problems.find(run_dir); p != in.formation_problems.end())
    return "traces unreadable: " + p->second;
  auto f = in.formations.find(run_dir);
  return f == in.formations.end() || f->second.points.empty() ? "–" : f->second.summary();
}

// Each run's score, how its training ended and when its mechanism formed.
void add_each_run(const ReportInput& in, std::vector<Block>& b) {
  const std::vector<LabRun>& runs = in.runs;
  // ---- Each run.
  b.push_back({Block::kHeading, "## Each run's score"});
  b.push_back({Block::kText, "From `points/NAME.json` (the run's score on its fresh test examples)."});
  Block each{Block::kTable};
  each.rows.push_back({"run", "task", "model", "lr", "seed", "answer accuracy", "sequence accuracy", "answers",
                       "examples", "steps", "ended", "mechanism"});
  for (const LabRun& r : runs)
    each.rows.push_back({fs::path(r.run_dir).filename().string(), r.task, model_label(r.model), exact_number_text(r.lr),
                         std::to_string(r.seed), exact_number_text(r.score.answer_accuracy),
                         exact_number_text(r.score.sequence_accuracy), std::to_string(r.score.answers),
                         std::to_string(r.score.examples), std::to_string(r.steps),
                         r.convergence.state == "unknown"
                             ? "–"
                             : r.convergence.state + " at step " + std::to_string(r.convergence.last_step),
                         mechanism_text(in, r.run_dir)});
  b.push_back(each);
}

// The command that reruns the lab.
void add_rerun(const ReportInput& in, std::vector<Block>& b) {
  const Lab& lab = in.lab;
  const LabGrid& g = lab.grid();
  // ---- How to rerun it.
  b.push_back({Block::kHeading, "## How to rerun it"});
  std::string cmd = "hsm lab --out NEW_LAB";
  if (!g.protocol.empty()) {
    cmd += " --protocol " + g.protocol;
  } else {
    for (const std::string& t : g.tasks) cmd += " \\\n  --task " + shell_word(t);
    for (const std::string& m : g.models) cmd += " \\\n  --model " + shell_word(m);
    for (double lr : g.lrs) cmd += " --lr " + exact_number_text(lr);
    for (double wd : g.weight_decays) cmd += " --weight-decay " + exact_number_text(wd);
    cmd += " \\\n  --seeds " + std::to_string(g.seeds) + " --steps " + std::to_string(g.steps) + " --batch " +
           std::to_string(g.batch) + " --size " + g.size + " --test-examples " + std::to_string(g.test_examples) +
           " --stop-accuracy " + exact_number_text(g.stop_accuracy) + " \\\n  --stop-stall-steps " +
           std::to_string(g.stop_stall_steps) + " --stop-stall-gain " + exact_number_text(g.stop_stall_gain) +
           " --device " + g.device;
  }
  cmd += "\nhsm lab report NEW_LAB";
  b.push_back({Block::kCode, cmd});
  b.push_back({Block::kText, "A model given as a config file is read when the lab is made; the configs this lab "
                             "trained are kept in `" + (fs::path(lab.dir()) / "sweep.json").string() +
                             "` (`model_configs`). `hsm lab --out " + lab.dir() + "` continues this lab."});
}

}  // namespace

LabReport lab_report(const Lab& lab, const std::string& figure_stem, const std::string& version) {
  const ReportInput in = read_report_input(lab);
  const std::string title = "Lab report: " + fs::path(lab.dir()).filename().string();
  LabReport report;
  std::vector<Block> b;
  FigureSink fig{report, figure_stem, b};
  add_header(in, title, version, b);
  add_verdict(in, b);
  b.push_back({Block::kHeading, "## Figures"});
  add_accuracy_figures(in, fig);
  add_distance_figure(in, fig, b);
  add_difficulty_figure(in, fig, b);
  add_width_figure(in, fig);
  add_formation_figure(in, fig);
  add_settings(in, version, b);
  add_each_run(in, b);
  add_rerun(in, b);
  report.markdown = render_markdown(b);
  report.html = render_html(title, b);
  return report;
}

std::vector<std::pair<std::string, std::string>> lab_report_files(const Lab& lab, const std::string& markdown_path,
                                                                   const std::string& version) {
  const std::filesystem::path md(markdown_path);
  const std::string stem = md.stem().string();
  const LabReport report = lab_report(lab, stem, version);
  std::vector<std::pair<std::string, std::string>> files = {
      {markdown_path, report.markdown}, {(md.parent_path() / (stem + ".html")).string(), report.html}};
  for (const auto& [name, svg] : report.figures) files.emplace_back((md.parent_path() / name).string(), svg);
  return files;
}

}  // namespace hsm
