#pragma once
// What one side of the Diagnostics view (diagnostics_view.h) holds and asks the engine, apart
// from its widgets (docs/architecture.md, "Add a view": state and widgets): the run the side
// shows (the current run, or the compared one) and its diagnosis of the prompt, or of a task
// run's test example. It draws nothing: the view draws what it holds when it says so.
#include <QObject>
#include <QString>
#include <string>

#include "hsm/diagnostics.h"
#include "hsm/tasks.h"

namespace studio {

class EngineHost;

class DiagnosisState : public QObject {
  Q_OBJECT
 public:
  explicit DiagnosisState(EngineHost* engine, QObject* parent = nullptr);

  // The run this side diagnoses (its folder; empty: none).
  QString runDir() const { return runDir_; }
  void setRunDir(const QString& runDir) { runDir_ = runDir; }
  // Follows `runDir` with nothing of it diagnosed yet.
  void clear(const QString& runDir);

  // Diagnoses runDir() on `prompt`, or for a task run (`task` not empty) on test example
  // `example` of that task (a run of another task is refused): diagnosed, answeredForARunLeft or
  // failed when it answers.
  void start(const std::string& prompt, const std::string& task, int example);
  bool isRunning() const { return running_; }
  bool has() const { return has_; }
  const hsm::Diagnosis& diagnosis() const { return diagnosis_; }
  const hsm::TaskPrompt& example() const { return example_; }  // a task run's: the example diagnosed

 signals:
  void diagnosed();           // of runDir(): diagnosis() and example() are new
  void answeredForARunLeft();  // of a run this side no longer follows: dropped
  void failed(const QString& message);

 private:
  EngineHost* engine_;
  QString runDir_;
  bool running_ = false;
  bool has_ = false;
  hsm::Diagnosis diagnosis_;
  hsm::TaskPrompt example_;
};

}  // namespace studio
