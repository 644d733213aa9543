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
};

}  // namespace studio
