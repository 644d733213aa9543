#include "gui/widgets/notice_bar.h"

#include <QHBoxLayout>
#include <QLabel>

namespace studio {

NoticeBar::NoticeBar(const QString& objectName, QLabel* text, const QList<QWidget*>& controls, QWidget* parent)
    : QFrame(parent) {
  setObjectName(objectName);
  setStyleSheet(QStringLiteral("#%1 { background: #fff4d6; border: 1px solid #e0b94f; }").arg(objectName));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 3, 6, 3);
  layout->addWidget(text, 1);
  for (QWidget* w : controls) layout->addWidget(w);
  hide();
}

}  // namespace studio
