#pragma once
// `hsm lab report DIR` (issue 50; docs/lab.md, "The report"): one self-contained page of a lab's
// answer, in Markdown and in HTML — the verdict table (task x model: mean ± sd over seeds at the
// best learning rate, the row's best and the cells tied with it marked, cells at chance marked),
// the figures (SVG: answer accuracy per task per model with the chance line; accuracy against
// learning rate; MQAR accuracy against model width when the lab has a width axis), the exact
// settings (as settings: each by its label and flag, hsm/settings.h), each run's score and how its
// training ended, and the command that reruns it. lab_report() reads as the list of those steps
// (lab_report.cpp, "The report's steps"). Plain C++.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "hsm/lab.h"
#include "hsm/svg_plot.h"

namespace hsm {

struct LabReport {
  std::string markdown;  // refers to the figures by file name (figure_stem-NAME.svg beside it)
  std::string html;      // the figures inline: one file
  std::vector<std::pair<std::string, std::string>> figures;  // file name -> SVG text
};

// The figure "accuracy against key-query distance" (issue 50: the why of hsm_ab's edge): one
// panel per task whose answers carry a distance (Task::answers_carry_distance: recall_at, mqar),
// one line per model, its runs at the cell's best learning rate (and weight decay) pooled over
// seeds; each model's reach (model_reach of its point's model) a dashed vertical line in its
// colour when it lies inside the distances drawn. Tasks with no scored run yet have no panel.
struct LabDistanceSeries {
  std::string model;
  std::map<int64_t, std::pair<int64_t, int64_t>> counts;  // distance -> (right, answers)
  int64_t reach = -1;                                      // model_reach; -1: the model is unknown
};
struct LabDistancePanel {
  std::string task;
  std::vector<LabDistanceSeries> series;  // one per model, in the grid's order
  SvgPanel panel;                         // what the figure draws of them
};
std::vector<LabDistancePanel> lab_distance_panels(const Lab& lab, const std::vector<LabCell>& cells,
                                                  const std::vector<LabRun>& runs);

// MAD's figure (issue 50): accuracy against each task's difficulty setting. The grid's tasks of one
// name form a family whose first is its baseline; a task that differs from the baseline in one
// setting (seed aside) is a change of that setting (MAD's design: each change varies one). One
// panel per family and changed setting: x the setting's value (the baseline's among them), one
// line per model, y its cell's mean answer accuracy (best over lr and weight decay).
struct LabDifficultyPanel {
  std::string family, setting;  // "in_context_recall", "vocab"
  std::vector<size_t> tasks;    // the grid's task indices drawn, in x order
  std::vector<int64_t> values;  // the setting's value of each
  SvgPanel panel;
};
std::vector<LabDifficultyPanel> lab_difficulty_panels(const Lab& lab, const std::vector<LabCell>& cells);

// MAD's score per task family and model: the mean over the family's settings (every grid task of
// that name) of the cells' mean answer accuracy. NaN while a cell of the family has no run scored.
struct LabFamilyScore {
  std::string family, model;
  double mean = NAN;
  int64_t settings = 0, scored = 0;  // the family's tasks; those with a scored cell
};
std::vector<LabFamilyScore> lab_family_scores(const Lab& lab, const std::vector<LabCell>& cells);

// A task as the report's figures and the studio's Lab title it, from its spec: its name in words
// ("in context recall" for in_context_recall), and for MQAR its context and pairs ("mqar context
// 64, 8 pairs"). Throws on a spec parse_task refuses.
std::string task_title(const std::string& spec);

// The report of `lab` as it stands (unfinished cells say so). figure_stem: the figures' file
// names start with it ("report" -> report-accuracy.svg); version: hsm's.
LabReport lab_report(const Lab& lab, const std::string& figure_stem, const std::string& version);

// The files of the report whose Markdown page is `markdown_path`: (path, text) for the page, the
// HTML page beside it (same stem) and each figure beside it, the page first. `hsm lab report`
// and the studio's Export report… write these (each checking them its own way first).
std::vector<std::pair<std::string, std::string>> lab_report_files(const Lab& lab, const std::string& markdown_path,
                                                                   const std::string& version);

}  // namespace hsm
