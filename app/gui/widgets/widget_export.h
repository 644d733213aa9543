#pragma once
// The export path of the studio's custom-painted widgets (receptive-field diagram, radar
// chart), matching PlotPanel::exportTo: PNG (QWidget::grab at 2x), PDF (QPdfWriter) and SVG
// (QSvgGenerator), by the path's extension. The widget paints itself into each device.
#include <QString>

class QWidget;

namespace studio {

// Returns an empty string on success, else the reason.
QString export_widget(QWidget* widget, const QString& path);

}  // namespace studio
