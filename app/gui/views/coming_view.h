#pragma once
// An honest placeholder for a view that is not built yet: what it will show, and how to
// get the same numbers today from the command line.
#include <QWidget>

namespace studio {

class ComingView : public QWidget {
  Q_OBJECT
 public:
  ComingView(const QString& title, const QString& what, const QString& meanwhile, QWidget* parent = nullptr);
};

}  // namespace studio
