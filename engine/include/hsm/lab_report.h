#pragma once
// `hsm lab report DIR` (issue 50; docs/lab.md, "The report"): one self-contained page of a lab's
// answer, in Markdown and in HTML — the verdict table (task x model: mean ± sd over seeds at the
// best learning rate, the row's best and the cells tied with it marked, cells at chance marked),
// the figures (SVG: answer accuracy per task per model with the chance line; accuracy against
// learning rate; MQAR accuracy against model width when the lab has a width axis), the exact
// settings, each run's score, and the command that reruns it. Plain C++.
#include <string>
#include <utility>
#include <vector>

#include "hsm/lab.h"

namespace hsm {

struct LabReport {
  std::string markdown;  // refers to the figures by file name (figure_stem-NAME.svg beside it)
  std::string html;      // the figures inline: one file
  std::vector<std::pair<std::string, std::string>> figures;  // file name -> SVG text
};

// The report of `lab` as it stands (unfinished cells say so). figure_stem: the figures' file
// names start with it ("report" -> report-accuracy.svg); version: hsm's.
LabReport lab_report(const Lab& lab, const std::string& figure_stem, const std::string& version);

// The files of the report whose Markdown page is `markdown_path`: (path, text) for the page, the
// HTML page beside it (same stem) and each figure beside it, the page first. `hsm lab report`
// and the studio's Export report… write these (each checking them its own way first).
std::vector<std::pair<std::string, std::string>> lab_report_files(const Lab& lab, const std::string& markdown_path,
                                                                   const std::string& version);

}  // namespace hsm
