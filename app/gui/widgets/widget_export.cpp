#include "gui/widgets/widget_export.h"

#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>
#include <QPixmap>
#include <QRegularExpression>
#include <QSvgGenerator>
#include <QWidget>

namespace studio {

QString export_stem(const QString& runDir, const QString& view) {
  QStringList parts;
  for (QString p : {QFileInfo(runDir).fileName(), view}) {
    p.replace(QRegularExpression(QStringLiteral("[^A-Za-z0-9._-]+")), QStringLiteral("-"));
    if (!p.isEmpty()) parts << p;
  }
  return parts.join(QLatin1Char('-'));
}

QString export_stem(const QWidget* widget) {
  QString view;
  for (const QWidget* w = widget; w && view.isEmpty(); w = w->parentWidget())
    view = w->property("exportView").toString();
  return export_stem(widget->window()->property("exportRun").toString(), view);
}

QString export_widget(QWidget* widget, const QString& path) {
  const QString ext = QFileInfo(path).suffix().toLower();
  const QSize size = widget->size().expandedTo(QSize(200, 150));
  const QString failed = QObject::tr("cannot write %1").arg(path);
  if (ext == QLatin1String("png")) {
    QPixmap pixmap(size * 2);
    pixmap.setDevicePixelRatio(2.0);
    pixmap.fill(Qt::white);
    widget->render(&pixmap);
    return pixmap.save(path) ? QString() : failed;
  }
  if (ext == QLatin1String("pdf")) {
    QPdfWriter pdf(path);
    pdf.setTitle(widget->objectName());
    pdf.setCreator(QStringLiteral("HSM Studio"));
    pdf.setPageSize(QPageSize(QSizeF(size), QPageSize::Point));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setResolution(72);
    QPainter painter;
    if (!painter.begin(&pdf)) return failed;
    widget->render(&painter);
    painter.end();
    return QFileInfo(path).size() > 0 ? QString() : failed;
  }
  if (ext == QLatin1String("svg")) {
    QSvgGenerator svg;
    svg.setFileName(path);
    svg.setSize(size);
    svg.setViewBox(QRect(QPoint(0, 0), size));
    svg.setTitle(widget->objectName());
    QPainter painter;
    if (!painter.begin(&svg)) return failed;
    widget->render(&painter);
    painter.end();
    return QFileInfo(path).size() > 0 ? QString() : failed;
  }
  return QObject::tr("unknown export format '.%1' (use .png, .pdf or .svg)").arg(ext);
}

}  // namespace studio
