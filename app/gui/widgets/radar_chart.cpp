#include "gui/widgets/radar_chart.h"
#include "gui/widgets/colour_maps.h"

#include <QPainter>
#include <QPainterPath>
#include <algorithm>
#include <cmath>

namespace studio {

RadarChart::RadarChart(QWidget* parent) : QWidget(parent) {
  setAttribute(Qt::WA_OpaquePaintEvent);  // paintEvent fills every pixel: nothing beneath to draw
}

QColor RadarChart::layerColor(int i, int n) {
  // Light (early layers) to dark (late), as DA's figure shades layers.
  return colours::layerShade(i, n);
}

void RadarChart::setTitle(const QString& title) {
  title_ = title;
  update();
}

void RadarChart::setAxes(const QStringList& axes) {
  axes_ = axes;
  update();
}

void RadarChart::setSeries(const QVector<Series>& series) {
  series_ = series;
  update();
}

QString RadarChart::csv() const {
  QString out = QStringLiteral("series");
  for (const QString& a : axes_) out += QLatin1Char(',') + a;
  out += QLatin1Char('\n');
  for (const Series& s : series_) {
    out += QStringLiteral("\"%1\"").arg(s.name);
    for (double v : s.values) out += QLatin1Char(',') + QString::number(v, 'g', 17);
    out += QLatin1Char('\n');
  }
  return out;
}

QRectF RadarChart::chartRect() const {
  // The chart on the left, the legend in a column on the right.
  const double legendWidth = series_.isEmpty() ? 0 : 96;
  const double top = title_.isEmpty() ? 8 : 26;
  QRectF area(8, top, width() - 16 - legendWidth, height() - top - 8);
  const double side = std::max(10.0, std::min(area.width(), area.height()));
  return QRectF(area.center().x() - side / 2, area.center().y() - side / 2, side, side);
}

QPointF RadarChart::vertex(int s, int a) const {
  const QRectF r = chartRect().adjusted(44, 22, -44, -22);
  const double radius = std::min(r.width(), r.height()) / 2;
  const int n = std::max<int>(1, static_cast<int>(axes_.size()));
  const double v = std::clamp(series_.value(s).values.value(a), 0.0, 1.0);
  const double angle = -M_PI / 2 + 2 * M_PI * a / n;
  return r.center() + QPointF(std::cos(angle), std::sin(angle)) * radius * v;
}

void RadarChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.fillRect(rect(), Qt::white);
  if (!title_.isEmpty()) {
    QFont f = font();
    f.setBold(true);
    p.setFont(f);
    p.setPen(Qt::black);
    p.drawText(QRectF(0, 4, width(), 20), Qt::AlignHCenter | Qt::AlignVCenter, title_);
    p.setFont(font());
  }
  const int n = static_cast<int>(axes_.size());
  if (n < 3) {
    p.setPen(QColor(110, 110, 110));
    p.drawText(rect(), Qt::AlignCenter, tr("No indicators yet: run a prompt."));
    return;
  }
  const QRectF r = chartRect().adjusted(44, 22, -44, -22);
  const QPointF c = r.center();
  const double radius = std::min(r.width(), r.height()) / 2;
  auto at = [&](int axis, double v) {
    const double angle = -M_PI / 2 + 2 * M_PI * axis / n;
    return c + QPointF(std::cos(angle), std::sin(angle)) * radius * v;
  };
  // Rings at 0.25 steps and the spokes.
  p.setPen(QPen(QColor(215, 215, 215), 1));
  for (int ring = 1; ring <= 4; ++ring) {
    QPolygonF poly;
    for (int a = 0; a < n; ++a) poly << at(a, ring / 4.0);
    p.drawPolygon(poly);
  }
  QFont small = font();
  small.setPointSizeF(small.pointSizeF() * 0.8);
  p.setFont(small);
  for (int a = 0; a < n; ++a) {
    p.setPen(QPen(QColor(200, 200, 200), 1));
    p.drawLine(c, at(a, 1.0));
    const QPointF lp = at(a, 1.0) + (at(a, 1.0) - c) / radius * 14;
    QRectF box(lp.x() - 42, lp.y() - 9, 84, 18);
    p.setPen(QColor(40, 40, 40));
    p.drawText(box, Qt::AlignCenter, axes_[a]);
  }
  p.setPen(QColor(150, 150, 150));
  for (int ring = 2; ring <= 4; ring += 2)
    p.drawText(QRectF(c.x() + 2, c.y() - radius * ring / 4.0 - 14, 30, 14), Qt::AlignLeft | Qt::AlignBottom,
               QString::number(ring / 4.0));
  // One polygon per series.
  for (int s = 0; s < series_.size(); ++s) {
    QPolygonF poly;
    for (int a = 0; a < n; ++a) poly << vertex(s, a);
    QColor fill = series_[s].color;
    fill.setAlpha(40);
    p.setBrush(fill);
    p.setPen(QPen(series_[s].color, 1.8));
    p.drawPolygon(poly);
  }
  p.setBrush(Qt::NoBrush);
  // Legend.
  const double lx = width() - 100;
  double ly = chartRect().top() + 6;
  for (const Series& s : series_) {
    p.fillRect(QRectF(lx, ly + 3, 12, 10), s.color);
    p.setPen(QColor(30, 30, 30));
    p.drawText(QRectF(lx + 16, ly, 84, 16), Qt::AlignLeft | Qt::AlignVCenter,
               p.fontMetrics().elidedText(s.name, Qt::ElideRight, 82));
    ly += 17;
  }
}

}  // namespace studio
