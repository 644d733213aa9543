#include "gui/widgets/parallel_coordinates.h"
#include "gui/widgets/colour_maps.h"

#include <QLocale>
#include <QMouseEvent>
#include <QResizeEvent>
#include <QToolButton>
#include <algorithm>
#include <cmath>
#include <qcustomplot.h>

namespace studio {
namespace {

constexpr double kGrab = 0.3;  // how near an axis (in axis spacings) a drag brushes it

// An axis's end as a label: thousands whole ("27,876"), others to 4 significant digits.
QString tick_text(double x) { return std::abs(x) >= 1000 ? QLocale().toString(x, 'f', 0) : QString::number(x, 'g', 4); }

QString csv_quote(QString s) { return QStringLiteral("\"%1\"").arg(s.replace('"', QLatin1String("\"\""))); }

// A name's pieces: a line may end after '.', '_', '-' or '/' ("layers." "heads"), or at a space.
QStringList name_pieces(const QString& name) {
  QStringList pieces;
  QString piece;
  for (const QChar c : name) {
    piece += c;
    if (c == QLatin1Char(' ') || QStringLiteral("._-/").contains(c)) {
      pieces << piece;
      piece.clear();
    }
  }
  if (!piece.isEmpty()) pieces << piece;
  return pieces;
}

// `name` on lines of at most `width` pixels in `metrics`, every letter kept; *cut is set when a
// piece was wider than `width` and had to be cut between letters.
QStringList wrapped_name(const QFontMetrics& metrics, const QString& name, int width, bool* cut) {
  auto fits = [&](const QString& s) { return metrics.horizontalAdvance(s.trimmed()) <= width; };
  QStringList lines;
  QString line;
  for (const QString& piece : name_pieces(name)) {
    if (line.trimmed().isEmpty() || fits(line + piece)) {
      line += piece;
    } else {
      lines << line.trimmed();
      line = piece;
    }
    while (!fits(line) && line.trimmed().size() > 1) {
      *cut = true;
      qsizetype k = line.size() - 1;
      while (k > 1 && !fits(line.left(k))) --k;
      lines << line.left(k).trimmed();
      line = line.mid(k);
    }
  }
  if (!line.trimmed().isEmpty()) lines << line.trimmed();
  return lines;
}

}  // namespace

ParallelCoordinates::ParallelCoordinates(const QString& title, QWidget* parent)
    : PlotPanel(title, QString(), QString(), parent) {
  setLogOptionVisible(false);
  // Its own scales: no zoom or pan, and no "Fit" (there is nothing to fit).
  plot()->setInteractions(QCP::Interactions());
  for (QToolButton* b : findChildren<QToolButton*>())
    if (b->text() == tr("Fit")) b->hide();
  plot()->xAxis->setVisible(false);
  plot()->yAxis->setVisible(false);
  plot()->axisRect()->setAutoMargins(QCP::msNone);
  plot()->axisRect()->setMargins(QMargins(8, 8, 8, 8));
  setCsvWriter([this] { return csv(); });
  connect(plot(), &QCustomPlot::mousePress, this, &ParallelCoordinates::pressed);
  connect(plot(), &QCustomPlot::mouseMove, this, &ParallelCoordinates::moved);
  connect(plot(), &QCustomPlot::mouseRelease, this, &ParallelCoordinates::released);
  // PlotPanel rescales on a double click; these scales are fixed.
  connect(plot(), &QCustomPlot::mouseDoubleClick, this, [this](QMouseEvent*) { draw(); });
  setToolTip(tr("Drag along an axis to keep only the runs in that range (a click on the axis clears it)"));
}

QColor ParallelCoordinates::viridis(double t) {
  return colours::viridis(t);
}

void ParallelCoordinates::setData(const QVector<Axis>& axes, const QStringList& rows, const QVector<double>& colour,
                                  const QString& colourName) {
  axes_ = axes;
  rows_ = rows;
  colour_ = colour;
  colourName_ = colourName;
  ranges_.clear();
  for (const Axis& a : axes_) {
    double lo = INFINITY, hi = -INFINITY;
    for (double v : a.values)
      if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
    if (!std::isfinite(lo)) lo = hi = 0;
    ranges_.push_back({lo, hi});
  }
  for (const QString& name : brushes_.keys())
    if (axisOf(name) < 0) brushes_.remove(name);
  draw();
}

int ParallelCoordinates::axisOf(const QString& name) const {
  for (int i = 0; i < axes_.size(); ++i)
    if (axes_[i].name == name) return i;
  return -1;
}

double ParallelCoordinates::position(int axis, double value) const {
  const auto [lo, hi] = ranges_[axis];
  if (!std::isfinite(value)) return NAN;
  return hi > lo ? (value - lo) / (hi - lo) : 0.5;
}

void ParallelCoordinates::setBrush(int axis, double lo, double hi) {
  if (axis < 0 || axis >= axes_.size()) return;
  if (lo > hi) std::swap(lo, hi);
  brushes_[axes_[axis].name] = {lo, hi};
  draw();
  emit brushesChanged();
}

void ParallelCoordinates::clearBrush(int axis) {
  if (axis < 0 || axis >= axes_.size() || !brushes_.remove(axes_[axis].name)) return;
  draw();
  emit brushesChanged();
}

void ParallelCoordinates::clearBrushes() {
  if (brushes_.isEmpty()) return;
  brushes_.clear();
  draw();
  emit brushesChanged();
}

QVector<bool> ParallelCoordinates::passing() const {
  QVector<bool> pass(rows_.size(), true);
  for (auto it = brushes_.begin(); it != brushes_.end(); ++it) {
    const int a = axisOf(it.key());
    if (a < 0) continue;
    for (int r = 0; r < rows_.size(); ++r) {
      const double v = axes_[a].values.value(r, NAN);
      pass[r] = pass[r] && std::isfinite(v) && v >= it.value().first && v <= it.value().second;
    }
  }
  return pass;
}

void ParallelCoordinates::draw() {
  QCustomPlot* p = plot();
  p->clearPlottables();
  p->clearItems();
  dragRect_ = nullptr;
  names_.clear();
  const int n = static_cast<int>(axes_.size());
  p->xAxis->setRange(-0.5, std::max(n, 1) - 0.5);
  // The names above the axes, in the axis rect's top margin; the axes' tops 9 px below it, room
  // for the top value's label (issue 69: "l_model" and "layers.hea…" ran into each other).
  const int top = placeNames(font()) + 4;
  p->axisRect()->setMargins(QMargins(8, top, 8, 8));
  constexpr double kLow = -0.16;
  const double h = p->height() - top - 8;
  p->yAxis->setRange(kLow, h > 30 ? (1 - 9 * kLow / h) / (1 - 9 / h) : 1.14);
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.85);

  // The colour scale over the coloured rows.
  double clo = INFINITY, chi = -INFINITY;
  for (double c : colour_)
    if (std::isfinite(c)) clo = std::min(clo, c), chi = std::max(chi, c);
  const QVector<bool> pass = passing();
  // Rows outside a brush first (faint, beneath), then the others.
  for (int round = 0; round < 2; ++round)
    for (int r = 0; r < rows_.size(); ++r) {
      if (pass[r] != (round == 1)) continue;
      auto* line = new QCPCurve(p->xAxis, p->yAxis);
      QVector<double> xs, ys;
      for (int a = 0; a < n; ++a) xs << a, ys << position(a, axes_[a].values.value(r, NAN));
      line->setData(xs, ys);
      line->setName(rows_[r]);
      const double c = colour_.value(r, NAN);
      QColor col = !pass[r] ? QColor(180, 180, 180, 90)
                   : std::isfinite(c) ? viridis(chi > clo ? (c - clo) / (chi - clo) : 0.5)
                                      : QColor(120, 120, 120);
      line->setPen(QPen(col, pass[r] ? 1.8 : 1.0));
      line->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, col, col, pass[r] ? 4 : 2));
    }

  // The pixels between two axes, about (a resize draws again: resizeEvent).
  const int gap = p->width() / std::max(n, 1);
  for (int a = 0; a < n; ++a) {
    auto* axis = new QCPItemLine(p);
    axis->start->setCoords(a, 0);
    axis->end->setCoords(a, 1);
    axis->setPen(QPen(QColor(60, 60, 60), 1.2));
    auto label = [&](double y, const QString& text) {
      auto* t = new QCPItemText(p);
      t->position->setCoords(a, y);
      t->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
      t->setPadding(QMargins(4, 0, 0, 0));
      // No wider than the gap to the next axis (issue 48: long values ran into their neighbours);
      // the table beside the plot has them whole.
      t->setText(a + 1 < n ? QFontMetrics(small).elidedText(text, Qt::ElideRight, std::max(gap - 8, 24)) : text);
      t->setFont(small);
      t->setColor(QColor(70, 70, 70));
      t->setBrush(QColor(255, 255, 255, 170));
    };
    const Axis& ax = axes_[a];
    if (!ax.categories.isEmpty()) {
      for (int k = 0; k < ax.categories.size(); ++k) label(position(a, k), ax.categories[k]);
    } else {
      const auto [lo, hi] = ranges_[a];
      label(position(a, lo), tick_text(lo));
      if (hi > lo) label(1, tick_text(hi));
    }
    if (brushes_.contains(ax.name)) {
      const auto [lo, hi] = brushes_[ax.name];
      auto* rect = new QCPItemRect(p);
      rect->topLeft->setCoords(a - 0.06, std::min(position(a, hi), 1.0) + 0.01);
      rect->bottomRight->setCoords(a + 0.06, std::max(position(a, lo), 0.0) - 0.01);
      rect->setPen(QPen(colours::rdbuBlue(), 1.2));
      rect->setBrush(colours::withAlpha(colours::rdbuBlue(), 50));
    }
  }
  if (std::isfinite(clo)) {
    auto* legend = new QCPItemText(p);
    legend->position->setType(QCPItemPosition::ptAxisRectRatio);
    legend->position->setCoords(0.0, 1.0);
    legend->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
    legend->setFont(small);
    legend->setText(tr("colour: %1, %2 (dark purple) to %3 (yellow)")
                        .arg(colourName_, QString::number(clo, 'g', 4), QString::number(chi, 'g', 4)));
  }
  if (isVisible()) p->replot(QCustomPlot::rpQueuedReplot);
}

void ParallelCoordinates::resizeEvent(QResizeEvent* e) {
  PlotPanel::resizeEvent(e);
  if (e->oldSize() != e->size() && !axes_.isEmpty()) draw();  // the labels fit the new gaps and height
}

int ParallelCoordinates::placeNames(const QFont& base) {
  QCustomPlot* p = plot();
  const int n = static_cast<int>(axes_.size());
  if (n == 0) return 8;
  const double width = std::max(p->width() - 16, 40), gap = width / n;
  struct Layout {
    QFont font;
    bool stagger = false;
    QVector<QStringList> lines;
    bool cut = false;
    qsizetype most = 0;
  };
  // Each name as wide as the room half-way to the next name of its row on either side (the
  // plot's edge at the ends): one row of names, or two staggered rows (twice the room each).
  auto lay = [&](double scale, bool stagger) {
    Layout l{base, stagger, {}};
    l.font.setPointSizeF(base.pointSizeF() * scale);
    const QFontMetrics metrics(l.font);
    const int k = stagger ? 2 : 1;
    for (int a = 0; a < n; ++a) {
      const double centre = 8 + (a + 0.5) * gap;
      const double left = a - k >= 0 ? k * gap / 2 : centre;
      const double right = a + k < n ? k * gap / 2 : p->width() - centre;
      const int room = std::max(static_cast<int>(2 * std::min(left, right)) - 6, 12);
      l.lines << wrapped_name(metrics, axes_[a].title.isEmpty() ? axes_[a].name : axes_[a].title, room, &l.cut);
      l.most = std::max(l.most, l.lines.last().size());
    }
    return l;
  };
  // Whole pieces on at most three lines, in one row, else two, else a smaller font; letters cut
  // apart only when nothing else fits.
  Layout chosen;
  const std::pair<double, bool> tries[] = {{1.0, false}, {1.0, true}, {0.85, true}, {0.7, true}};
  for (const auto& [scale, stagger] : tries) {
    chosen = lay(scale, stagger);
    if (!chosen.cut && chosen.most <= 3) break;
  }
  const QFontMetrics metrics(chosen.font);
  int rowHeight[2] = {0, 0};
  for (int a = 0; a < n; ++a) {
    const QRect r = metrics.boundingRect(0, 0, 0, 0, Qt::TextDontClip | Qt::AlignHCenter, chosen.lines[a].join(QLatin1Char('\n')));
    int& row = rowHeight[chosen.stagger ? a % 2 : 0];
    row = std::max(row, r.height());
  }
  for (int a = 0; a < n; ++a) {
    auto* name = new QCPItemText(p);
    name->setClipToAxisRect(false);  // in the margin above the axes
    name->position->setTypeX(QCPItemPosition::ptPlotCoords);
    name->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
    name->position->setCoords(a, 0);
    name->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
    name->setTextAlignment(Qt::AlignHCenter);
    name->setFont(chosen.font);
    name->setText(chosen.lines[a].join(QLatin1Char('\n')));
    // The second row stands on the first.
    name->setPadding(QMargins(0, 0, 0, chosen.stagger && a % 2 == 1 ? rowHeight[0] + 6 : 2));
    names_ << name;
  }
  return rowHeight[0] + (chosen.stagger ? rowHeight[1] + 4 : 0) + 2;
}

QVector<ParallelCoordinates::NameShown> ParallelCoordinates::namesShown() const {
  QVector<NameShown> shown;
  for (const QCPItemText* name : names_) {
    const QMargins m = name->padding();
    const QRectF box(name->topLeft->pixelPosition(), name->bottomRight->pixelPosition());
    shown.push_back({name->text(), box.adjusted(m.left(), m.top(), -m.right(), -m.bottom())});
  }
  return shown;
}

void ParallelCoordinates::pressed(QMouseEvent* e) {
  if (e->button() != Qt::LeftButton || axes_.isEmpty()) return;
  const double x = plot()->xAxis->pixelToCoord(e->position().x());
  const int a = static_cast<int>(std::lround(x));
  if (a < 0 || a >= axes_.size() || std::abs(x - a) > kGrab) return;
  dragAxis_ = a;
  dragFrom_ = std::clamp(plot()->yAxis->pixelToCoord(e->position().y()), 0.0, 1.0);
  dragRect_ = new QCPItemRect(plot());
  dragRect_->setPen(QPen(colours::rdbuBlue(), 1, Qt::DashLine));
  dragRect_->setBrush(colours::withAlpha(colours::rdbuBlue(), 40));
  moved(e);
}

void ParallelCoordinates::moved(QMouseEvent* e) {
  if (dragAxis_ < 0 || !dragRect_) return;
  const double y = std::clamp(plot()->yAxis->pixelToCoord(e->position().y()), 0.0, 1.0);
  dragRect_->topLeft->setCoords(dragAxis_ - 0.06, std::max(y, dragFrom_));
  dragRect_->bottomRight->setCoords(dragAxis_ + 0.06, std::min(y, dragFrom_));
  plot()->replot(QCustomPlot::rpQueuedReplot);
}

void ParallelCoordinates::released(QMouseEvent* e) {
  if (dragAxis_ < 0) return;
  const int a = dragAxis_;
  dragAxis_ = -1;
  const double y = std::clamp(plot()->yAxis->pixelToCoord(e->position().y()), 0.0, 1.0);
  if (std::abs(y - dragFrom_) < 0.02) {  // a click: clear the axis's brush
    clearBrush(a);
    draw();
    return;
  }
  // Positions back to the axis's values.
  const auto [lo, hi] = ranges_[a];
  auto value = [&](double t) { return lo + t * (hi - lo); };
  setBrush(a, value(std::min(y, dragFrom_)), value(std::max(y, dragFrom_)));
}

QString ParallelCoordinates::csv() const {
  QString out = csv_quote(tr("run"));
  for (const Axis& a : axes_) out += QLatin1Char(',') + csv_quote(a.name);
  out += QLatin1Char(',') + csv_quote(tr("colour: %1").arg(colourName_)) + QStringLiteral(",in_brushes\n");
  const QVector<bool> pass = passing();
  for (int r = 0; r < rows_.size(); ++r) {
    out += csv_quote(rows_[r]);
    for (const Axis& a : axes_) {
      const double v = a.values.value(r, NAN);
      out += QLatin1Char(',');
      if (!std::isfinite(v)) continue;
      out += a.categories.isEmpty() ? QString::number(v, 'g', 17)
                                    : csv_quote(a.categories.value(static_cast<int>(v)));
    }
    out += QLatin1Char(',') + QString::number(colour_.value(r, NAN), 'g', 17) +
           (pass[r] ? QStringLiteral(",1\n") : QStringLiteral(",0\n"));
  }
  return out;
}

}  // namespace studio
