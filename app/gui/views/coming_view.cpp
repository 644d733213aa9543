#include "gui/views/coming_view.h"

#include <QLabel>
#include <QVBoxLayout>

namespace studio {

ComingView::ComingView(const QString& title, const QString& what, const QString& meanwhile, QWidget* parent)
    : QWidget(parent) {
  auto* label = new QLabel(tr("<h2>%1: coming</h2><p>%2</p><p><b>Meanwhile</b>: %3</p>").arg(title, what, meanwhile));
  label->setWordWrap(true);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  label->setMaximumWidth(700);
  auto* layout = new QVBoxLayout(this);
  layout->addStretch(1);
  layout->addWidget(label, 0, Qt::AlignHCenter);
  layout->addStretch(2);
}

}  // namespace studio
