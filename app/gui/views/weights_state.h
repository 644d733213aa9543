#pragma once
// What the Weights view (weights_view.h) holds and asks the engine, apart from its widgets
// (docs/architecture.md, "Add a view": state and widgets): the current run's trained weights
// (the run and step they are of), the run the what-if editor edits and its edits (kept by the
// engine host), the edited model's loss beside the trained one's (or, for a task run, its test
// accuracy), and the edited model saved as a new run folder. It draws nothing: the view draws
// what it holds when it says so.
#include <QObject>
#include <QString>
#include <cmath>
#include <optional>
#include <vector>

#include "gui/engine/executor.h"
#include "gui/engine_types.h"
#include "gui/run_evaluation.h"
#include "hsm/diagnostics.h"
#include "hsm/tasks.h"

namespace studio {

class EngineHost;

class WeightsState : public QObject {
  Q_OBJECT
 public:
  explicit WeightsState(EngineHost* engine, QObject* parent = nullptr);

  // Reads `runDir`'s trained weights (even for an edited run: the view draws its edits over
  // them) on the interactive thread: weightsRead or readFailed.
  void read(const QString& runDir);
  bool isReading() const { return reading_; }

  // The trained weights shown, of `runDir` at `step`; forget() drops them (another run).
  void setShown(const QString& runDir, qint64 step, const std::vector<hsm::MixerWeights>& trained);
  void forget();
  const std::vector<hsm::MixerWeights>& trained() const { return trained_; }
  QString shownRun() const { return shownRun_; }
  qint64 step() const { return step_; }

  // The run the what-if editor edits (an absolute path; empty: none yet) and its edits, held by
  // the engine host (EngineHost::setWhatIf): setEdits sends them, editRefused if it refuses.
  QString editorRun() const { return editorRun_; }
  void setEditorRun(const QString& runDir);  // forgets the evaluation of the run left
  hsm::WhatIf edits() const;
  void setEdits(const hsm::WhatIf& edits);

  // The edited model's loss beside the trained one's on the first maxWindows windows of `data`
  // (its training's `windows`); `recorded`, the run's own evaluation when its record has it
  // (else computed beside, once per checkpoint): evaluated or evaluationFailed. A newer
  // evaluation supersedes one under way: only the newest answers.
  void evaluate(const QString& data, const QString& windows, int maxWindows,
                const std::optional<RunEvaluation>& recorded);
  // A task run: its test examples scored trained against edited: taskEvaluated or
  // taskEvaluationFailed (only the newest asked answers).
  void evaluateTask();
  static constexpr int64_t kTaskExamples = 256;
  bool isEvaluating() const { return evaluating_.feed() != nullptr; }
  bool hasEvaluation() const { return hasEval_; }
  const WhatIfEvaluation& lastEvaluation() const { return eval_; }
  // The evaluation's headline: the run's record (none: computed by the evaluation).
  const std::optional<RunEvaluation>& recordedEvaluation() const { return recorded_; }
  // The run's own evaluation on every window, as `hsm eval` gives it; NaN until known.
  double evaluationLoss() const { return evaluationLoss_; }
  void setEvaluationLoss(double loss) { evaluationLoss_ = loss; }

  // Writes the edited model as a new run folder `folder`: saved or saveFailed.
  void saveAs(const QString& folder);
  bool isSaving() const { return saving_; }
  QString savedRun() const { return savedRun_; }

  QString lastError() const { return lastError_; }
  void setLastError(const QString& error) { lastError_ = error; }

 signals:
  void weightsRead(const QString& runDir, const std::vector<hsm::MixerWeights>& trained);
  void readFailed(const QString& message);
  void editRefused(const QString& message);
  void evaluated();  // lastEvaluation() and evaluationLoss() are the newest
  void evaluationFailed(const QString& message);
  // `hasEdits`: the run had edits when the scores came (else both are the trained model's).
  void taskEvaluated(const hsm::TaskScore& trained, const hsm::TaskScore& edited, bool hasEdits);
  void taskEvaluationFailed(const QString& message);
  void saved(const QString& runDir);
  void saveFailed(const QString& message);

 private:
  EngineHost* engine_;
  bool reading_ = false;  // the weights are being read
  std::vector<hsm::MixerWeights> trained_;
  QString shownRun_;
  qint64 step_ = -1;
  QString editorRun_;
  Reply<WhatIfEvaluation> evaluating_;  // the what-if loss under way (none: no feed)
  int taskEvaluation_ = 0;              // the newest task evaluation asked (older answers are dropped)
  bool hasEval_ = false;
  WhatIfEvaluation eval_;
  std::optional<RunEvaluation> recorded_;
  double evaluationLoss_ = std::nan("");
  bool saving_ = false;
  QString savedRun_, lastError_;
};

}  // namespace studio
