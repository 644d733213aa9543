#pragma once
// A parallel-coordinates plot (issue 39): one vertical axis per column (settings and metrics),
// each scaled to its own range, one line per row through its values, coloured by a chosen
// metric on viridis (colour-blind safe, dark = low). Dragging along an axis brushes a range
// on it; only the rows inside every brush stay coloured, and brushesChanged() tells the table
// to show only them. Drawn on a PlotPanel's QCustomPlot, so it exports PNG/PDF/SVG and CSV as
// every plot does.
#include <QMap>
#include <QPair>
#include <QStringList>
#include <QVector>

#include "gui/widgets/plot_panel.h"

class QCPItemRect;
class QCPItemText;
class QMouseEvent;
class QResizeEvent;

namespace studio {

class ParallelCoordinates : public PlotPanel {
  Q_OBJECT
 public:
  struct Axis {
    QString name;            // the axis' key: brushes, axisOf and the CSV's header
    QVector<double> values;  // per row (NaN: none); a category's index when categories is not empty
    QStringList categories;  // a text setting's values, in the order of their indices
    QString title;           // what the plot shows above it (the name when empty)
  };
  explicit ParallelCoordinates(const QString& title, QWidget* parent = nullptr);

  // Replaces the data; brushes on axes of the same name are kept. colour: per row (NaN: grey).
  void setData(const QVector<Axis>& axes, const QStringList& rows, const QVector<double>& colour,
               const QString& colourName);
  const QVector<Axis>& axes() const { return axes_; }
  int axisOf(const QString& name) const;

  // A brush on an axis, in the axis's values (categories: their indices); lo > hi is swapped.
  void setBrush(int axis, double lo, double hi);
  void clearBrush(int axis);
  void clearBrushes();
  QMap<QString, QPair<double, double>> brushes() const { return brushes_; }
  // Per row: inside every brush (rows with no value on a brushed axis are outside).
  QVector<bool> passing() const;

  // Viridis at t in [0, 1] (dark purple at 0, yellow at 1).
  static QColor viridis(double t);
  // Where a value lies on an axis (0 = bottom, 1 = top).
  double position(int axis, double value) const;
  // Each axis's name as drawn (broken into lines where it is long) and the pixels its text
  // takes in the plot, after the last replot: a name is never elided, and no two overlap.
  struct NameShown {
    QString text;
    QRectF rect;
  };
  QVector<NameShown> namesShown() const;

 signals:
  void brushesChanged();

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  void draw();
  void pressed(QMouseEvent* e);
  void moved(QMouseEvent* e);
  void released(QMouseEvent* e);
  QString csv() const;
  // The axes' names above them: lines that fit the room between neighbours, in two staggered
  // rows when one is too narrow; returns the pixels they take above the axes.
  int placeNames(const QFont& font);

  QVector<Axis> axes_;
  QVector<QCPItemText*> names_;  // drawn by the last draw(), in the axes' order
  QStringList rows_;
  QVector<double> colour_;
  QString colourName_;
  QVector<QPair<double, double>> ranges_;  // per axis: min, max
  QMap<QString, QPair<double, double>> brushes_;
  int dragAxis_ = -1;
  double dragFrom_ = 0;
  QCPItemRect* dragRect_ = nullptr;
};

}  // namespace studio
