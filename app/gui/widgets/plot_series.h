#pragma once
// One curve of a plot, as data: what the views compute (pure, testable without a widget)
// and PlotPanel draws and exports.
#include <QColor>
#include <QString>
#include <QVector>

namespace studio {

struct PlotSeries {
  enum class Style { kLine, kFaintLine, kDashedLine, kScatter };
  QString name;
  QColor color;
  QVector<double> x, y;  // x ascending, except for kScatter
  Style style = Style::kLine;
  bool in_legend = true;
  // The current run's curve (issue 48): drawn above the others, thicker, so that a run trained
  // now is not one thin line among the demo runs' curves.
  bool emphasised = false;
  // What the legend says, when not the name (the name stays the curve's in an exported CSV).
  QString legend = {};
  // Drawn against the right value axis, a scale of its own (PlotPanel::setRightLabel names it):
  // a quantity of another range beside the left axis' curves.
  bool right_axis = false;
};

}  // namespace studio
