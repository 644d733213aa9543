#pragma once
// The export path of the studio's custom-painted widgets (receptive-field diagram, radar
// chart), matching PlotPanel::exportTo: PNG (QWidget::grab at 2x), PDF (QPdfWriter) and SVG
// (QSvgGenerator), by the path's extension. The widget paints itself into each device.
#include <QString>

class QWidget;

namespace studio {

// Returns an empty string on success, else the reason.
QString export_widget(QWidget* widget, const QString& path);

// The start of an exported file's name: the run and the view it came from, so a folder of
// exports says what each file is of, e.g. "hsm_ab-diagnostics" (either part may be empty;
// only letters, digits, '.', '_' and '-' are kept).
QString export_stem(const QString& runDir, const QString& view);
// The same for a widget in the studio's window: the run current there (the window's
// "exportRun" property, which MainWindow keeps) and the view the widget is in (the nearest
// "exportView" property up its parents).
QString export_stem(const QWidget* widget);

}  // namespace studio
