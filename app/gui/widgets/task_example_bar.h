#pragma once
// What the Diagnostics and Probe views show instead of the prompt box for a run trained on a
// synthetic task (issue 38, docs/lab.md "A task run in the other views"): the task, which test
// example is the prompt (a spin box and "Next example"), and after a run the model's answer
// against the right one at each answer position. Test examples only: never one it trained on.
#include <QJsonObject>
#include <QVector>
#include <QWidget>
#include <initializer_list>
#include <string>

#include "hsm/tasks.h"

class QLabel;
class QPushButton;
class QSpinBox;

namespace studio {

class TaskExampleBar : public QWidget {
  Q_OBJECT
 public:
  // objectPrefix names the children ("<prefix>_example", "_next", "_task", "_answers"), so
  // each view's bar is found by its own names.
  explicit TaskExampleBar(const QString& objectPrefix, QWidget* parent = nullptr);

  // Follows the current run: for a task run (`task`, hsm::run_task's spec) the bar is shown
  // with its task and the text prompt's widgets are hidden; for a corpus run ("") the reverse.
  // Returns whether it is a task run.
  bool follow(const std::string& task, std::initializer_list<QWidget*> textPrompt);
  int example() const;
  void setExample(int index);
  // The answers of a prompt the model read (or clears them when prompt has no predictions).
  void showAnswers(const hsm::TaskPrompt& prompt);
  void clearAnswers();
  QString answersText() const;

  // A task example's labels with each answer position marked "▸" (the query axis, the lens).
  static QStringList markedLabels(const hsm::TaskPrompt& prompt, const std::vector<std::string>& labels);
  // The answer positions, as rows whose labels a heatmap always shows (HeatmapPanel::setPinnedRows).
  static QVector<int> answerRows(const hsm::TaskPrompt& prompt);
  // What an export says of the example: the task, the test index, the token ids and labels,
  // and each answer's position, right token and prediction.
  static QJsonObject json(const hsm::TaskPrompt& prompt);

 signals:
  // The spin box or "Next example" chose another example (the view runs it).
  void exampleChosen(int index);

 private:
  QLabel* task_;
  QSpinBox* example_;
  QPushButton* next_;
  QLabel* answers_;
};

}  // namespace studio
