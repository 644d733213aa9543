#pragma once
// The first-run tour (issue 36): a small window beside the main window that walks through the
// views on the bundled demo models, one step per view, saying in plain words what each shows
// and what to try. Skippable at any step; Help › Take the tour opens it again. Whether it
// has been seen is kept in the settings, so it opens by itself only once.
#include <QDialog>
#include <functional>
#include <vector>

#include "gui/views/view_entry.h"

class QLabel;
class QPushButton;

namespace studio::help {

class Tour : public QDialog {
  Q_OBJECT
 public:
  // `views`: the view registry's entries (kept by reference), whose ids the steps name;
  // showView(view) brings the view at that index (-1: the start page) to the front;
  // openDemo() opens the bundled models when no run is open and returns how many are open.
  Tour(const std::vector<ViewEntry>& views, std::function<void(int)> showView, std::function<int()> openDemo,
       QWidget* parent = nullptr);

  int stepCount() const;
  int step() const { return step_; }
  void goTo(int step);
  void next();
  void skip();  // closes the tour and marks it seen
  QString stepText() const;
  int stepView() const;  // the step's view's index in the entries (-1: the start page or none)

  // Whether the tour has been seen (finished or skipped) on this computer.
  static bool seen();
  static void setSeen(bool seen);

 private:
  const std::vector<ViewEntry>& views_;
  std::function<void(int)> showView_;
  std::function<int()> openDemo_;
  QLabel* title_;
  QLabel* body_;
  QLabel* counter_;
  QPushButton* back_;
  QPushButton* next_;
  int step_ = 0;
};

}  // namespace studio::help
