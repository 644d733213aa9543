#include "gui/widgets/plot_panel.h"

#include <qcustomplot.h>

#include <QCheckBox>
#include <QFile>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QPainter>
#include <QSvgGenerator>
#include <QTextStream>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <memory>
#include <typeinfo>

#include "gui/studio_settings.h"
#include "gui/widgets/widget_export.h"

namespace studio {
namespace {

// QCustomPlot replots at once on every resize, reallocating and clearing its paint buffers
// (several MB at a view's first layout, which resizes a plot two or three times: 5-16 ms of
// page faults and fills). Here a resize only takes the new size and asks for one replot
// when the layout has settled.
class LazyResizePlot : public QCustomPlot {
 public:
  explicit LazyResizePlot(QWidget* parent) : QCustomPlot(parent) {
    // Its white background covers the widget: the window need not paint beneath it first.
    setAttribute(Qt::WA_OpaquePaintEvent);
  }
  std::function<void()> resized;  // before the queued replot (the legend's rows follow the width)

 protected:
  void resizeEvent(QResizeEvent*) override {
    setViewport(rect());
    if (resized) resized();
    replot(rpQueuedReplot);
  }
};

// The panel's title, bold, on as many lines as the panel's width needs (issue 69: elided, the
// titles of the Architecture, Weights and Losses views read "Learned a and b per la…" at
// 1024x600). Its smallest width is its longest word's, so a long title does not set the width
// of every layout that holds the plot.
class PanelTitle : public QLabel {
 public:
  explicit PanelTitle(const QString& title) : QLabel(title) {
    QFont f = font();
    f.setBold(true);
    setFont(f);
    setObjectName(QStringLiteral("plot_title"));
    setWordWrap(true);
    setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Preferred);
  }
  QSize minimumSizeHint() const override {
    int widest = 0;
    for (const QString& word : text().split(QLatin1Char(' '), Qt::SkipEmptyParts))
      widest = std::max(widest, fontMetrics().horizontalAdvance(word));
    return {widest + 2 * margin(), QLabel::minimumSizeHint().height()};
  }

 protected:
  // A cramped pane gives the panel its smallest height, which counted one line: the title's lines
  // at its width are its smallest height, so the plot gives up the room and not the title.
  void resizeEvent(QResizeEvent* e) override {
    QLabel::resizeEvent(e);
    const int needed = heightForWidth(width());
    if (needed > 0 && minimumHeight() != needed) setMinimumHeight(needed);
  }
};

}  // namespace

void decimate_line(const QVector<double>& x, const QVector<double>& y, int buckets, QVector<double>& xo,
                   QVector<double>& yo) {
  xo.clear();
  yo.clear();
  const int n = static_cast<int>(x.size());
  if (n <= 4 * buckets) {
    xo = x;
    yo = y;
    return;
  }
  xo.reserve(4 * buckets);
  yo.reserve(4 * buckets);
  for (int b = 0; b < buckets; ++b) {
    const int lo = static_cast<int>(static_cast<int64_t>(n) * b / buckets);
    const int hi = static_cast<int>(static_cast<int64_t>(n) * (b + 1) / buckets);
    if (lo >= hi) continue;
    int imin = lo, imax = lo;
    for (int i = lo; i < hi; ++i) {
      if (y[i] < y[imin]) imin = i;
      if (y[i] > y[imax]) imax = i;
    }
    int keep[4] = {lo, std::min(imin, imax), std::max(imin, imax), hi - 1};
    int last = -1;
    for (int k : keep) {
      if (k == last) continue;
      xo.push_back(x[k]);
      yo.push_back(y[k]);
      last = k;
    }
  }
}

PlotPanel::PlotPanel(const QString& title, const QString& xLabel, const QString& yLabel, QWidget* parent)
    : QWidget(parent), title_(title), xLabel_(xLabel), yLabel_(yLabel), plot_(new LazyResizePlot(this)) {
  static_cast<LazyResizePlot*>(plot_)->resized = [this] {
    fitLegend();
    fitTicks();
  };
  connect(plot_, &QCustomPlot::afterLayout, this, &PlotPanel::fitAxisLabels);
  setObjectName(title);
  auto* titleLabel = new PanelTitle(title);
  logBox_ = new QCheckBox(tr("Log y"));  // short: four panels side by side fit 1024 pixels
  logBox_->setToolTip(tr("Logarithmic y axis (log scale)"));
  auto* reset = new QToolButton;
  reset->setText(tr("Fit"));
  reset->setToolTip(tr("Reset zoom and pan to show all data (or double-click the plot)"));
  auto* exportButton = new QToolButton;
  exportButton->setText(tr("Export…"));
  exportButton->setToolTip(tr("Save this plot as PNG, PDF or SVG, or its data as CSV"));

  auto* bar = new QHBoxLayout;
  bar->setContentsMargins(4, 2, 4, 0);
  bar->addWidget(titleLabel, 1);
  bar->addWidget(logBox_);
  bar->addWidget(reset);
  bar->addWidget(exportButton);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addLayout(bar);
  layout->addWidget(plot_, 1);

  // Small enough that two plots and a form share a 1024x600 screen (issue 48).
  plot_->setMinimumSize(kMinimumPlotSize);
  plot_->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot_->xAxis->setLabel(xLabel);
  plot_->yAxis->setLabel(yLabel);
  labelFont_ = plot_->xAxis->labelFont();
  plot_->legend->setVisible(false);
  QFont legendFont = font();
  legendFont.setPointSizeF(legendFont.pointSizeF() * 0.85);
  plot_->legend->setFont(legendFont);
  plot_->legend->setBrush(QColor(255, 255, 255, 210));
  plot_->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
  // The legend under the axes, where it covers no data (issue 48), as many entries a row as fit.
  setLegendBelow(kMaxLegendColumns);
  // Emphasised curves (the current run's) on a layer of their own above the others'.
  plot_->addLayer(QString::fromLatin1(kEmphasisedLayer), plot_->layer(QStringLiteral("main")), QCustomPlot::limAbove);
  plot_->setNoAntialiasingOnDrag(true);
  // QCustomPlot repaints (and flushes the window) inside every replot by default; several
  // plots replotted in one pass of the event loop then paint one after another. Scheduled
  // instead, every dirty widget is painted together in the next pass.
  plot_->setPlottingHint(QCP::phImmediateRefresh, false);
  // One paint buffer per plot, not two: the overlay layer (QCustomPlot's only buffered one by
  // default, for fast selection-rectangle replots this studio does not use) would double the
  // memory cleared and drawn at every replot.
  plot_->layer(QStringLiteral("overlay"))->setMode(QCPLayer::lmLogical);

  if (qEnvironmentVariableIsSet("HSM_STUDIO_TRACE")) {
    auto clock = std::make_shared<QElapsedTimer>();
    connect(plot_, &QCustomPlot::beforeReplot, this, [clock] { clock->start(); });
    connect(plot_, &QCustomPlot::afterReplot, this,
            [this, clock] { qInfo("replot %s: %lld ms", qPrintable(title_), clock->elapsed()); });
  }
  connect(logBox_, &QCheckBox::toggled, this, [this](bool on) {
    setLogY(on);
    emit logYToggled(on);
  });
  connect(reset, &QToolButton::clicked, this, &PlotPanel::resetView);
  connect(exportButton, &QToolButton::clicked, this, &PlotPanel::exportWithDialog);
  connect(plot_, &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) { resetView(); });
  connect(plot_, &QCustomPlot::mouseWheel, this, [this](QWheelEvent*) { userMoved_ = true; });
  connect(plot_, &QCustomPlot::mouseMove, this, [this](QMouseEvent* e) {
    if (e->buttons() & Qt::LeftButton) userMoved_ = true;
  });
}

void PlotPanel::setLegendBelow(int columns, int atLeast) {
  maxLegendColumns_ = columns;
  minLegendColumns_ = std::min(atLeast, columns);
  if (legendBelow_) return fitLegend();
  legendBelow_ = true;  // placed there by redraw() while it has entries to show
  plot_->legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
  plot_->legend->setBrush(Qt::NoBrush);
  plot_->legend->setBorderPen(Qt::NoPen);
  plot_->legend->setIconSize(18, 14);  // short samples: more entries a row, fewer rows taken from the axes
  plot_->legend->setColumnSpacing(4);
  plot_->legend->setRowSpacing(0);
}

// As many entries a row as the plot's width holds (at least one, at most the view's number): the
// fewer rows under the axes, the taller they stay.
void PlotPanel::fitLegend() {
  QCPLegend* legend = plot_->legend;
  QCPLayoutGrid* grid = plot_->plotLayout();
  const bool below = grid->rowCount() > 1 && grid->hasElement(1, 0) && grid->element(1, 0) == legend;
  if (!legendBelow_ || !below || legend->itemCount() == 0) return;
  QVector<int> widths;
  for (int i = 0; i < legend->itemCount(); ++i)  // (a grid's empty cells are no item)
    if (QCPAbstractLegendItem* item = legend->item(i)) widths << item->minimumOuterSizeHint().width();
  if (widths.isEmpty()) return;
  const int room = plot_->width() - legend->margins().left() - legend->margins().right() - 8;
  int columns = std::min<int>(minLegendColumns_, static_cast<int>(widths.size()));
  for (int c = std::min<int>(maxLegendColumns_, static_cast<int>(widths.size())); c > columns; --c) {
    int total = (c - 1) * legend->columnSpacing();
    for (int j = 0; j < c; ++j) {
      int widest = 0;
      for (int i = j; i < widths.size(); i += c) widest = std::max(widest, widths[i]);
      total += widest;
    }
    if (total <= room) {
      columns = c;
      break;
    }
  }
  if (legend->wrap() == columns) return;
  legend->setWrap(columns);
  legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);  // the entries rearranged into the new rows
}

int PlotPanel::ticksFor(int pixels, int perTick) { return std::clamp(pixels / perTick, 2, 5); }

void PlotPanel::fitTicks() {
  // The axes' room: the plot less its tick labels, axis labels and a legend below (about 70 px
  // high, 80 px wide, the axis rect's own width when it is known). A view's own ticker
  // (categories, layers) keeps its ticks, unless it is a fixed step that may take multiples.
  const int height = plot_->height() - 70;
  const int known = plot_->axisRect()->width();
  const int width = known > 0 ? std::min(plot_->width() - 80, known) : plot_->width() - 80;
  for (QCPAxis* axis : {plot_->yAxis, plot_->xAxis, plot_->yAxis2}) {
    const QSharedPointer<QCPAxisTicker> ticker = axis->ticker();
    const auto* fixed = dynamic_cast<const QCPAxisTickerFixed*>(ticker.data());
    const bool log = typeid(*ticker) == typeid(QCPAxisTickerLog);
    const bool follows = typeid(*ticker) == typeid(QCPAxisTicker) || log ||
                         (fixed && fixed->scaleStrategy() == QCPAxisTickerFixed::ssMultiples);
    if (!follows || (axis == plot_->xAxis && !log && !fixed)) continue;
    ticker->setTickCount(axis != plot_->xAxis ? ticksFor(height, 28) : std::max(1, width / 90));
  }
}

QString PlotPanel::wrappedLabel(const QFont& font, const QString& label, int length) {
  const QFontMetrics metrics(font);
  QStringList lines;
  QString line;
  // Words, and a hyphenated word's parts ("multiply-" "adds"): a line may end after a hyphen.
  QStringList words;
  for (const QString& word : label.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
    const QStringList parts = word.split(QLatin1Char('-'));
    for (int i = 0; i < parts.size(); ++i)
      words << parts[i] + (i + 1 < parts.size() ? QStringLiteral("-") : QString());
  }
  for (const QString& word : words) {
    const QString longer = line.isEmpty() ? word : line + (line.endsWith(QLatin1Char('-')) ? QString() : QStringLiteral(" ")) + word;
    if (line.isEmpty() || metrics.horizontalAdvance(longer) <= length) {
      line = longer;
    } else {
      lines << line;
      line = word;
    }
  }
  if (!line.isEmpty()) lines << line;
  return lines.join(QLatin1Char('\n'));
}

void PlotPanel::fitAxisLabels() {
  // Issue 69: on as many lines as the axis' length needs, every word kept ("Cost per token
  // pe…", "multiply-…" at 1024x600 were elided); a word longer than a short axis ("reached" on
  // 40 px) in a smaller font, down to 70 %. A label on more lines takes more margin, so the axes
  // shrink: the next layout fits the labels again until they stay the same.
  const QRect axes = plot_->axisRect()->rect();
  if (axes.width() <= 0 || axes.height() <= 0) return;
  bool changed = false;
  auto fit = [&](QCPAxis* axis, const QString& label, int length) {
    QFont font = labelFont_;
    QString text = wrappedLabel(font, label, length);
    for (int percent = 95; percent >= 70; percent -= 5) {
      int widest = 0;
      for (const QString& line : text.split(QLatin1Char('\n')))
        widest = std::max(widest, QFontMetrics(font).horizontalAdvance(line));
      if (widest <= length) break;
      font.setPointSizeF(labelFont_.pointSizeF() * percent / 100);
      text = wrappedLabel(font, label, length);
    }
    if (axis->label() != text) axis->setLabel(text), changed = true;
    if (axis->labelFont() != font) axis->setLabelFont(font), changed = true;
  };
  fit(plot_->xAxis, xLabel_, axes.width());
  fit(plot_->yAxis, yLabel_, axes.height());
  if (plot_->yAxis2->visible()) fit(plot_->yAxis2, rightLabel_, axes.height());
  // Axes squeezed by their tick labels (slanted names), axis labels and legend ask for the
  // height they miss: the plot's minimum grows (never shrinks), so the view's layout, a splitter
  // or a scroll area gives it the room instead of drawing a strip.
  if (const int missing = minimumAxesHeight_ - axes.height(); missing > 0 && plot_->plottableCount() > 0) {
    const int least = plot_->height() + missing;
    if (plot_->minimumHeight() < least) plot_->setMinimumHeight(least);
  }
  if (fitMessages()) changed = true;
  if (changed) plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool PlotPanel::fitMessages() {
  // A message placed in the axes (a text item at a ratio of the axis rect: "No weights loaded.",
  // "Offset weights need every layer to be…") is clipped to them: it is broken between words to
  // their width (issue 69: the Weights view's offset plot showed "…ed every layer to be a
  // single-shift layer w…" at 1024x600). The text a view sets is kept in a property, so a new
  // one (the item's text no longer the one fitted) is fitted in turn.
  const int room = plot_->axisRect()->rect().width() - 12;
  if (room <= 0) return false;
  bool changed = false;
  for (int i = 0; i < plot_->itemCount(); ++i) {
    auto* item = qobject_cast<QCPItemText*>(plot_->item(i));
    if (!item || item->position->type() != QCPItemPosition::ptAxisRectRatio) continue;
    if (item->property("fitted").toString() != item->text()) item->setProperty("asSet", item->text());
    const QString set = item->property("asSet").toString();
    QStringList lines;
    for (const QString& paragraph : set.split(QStringLiteral("\n\n")))
      lines << wrappedLabel(item->font(), QString(paragraph).replace(QLatin1Char('\n'), QLatin1Char(' ')), room);
    const QString text = lines.join(QStringLiteral("\n\n"));
    item->setProperty("fitted", text);
    if (item->text() != text) item->setText(text), changed = true;
  }
  return changed;
}

void PlotPanel::setLogOptionVisible(bool visible) { logBox_->setVisible(visible); }

void PlotPanel::setXLabel(const QString& label) {
  if (label == xLabel_) return;  // shown already, wrapped to its axis
  xLabel_ = label;
  plot_->xAxis->setLabel(label);
}

void PlotPanel::setYLabel(const QString& label) {
  if (label == yLabel_) return;
  yLabel_ = label;
  plot_->yAxis->setLabel(label);
}

void PlotPanel::setRightLabel(const QString& label) {
  rightLabel_ = label;
  plot_->yAxis2->setLabel(label);
}

void PlotPanel::setSeries(const QVector<PlotSeries>& series) {
  series_ = series;
  redraw();
}

void PlotPanel::redraw() {
  plot_->clearGraphs();
  int legendItems = 0;
  QVector<double> xd, yd;
  bool right = false;
  for (const PlotSeries& s : series_) {
    QCPGraph* g = plot_->addGraph(plot_->xAxis, s.right_axis ? plot_->yAxis2 : plot_->yAxis);
    right = right || s.right_axis;
    g->setName(s.legend.isEmpty() ? s.name : s.legend);
    QPen pen(s.color);
    pen.setWidthF(1.6);
    switch (s.style) {
      case PlotSeries::Style::kLine:
        break;
      case PlotSeries::Style::kFaintLine: {
        QColor c = s.color;
        c.setAlpha(60);
        pen.setColor(c);
        pen.setWidthF(1.0);
        break;
      }
      case PlotSeries::Style::kDashedLine:
        pen.setStyle(Qt::DashLine);
        break;
      case PlotSeries::Style::kScatter:
        g->setLineStyle(QCPGraph::lsNone);
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, s.color, s.color, 5));
        break;
    }
    if (s.emphasised) {
      pen.setWidthF(pen.widthF() * 1.8);
      g->setLayer(QString::fromLatin1(kEmphasisedLayer));
    }
    g->setPen(pen);
    if (s.style == PlotSeries::Style::kScatter) {
      g->setData(s.x, s.y);
    } else {
      decimate_line(s.x, s.y, kMaxDrawnPoints / 4, xd, yd);
      g->setData(xd, yd, true);
      // Antialiasing a dense polyline costs QPainter ~10x; at a few points per pixel it
      // shows no difference.
      if (xd.size() > 1000) g->setAntialiased(false);
      if (!s.x.isEmpty() && s.x.size() < 3) {  // a curve of one or two points: show them
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, s.color, 5));
      }
    }
    if (s.in_legend && !s.name.isEmpty()) {
      ++legendItems;
    } else {
      g->removeFromLegend();
    }
  }
  plot_->legend->setVisible(legendItems > 1);
  plot_->yAxis2->setVisible(right);
  // Where a view put the legend itself (the Architecture view's cost plot: right of the axes), it stays.
  QCPLayoutGrid* grid = plot_->plotLayout();
  const bool inset = plot_->legend->layout() == plot_->axisRect()->insetLayout();
  const bool below = grid->rowCount() > 1 && grid->hasElement(1, 0) && grid->element(1, 0) == plot_->legend;
  if (legendBelow_ && (inset || below)) {
    // Its row under the axes only while it shows: an empty row there squeezed the axes.
    if (legendItems > 1 && inset) {
      plot_->axisRect()->insetLayout()->take(plot_->legend);
      grid->addElement(1, 0, plot_->legend);
      grid->setRowStretchFactor(1, 0.001);  // its own height, the axes the rest
    } else if (legendItems <= 1 && below) {
      grid->take(plot_->legend);
      grid->simplify();
      plot_->axisRect()->insetLayout()->addElement(plot_->legend, Qt::AlignTop | Qt::AlignRight);
    }
    fitLegend();
  }
  if (!userMoved_) {
    plot_->rescaleAxes();
    if (logY_) {
      QCPRange r = plot_->yAxis->range();
      if (r.lower <= 0) r.lower = r.upper > 0 ? r.upper * 1e-3 : 1e-3;
      plot_->yAxis->setRange(r.lower * 0.9, r.upper * 1.1);
    } else {
      plot_->yAxis->scaleRange(1.08);
    }
    if (right) plot_->yAxis2->scaleRange(1.08);
  }
  fitTicks();  // a log scale's new ticker too
  // An empty plot shows no numbers on its axes (issue 69's walk: the Losses view before scoring drew
  // 0 … 5 on both axes of its four plots); where a view draws bars or a map itself, they stay.
  if (plot_->plottableCount() == plot_->graphCount()) {
    const bool data = std::any_of(series_.cbegin(), series_.cend(), [](const PlotSeries& s) { return !s.x.isEmpty(); });
    plot_->xAxis->setTickLabels(data);
    plot_->yAxis->setTickLabels(data);
    plot_->yAxis2->setTickLabels(data);
  }
  // A hidden plot (another tab) is drawn when it is shown, not on every update.
  if (isVisible()) {
    plot_->replot(QCustomPlot::rpQueuedReplot);
  } else {
    replotOnShow_ = true;
  }
}

void PlotPanel::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (replotOnShow_) {
    replotOnShow_ = false;
    plot_->replot(QCustomPlot::rpQueuedReplot);
  }
}

int PlotPanel::drawnPoints(int i) const {
  if (i < 0 || i >= plot_->graphCount()) return 0;
  return plot_->graph(i)->data()->size();
}

void PlotPanel::setLogY(bool on) {
  logY_ = on;
  if (logBox_->isChecked() != on) logBox_->setChecked(on);
  plot_->yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
  if (on) {
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog));
  } else {
    plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
  }
  userMoved_ = false;
  redraw();
}

void PlotPanel::resetView() {
  userMoved_ = false;
  redraw();
  plot_->replot();
}

QString PlotPanel::exportTo(const QString& path) {
  const QString ext = QFileInfo(path).suffix().toLower();
  const int w = std::max(plot_->width(), 800), h = std::max(plot_->height(), 500);
  if (ext == QLatin1String("png")) return plot_->savePng(path, w, h, 2.0) ? QString() : tr("cannot write %1").arg(path);
  if (ext == QLatin1String("pdf"))
    return plot_->savePdf(path, w, h, QCP::epNoCosmetic, QStringLiteral("HSM Studio"), title_) ? QString()
                                                                                               : tr("cannot write %1").arg(path);
  if (ext == QLatin1String("svg")) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(QSize(w, h));
    svg.setViewBox(QRect(0, 0, w, h));
    svg.setTitle(title_);
    svg.setDescription(QStringLiteral("HSM Studio plot"));
    QCPPainter painter;
    if (!painter.begin(&svg)) return tr("cannot write %1").arg(path);
    plot_->toPainter(&painter, w, h);
    painter.end();
    return QFileInfo(path).size() > 0 ? QString() : tr("cannot write %1").arg(path);
  }
  if (ext == QLatin1String("csv")) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text)) return tr("cannot write %1").arg(path);
    QTextStream out(&f);
    if (csvWriter_) {
      out << csvWriter_();
      return f.error() == QFileDevice::NoError ? QString() : tr("cannot write %1").arg(path);
    }
    auto quote = [](QString s) { return QStringLiteral("\"%1\"").arg(s.replace('"', QLatin1String("\"\""))); };
    out << "series," << quote(xLabel_) << "," << quote(yLabel_) << "\n";
    for (const PlotSeries& s : series_)
      for (int i = 0; i < s.x.size(); ++i)
        out << quote(s.name) << "," << QString::number(s.x[i], 'g', 17) << "," << QString::number(s.y[i], 'g', 17)
            << "\n";
    return f.error() == QFileDevice::NoError ? QString() : tr("cannot write %1").arg(path);
  }
  return tr("unknown export format '.%1' (use .png, .pdf, .svg or .csv)").arg(ext);
}

void PlotPanel::exportWithDialog() {
  QString base = title_.toLower();
  base.replace(QRegularExpression(QStringLiteral("[^a-z0-9]+")), QStringLiteral("-"));
  const QString stem = export_stem(this);  // the run and the view, so the file says what it is of
  if (!stem.isEmpty()) base = stem + QLatin1Char('-') + base;
  const QString path = QFileDialog::getSaveFileName(
      this, tr("Export %1").arg(title_), StudioSettings::dialogPath(base + ".png"),
      tr("PNG image (*.png);;PDF document (*.pdf);;SVG drawing (*.svg);;CSV data (*.csv)"));
  if (path.isEmpty()) return;
  StudioSettings::setDialogFolder(path);
  const QString error = exportTo(path);
  if (!error.isEmpty()) QMessageBox::warning(this, tr("Export failed"), error);
}

}  // namespace studio
