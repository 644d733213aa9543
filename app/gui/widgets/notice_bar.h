#pragma once
// A tinted bar for a state the user must not miss (the what-if banner of the Weights view and
// the Playground): a label on the left, its buttons or boxes on the right. Hidden at first.
#include <QFrame>
#include <QList>

#include "hsm/what_if.h"

class QLabel;

namespace studio {

class NoticeBar : public QFrame {
  Q_OBJECT
 public:
  NoticeBar(const QString& objectName, QLabel* text, const QList<QWidget*>& controls, QWidget* parent = nullptr);

  // The views that show a run's model (Playground, Probe): shown while `edits` is not empty,
  // "Edited model (what-if, not saved): <the edits>. <consequence>"; hidden otherwise.
  void showWhatIf(const hsm::WhatIf& edits, const QString& consequence);
  // The text while shown, else empty.
  QString shownText() const;

 private:
  QLabel* text_;
};

}  // namespace studio
