#include "gui/widgets/layout_helpers.h"

#include <QHBoxLayout>
#include <QPushButton>

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

}  // namespace studio
