#include "gui/widgets/layout_helpers.h"

#include <QHBoxLayout>
#include <QPushButton>
#include <QScrollArea>
#include <QStyle>

namespace studio {

QPushButton* makeButton(const QString& text, const QString& objectName, const QString& toolTip) {
  auto* button = new QPushButton(text);
  button->setObjectName(objectName);
  if (!toolTip.isEmpty()) button->setToolTip(toolTip);
  return button;
}

QHBoxLayout* makeRow(const QList<QWidget*>& widgets, const QList<QWidget*>& stretched) {
  auto* row = new QHBoxLayout;
  for (QWidget* w : widgets) row->addWidget(w, stretched.contains(w) ? 1 : 0);
  return row;
}

QScrollArea* scrollWhenShort(QWidget* content, Qt::ScrollBarPolicy horizontal) {
  auto* area = new QScrollArea;
  area->setWidget(content);
  area->setWidgetResizable(true);
  area->setFrameShape(QFrame::NoFrame);
  area->setHorizontalScrollBarPolicy(horizontal);
  // Without a horizontal bar the area is at least as wide as the content's smallest width and
  // a vertical bar beside it.
  if (horizontal == Qt::ScrollBarAlwaysOff) {
    const int bar = area->style()->pixelMetric(QStyle::PM_ScrollBarExtent);
    area->setMinimumWidth(content->minimumSizeHint().width() + bar + 2);
  }
  return area;
}

}  // namespace studio
