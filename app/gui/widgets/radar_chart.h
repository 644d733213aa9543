#pragma once
// A radar (spider) chart in the style of Deconstructing Attention's Figure 1: one spoke per
// indicator (ENTROPY, CONC, HEADDIV, SINK, LocFoc0..3), values 0..1 (normalised), one
// translucent polygon per layer with a legend. Custom-painted; exported through
// export_widget() (PNG/PDF/SVG) and csv().
#include <QColor>
#include <QStringList>
#include <QVector>
#include <QWidget>

namespace studio {

class RadarChart : public QWidget {
  Q_OBJECT
 public:
  struct Series {
    QString name;
    QColor color;
    QVector<double> values;  // one per axis, 0..1 (clamped when drawn)
  };
  explicit RadarChart(QWidget* parent = nullptr);

  void setTitle(const QString& title);
  void setAxes(const QStringList& axes);
  void setSeries(const QVector<Series>& series);
  const QStringList& axes() const { return axes_; }
  const QVector<Series>& series() const { return series_; }
  // One line per series: name, then a value per axis.
  QString csv() const;
  // Where the polygon of `series` crosses spoke `axis` (for tests and hover).
  QPointF vertex(int series, int axis) const;

  QSize sizeHint() const override { return {420, 340}; }
  // Tall enough for a readable chart (issue 69: at 1024x600 it was squeezed to a 35 px radius,
  // its axis names overlapping); the Diagnostics view scrolls rather than squeeze it.
  QSize minimumSizeHint() const override { return {240, 240}; }

  // The colour of layer i of n in the studio's radar charts and tables.
  static QColor layerColor(int i, int n);

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  QRectF chartRect() const;

  QString title_;
  QStringList axes_;
  QVector<Series> series_;
};

}  // namespace studio
