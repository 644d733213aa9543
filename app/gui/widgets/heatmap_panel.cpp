#include "gui/widgets/heatmap_panel.h"
#include "gui/widgets/colour_maps.h"

#include <QFontMetricsF>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <qcustomplot.h>

namespace studio {
namespace {

// A QCustomPlot gradient through a colour map's stops (widgets/colour_maps.h).
QCPColorGradient gradient(const std::vector<colours::ColourStop>& stops) {
  QCPColorGradient g;
  g.clearColorStops();
  for (const colours::ColourStop& s : stops) g.setColorStopAt(s.at, s.colour);
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  return g;
}

QCPColorGradient sequential_gradient() { return gradient(colours::bluesStops()); }
QCPColorGradient diverging_gradient() { return gradient(colours::rdbuStops()); }

QString quote(QString s) { return QStringLiteral("\"%1\"").arg(s.replace('"', QLatin1String("\"\""))); }

// Tick labels: every label when they fit, else every k-th (the rest on hover).
// Every step-th label, plus the pinned ones (a task example's answers), which push aside the
// thinned labels that would overlap them; more pinned rows than fit are thinned like the rest.
QSharedPointer<QCPAxisTickerText> text_ticker(const QStringList& labels, int n, int maxLabels,
                                              const QVector<int>& pinned = {}) {
  QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
  const int step = std::max(1, (n + maxLabels - 1) / maxLabels);
  auto add = [&](int i) {
    QString label = i < labels.size() ? labels[i] : QString::number(i);
    if (label.size() > 14) label = label.left(13) + QChar(0x2026);
    ticker->addTick(i, label);
  };
  if (pinned.size() > maxLabels / 2) return text_ticker(labels, n, maxLabels);
  auto near_pinned = [&](int i) {
    for (int p : pinned)
      if (p != i && std::abs(p - i) < step) return true;
    return false;
  };
  for (int i = 0; i < n; i += step)
    if (!near_pinned(i)) add(i);
  for (int p : pinned)
    if (p >= 0 && p < n && p % step != 0) add(p);
  return ticker;
}

}  // namespace

HeatmapPanel::HeatmapPanel(const QString& title, const QString& xLabel, const QString& yLabel, QWidget* parent)
    : PlotPanel(title, xLabel, yLabel, parent) {
  setLogOptionVisible(false);
  QCustomPlot* p = plot();
  // Labels thinned to what fits: refitted when a layout changes the axis rect (a side-by-side
  // comparison, a smaller window), so they never overlap.
  connect(p, &QCustomPlot::afterLayout, this, [this] {
    if (rows_ > 0 && labelsThatFit() != labelsShown_) {
      applyLabels();
      plot()->replot(QCustomPlot::rpQueuedReplot);
    }
    // The colour scale's ticks and label fit its height too (issue 48: six values on 40 px).
    fitScaleLabel();
    QCPAxis* axis = scale_->axis();
    const int length = scale_->rect().height();
    if (const int ticks = ticksFor(length, 24); length > 0 && axis->ticker()->tickCount() != ticks) {
      axis->ticker()->setTickCount(ticks);
      plot()->replot(QCustomPlot::rpQueuedReplot);
    }
  });
  map_ = new QCPColorMap(p->xAxis, p->yAxis);
  map_->setInterpolate(false);
  map_->setTightBoundary(false);
  scale_ = new QCPColorScale(p);
  scale_->setType(QCPAxis::atRight);
  scale_->setBarWidth(12);
  scaleFont_ = scale_->axis()->labelFont();
  p->plotLayout()->addElement(0, 1, scale_);
  map_->setColorScale(scale_);
  map_->setGradient(sequential_gradient());
  auto* group = new QCPMarginGroup(p);
  p->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  scale_->setMarginGroup(QCP::msBottom | QCP::msTop, group);
  p->yAxis->setRangeReversed(true);  // row 0 at the top, as a matrix is printed
  p->xAxis->grid()->setVisible(false);
  p->yAxis->grid()->setVisible(false);
  p->xAxis->setTickLabelRotation(-60);
  messageItem_ = new QCPItemText(p);
  messageItem_->position->setType(QCPItemPosition::ptAxisRectRatio);
  messageItem_->position->setCoords(0.5, 0.5);
  messageItem_->setPositionAlignment(Qt::AlignCenter);
  messageItem_->setColor(QColor(90, 90, 90));
  messageItem_->setVisible(false);

  hoverLabel_ = new QLabel;
  hoverLabel_->setObjectName(QStringLiteral("hover"));
  hoverLabel_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  hoverLabel_->setContentsMargins(6, 0, 6, 2);
  hoverLabel_->setText(tr("Hover a cell for its exact value."));
  hoverLabel_->setStyleSheet(QStringLiteral("color: #555;"));
  hoverLabel_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // the panel's width is the plot's
  if (auto* box = qobject_cast<QVBoxLayout*>(layout())) box->addWidget(hoverLabel_);

  setCsvWriter([this] { return csv(); });
  connect(p, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    if (rows_ == 0) return;
    const int col = static_cast<int>(std::lround(plot()->xAxis->pixelToCoord(e->pos().x())));
    const int row = static_cast<int>(std::lround(plot()->yAxis->pixelToCoord(e->pos().y())));
    if (row < 0 || row >= rows_ || col < 0 || col >= cols_ || !plot()->axisRect()->rect().contains(e->pos())) {
      QToolTip::hideText();
      return;
    }
    const QString text = hoverText(row, col);
    hoverLabel_->setText(text);
    QToolTip::showText(e->globalPosition().toPoint(), text, plot());
    emit hovered(text);
  });
}

void HeatmapPanel::fitScaleLabel() {
  // Issue 69: the scale's label whole ("normalised" was elided on the Diagnostics overview's
  // 40 px scale at 1024x600): broken between words, in a smaller font down to 70 %, and where a
  // word is still longer than the scale, the plot asks for the height it needs (its view gives
  // it, or scrolls).
  QCPAxis* axis = scale_->axis();
  const int length = scale_->rect().height();
  if (length <= 0 || scaleLabel_.isEmpty() || !scale_->visible()) return;
  auto widest = [](const QFont& font, const QString& text) {
    int most = 0;
    for (const QString& line : text.split(QLatin1Char('\n'))) most = std::max(most, QFontMetrics(font).horizontalAdvance(line));
    return most;
  };
  QFont font = scaleFont_;
  QString text = wrappedLabel(font, scaleLabel_, length);
  for (int percent = 95; percent >= 70 && widest(font, text) > length; percent -= 5) {
    font.setPointSizeF(scaleFont_.pointSizeF() * percent / 100);
    text = wrappedLabel(font, scaleLabel_, length);
  }
  bool changed = false;
  if (axis->label() != text) axis->setLabel(text), changed = true;
  if (axis->labelFont() != font) axis->setLabelFont(font), changed = true;
  if (const int short_by = widest(font, text) - length; short_by > 0) {
    const int least = plot()->height() + short_by + 2;
    if (plot()->minimumHeight() < least) plot()->setMinimumHeight(least);
  }
  if (changed) plot()->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPanel::setScaleLabel(const QString& label) {
  scaleLabel_ = label;
  scale_->axis()->setLabel(label);
}

void HeatmapPanel::setMatrix(int rows, int cols, const std::vector<double>& values, const QStringList& rowLabels,
                             const QStringList& colLabels, Palette palette) {
  rows_ = rows;
  cols_ = cols;
  values_ = values;
  rowLabels_ = rowLabels;
  colLabels_ = colLabels;
  message_.clear();
  messageItem_->setVisible(false);
  map_->setVisible(true);
  scale_->setVisible(true);
  plot()->xAxis->setTickLabels(true);
  plot()->yAxis->setTickLabels(true);
  map_->data()->setSize(cols, rows);
  map_->data()->setRange(QCPRange(0, std::max(cols - 1, 0)), QCPRange(0, std::max(rows - 1, 0)));
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) {
      const double v = values.at(static_cast<size_t>(r) * cols + c);
      map_->data()->setCell(c, r, v);
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (palette == Palette::kDiverging) {
    const double m = std::max({std::abs(lo), std::abs(hi), 1e-12});
    map_->setGradient(diverging_gradient());
    map_->setDataRange(QCPRange(-m, m));
  } else {
    map_->setGradient(sequential_gradient());
    lo = std::min(lo, 0.0);
    map_->setDataRange(QCPRange(lo, hi > lo ? hi : lo + 1e-12));
  }
  applyLabels();
  plot()->xAxis->setRange(-0.5, cols - 0.5);
  plot()->yAxis->setRange(-0.5, rows - 0.5);
  plot()->replot(QCustomPlot::rpQueuedReplot);
}

void HeatmapPanel::applyLabels() {
  QCustomPlot* p = plot();
  QFont f = font();
  f.setPointSizeF(f.pointSizeF() * (std::max(rows_, cols_) > 24 ? 0.75 : 0.9));
  p->xAxis->setTickLabelFont(f);
  p->yAxis->setTickLabelFont(f);
  labelsShown_ = labelsThatFit();
  p->xAxis->setTicker(text_ticker(colLabels_, cols_, std::min(colLabels_.isEmpty() ? 16 : 40, labelsShown_.first)));
  p->yAxis->setTicker(
      text_ticker(rowLabels_, rows_, std::min(rowLabels_.isEmpty() ? 16 : 40, labelsShown_.second), pinnedRows_));
  p->xAxis->setTickLabelRotation(colLabels_.isEmpty() ? 0 : -60);
}

QPair<int, int> HeatmapPanel::labelsThatFit() const {
  // A label needs its line height along an axis (a rotated one a little more); before the
  // first layout the axis rect has no size, and every label is asked for.
  const QRect a = plot()->axisRect()->rect();
  const double line = QFontMetricsF(plot()->xAxis->tickLabelFont()).height();
  auto fit = [&](int pixels, double per) { return pixels > 0 ? std::max(2, static_cast<int>(pixels / per)) : 1000; };
  return {fit(a.width(), line * 1.25), fit(a.height(), line * 1.05)};
}

void HeatmapPanel::setPinnedRows(const QVector<int>& rows) { pinnedRows_ = rows; }

void HeatmapPanel::clearWithMessage(const QString& message) {
  rows_ = cols_ = 0;
  values_.clear();
  message_ = message;
  map_->data()->clear();
  map_->setVisible(false);
  scale_->setVisible(false);
  messageItem_->setText(message);
  messageItem_->setVisible(true);
  plot()->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  plot()->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  // No numbers on the axes of an empty map (the Trace view's "No trace yet." sat over rows
  // "0 … 1" and positions "0 … 1" that meant nothing).
  plot()->xAxis->setTickLabels(false);
  plot()->yAxis->setTickLabels(false);
  plot()->xAxis->setRange(0, 1);
  plot()->yAxis->setRange(0, 1);
  plot()->replot(QCustomPlot::rpQueuedReplot);
}

double HeatmapPanel::value(int row, int col) const {
  if (row < 0 || row >= rows_ || col < 0 || col >= cols_) return std::numeric_limits<double>::quiet_NaN();
  return map_->data()->cell(col, row);
}

QString HeatmapPanel::hoverText(int row, int col) const {
  if (row < 0 || row >= rows_ || col < 0 || col >= cols_) return {};
  auto label = [](const QStringList& labels, int i) {
    return i < labels.size() ? QStringLiteral(" '%1'").arg(labels[i]) : QString();
  };
  return tr("%1 %2%3 · %4 %5%6 · value %7")
      .arg(plot()->yAxis->label())
      .arg(row)
      .arg(label(rowLabels_, row), plot()->xAxis->label())
      .arg(col)
      .arg(label(colLabels_, col), QString::number(values_[static_cast<size_t>(row) * cols_ + col], 'g', 6));
}

QString HeatmapPanel::csv() const {
  // The matrix as printed: a header of column labels, then one line per row.
  QString out = quote(plot()->yAxis->label() + QStringLiteral(" \\ ") + plot()->xAxis->label());
  for (int c = 0; c < cols_; ++c) out += QLatin1Char(',') + quote(c < colLabels_.size() ? colLabels_[c] : QString::number(c));
  out += QLatin1Char('\n');
  for (int r = 0; r < rows_; ++r) {
    out += quote(r < rowLabels_.size() ? rowLabels_[r] : QString::number(r));
    for (int c = 0; c < cols_; ++c)
      out += QLatin1Char(',') + QString::number(values_[static_cast<size_t>(r) * cols_ + c], 'g', 17);
    out += QLatin1Char('\n');
  }
  return out;
}

}  // namespace studio
