#include "gui/widgets/notice_bar.h"

#include <QHBoxLayout>
#include <QLabel>

namespace studio {

NoticeBar::NoticeBar(const QString& objectName, QLabel* text, const QList<QWidget*>& controls, QWidget* parent)
    : QFrame(parent), text_(text) {
  setObjectName(objectName);
  setStyleSheet(QStringLiteral("#%1 { background: #fff4d6; border: 1px solid #e0b94f; }").arg(objectName));
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(6, 3, 6, 3);
  layout->addWidget(text, 1);
  for (QWidget* w : controls) layout->addWidget(w);
  hide();
}

void NoticeBar::showWhatIf(const hsm::WhatIf& edits, const QString& consequence) {
  setVisible(!edits.empty());
  text_->setText(edits.empty() ? QString()
                               : tr("<b>Edited model</b> (what-if, not saved): %1. %2")
                                     .arg(QString::fromStdString(hsm::what_if_label(edits)).toHtmlEscaped(), consequence));
}

QString NoticeBar::shownText() const { return parentWidget() && isVisibleTo(window()) ? text_->text() : QString(); }

}  // namespace studio
