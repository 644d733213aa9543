#pragma once
// A small SVG plot writer for reports (`hsm lab report`): panels of lines or of bars, a shared
// legend, error bars, and horizontal reference lines (a task's chance rate). Self-contained SVG
// text (no fonts or scripts loaded), colours from the Okabe-Ito palette (colour-blind safe).
// Plain C++, no LibTorch.
#include <cmath>
#include <string>
#include <vector>

namespace hsm {

struct SvgSeries {
  std::string label;
  std::vector<double> x, y;  // a line: points (x, y), NaN y skipped; bars: y per category (x unused)
  std::vector<double> err;   // empty, or ± per point (an error bar)
  int colour = -1;           // index into the palette; -1: the series' place in the panel
};

struct SvgRefLine {
  double y = NAN;
  std::string label;  // "chance 0.016"
};

struct SvgVLine {
  double x = NAN;
  std::string label;  // "hsm_ab reaches 15 back"
  int colour = -1;    // the palette index of the series it belongs to; -1: grey
};

struct SvgPanel {
  std::string title, x_label, y_label;
  std::vector<std::string> categories;  // not empty: a bar chart, a group of bars per category
  std::vector<SvgSeries> series;
  std::vector<SvgRefLine> lines;        // dashed horizontal lines
  std::vector<SvgVLine> vlines;         // a line plot's dashed vertical lines (a model's reach), class "vref"
  bool log_x = false;                   // a line plot's x on a log scale (learning rates, widths)
  double y_min = 0, y_max = 1;
};

// The palette's colour `index` (wrapping), "#0072b2".
std::string svg_colour(int index);
// Text made safe inside SVG or HTML (& < > " ').
std::string xml_escape(const std::string& text);

// One SVG document: the panels in a grid of `columns`, a title above, the legend (every distinct
// series label, in first-seen order, with its colour) below.
std::string svg_figure(const std::string& title, const std::vector<SvgPanel>& panels, int columns = 3,
                       int panel_width = 300, int panel_height = 220);

}  // namespace hsm
