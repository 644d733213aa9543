#pragma once
// One plot of the studio: a QCustomPlot with a title bar (log scale, reset view, export).
// It keeps every point of every series for export (CSV) and draws a decimated copy
// (min/max per pixel-sized bucket), so 100k-point curves stay smooth to pan and zoom.
// One export path for every plot: PNG, PDF, SVG (through QSvgGenerator) and CSV.
#include <QColor>
#include <QFont>
#include <QSize>
#include <QString>
#include <QVector>
#include <QWidget>
#include <functional>

#include "gui/widgets/plot_series.h"

class QCustomPlot;
class QCheckBox;
class QLabel;

namespace studio {

class PlotPanel : public QWidget {
  Q_OBJECT
 public:
  PlotPanel(const QString& title, const QString& xLabel, const QString& yLabel, QWidget* parent = nullptr);

  // Replaces every series; the view follows the data unless the user has zoomed or panned.
  void setSeries(const QVector<PlotSeries>& series);
  const QVector<PlotSeries>& series() const { return series_; }
  void setXLabel(const QString& label);
  void setYLabel(const QString& label);
  // The right value axis' label: the axis shows while a series is drawn against it (right_axis).
  void setRightLabel(const QString& label);
  // The ticks an axis of this many pixels holds with room for their labels (at most QCustomPlot's
  // five, at least two).
  static int ticksFor(int pixels, int perTick);
  // A label on as many lines as `length` pixels need in `font`, broken between words (a word
  // longer than `length` keeps a line of its own): what the axes show (issue 69).
  static QString wrappedLabel(const QFont& font, const QString& label, int length);
  // The axes' labels as set (the plot shows them wrapped to its axes' length).
  QString xLabel() const { return xLabel_; }
  QString yLabel() const { return yLabel_; }
  void setLogY(bool on);
  bool logY() const { return logY_; }
  void resetView();  // fit all data
  // The legend in rows of at most `columns` entries under the axes, where it covers no data
  // (issue 48): every plot's legend is there, as many entries a row as the width holds, and at
  // least `atLeast` (entries that belong side by side, a run's train and validation, stay so).
  void setLegendBelow(int columns, int atLeast = 1);
  static constexpr int kMaxLegendColumns = 6;
  // The layer the emphasised series (PlotSeries::emphasised) are drawn on, above the others.
  static constexpr const char* kEmphasisedLayer = "emphasised";
  QString title() const { return title_; }

  // Writes the plot (by extension: .png, .pdf, .svg) or its data (.csv). Returns an empty
  // string on success, else the reason.
  QString exportTo(const QString& path);
  // Points drawn for series i (after decimation): what the screen shows.
  int drawnPoints(int i) const;
  QCustomPlot* plot() const { return plot_; }
  // For plots drawn on plot() directly (bars, colour maps): the text their .csv export
  // writes instead of the series (header line included).
  void setCsvWriter(std::function<QString()> writer) { csvWriter_ = std::move(writer); }
  // Shows or hides the "Log y" box (meaningless for a colour map).
  void setLogOptionVisible(bool visible);

  // The smallest plot area: two plots beside a form still fit a 1024x600 screen (issue 48).
  static constexpr QSize kMinimumPlotSize{200, 120};
  // The least height of the axes (the data's rect) where data is drawn (issue 69: at 1024x600 the
  // scored Losses view's slanted bucket names left its distance and frequency plots a strip of
  // 21 and -2 px). The layout test holds every plot to it.
  static constexpr int kMinimumAxesHeight = 40;
  // A plot in a splitter or a scroll area, whose tick labels, axis labels and legend may squeeze
  // its axes below `pixels`, asks its layout for the height they miss (its minimum grows, never
  // shrinks): the splitter or scroll area gives it room instead of drawing a strip. Off (0) by
  // default: a plot in a fixed grid keeps the room it has.
  void setMinimumAxesHeight(int pixels) { minimumAxesHeight_ = pixels; }
  // Above this many points a line series is drawn decimated.
  static constexpr int kMaxDrawnPoints = 4000;

 signals:
  void logYToggled(bool on);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void exportWithDialog();
  void redraw();
  void fitLegend();
  // Fewer ticks on a short or narrow axis, so that their labels never overlap (issue 48: the
  // Training view's throughput at 1024x600); and each axis label elided to its axis' length
  // rather than cut by the plot's edge.
  void fitTicks();
  void fitAxisLabels();
  bool fitMessages();  // true when a message's lines changed

  QString title_, xLabel_, yLabel_, rightLabel_;
  QFont labelFont_;  // the axes' labels' font, before a short axis makes it smaller
  bool legendBelow_ = false;
  int minimumAxesHeight_ = 0;
  int maxLegendColumns_ = kMaxLegendColumns, minLegendColumns_ = 1;
  QCustomPlot* plot_;
  QCheckBox* logBox_;
  QVector<PlotSeries> series_;
  std::function<QString()> csvWriter_;
  bool logY_ = false;
  bool userMoved_ = false;
  bool replotOnShow_ = false;
};

// Min/max decimation of a line (x ascending) into at most `buckets` buckets: each bucket
// keeps its first, lowest, highest and last point in x order, so peaks survive.
void decimate_line(const QVector<double>& x, const QVector<double>& y, int buckets, QVector<double>& xo,
                   QVector<double>& yo);

}  // namespace studio
