#pragma once
// A tinted bar for a state the user must not miss (the what-if banner of the Weights view and
// the Playground): a label on the left, its buttons or boxes on the right. Hidden at first.
#include <QFrame>
#include <QList>

class QLabel;

namespace studio {

class NoticeBar : public QFrame {
  Q_OBJECT
 public:
  NoticeBar(const QString& objectName, QLabel* text, const QList<QWidget*>& controls, QWidget* parent = nullptr);
};

}  // namespace studio
