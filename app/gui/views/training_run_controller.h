#pragma once
// The Training view's run controller: Start (a run built from the form), Pause / Resume,
// Stop and Continue; what the engine reports while it trains: the stage, the data and
// training progress with epoch and ETA, the engine's log; a failed start taken off the list.
#include <QElapsedTimer>
#include <QObject>

#include "hsm/trainer.h"

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QToolButton;
class QWidget;

namespace studio {

class EngineHost;
class RunList;
class TrainingForm;

class TrainingRunController : public QObject {
  Q_OBJECT
 public:
  // Makes the two widgets below; the view places them (they become its children).
  TrainingRunController(TrainingForm* form, RunList* runs, EngineHost* engine, QObject* parent = nullptr);

  QWidget* actions() const { return actions_; }  // the buttons, kept in view below the form
  QWidget* status() const { return status_; }    // stage, progress bars, the log

  // Checks every field of the form and builds the run; a refusal becomes lastError().
  bool buildSpec(hsm::RunSpec& spec);
  // As the Start button: returns false when a field was refused or training is running.
  bool start();
  bool continueCurrentRun();

  QPushButton* startButton() const { return startButton_; }
  QPushButton* pauseButton() const { return pauseButton_; }
  QPushButton* stopButton() const { return stopButton_; }
  QString lastError() const { return lastError_; }

 signals:
  void trainingFailed(const QString& message);

 private:
  void buildActions();
  void buildStatus();
  void buildLog();  // the engine log, folded away under its toggle
  void updateButtons();
  void onProgress(const QString& stage, double fraction);
  void onMetric(const QString& runDir, const hsm::MetricRecord& m);
  void onFinished(const hsm::TrainSummary& s);
  void onFailed(const QString& runDir, const QString& message);
  void appendLog(const QString& line);

  TrainingForm* form_;
  RunList* runs_;
  EngineHost* engine_;
  QWidget* actions_;
  QPushButton* startButton_;
  QPushButton* pauseButton_;
  QPushButton* stopButton_;
  QPushButton* continueButton_;
  QWidget* status_;
  QLabel* stageLabel_;
  QProgressBar* dataProgress_;
  QProgressBar* trainProgress_;
  QToolButton* logToggle_;
  QPlainTextEdit* log_;
  QElapsedTimer runClock_;
  int64_t firstStep_ = -1;
  QString lastError_;
};

}  // namespace studio
