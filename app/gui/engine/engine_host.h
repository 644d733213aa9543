#pragma once
// The GUI thread's handle on the engine: the training thread (its progress as signals) and
// the two executors that answer each engine call with its own typed reply (executor.h).
// Nothing here blocks: every call returns at once.
#include <QObject>
#include <QString>
#include <QThread>
#include <QVector>
#include <memory>

#include "gui/engine/executor.h"
#include "gui/engine_types.h"

namespace studio {

class TrainingWorker;
class WhatIfs;

class EngineHost : public QObject {
  Q_OBJECT
 public:
  explicit EngineHost(QObject* parent = nullptr);
  ~EngineHost() override;  // stops training (it checkpoints) and joins both threads

  // Training: one run at a time. Returns false (and does nothing) while one is running.
  bool startTraining(const hsm::RunSpec& spec);
  void pauseTraining();
  void resumeTraining();
  void stopTraining();
  bool isTraining() const { return training_; }
  bool isPaused() const { return paused_; }
  QString trainingRunDir() const { return trainingRunDir_; }

  // The two engine threads (docs/architecture.md, "Threads"): interactive (generation,
  // diagnosis, probes, weights: short calls a user waits for) and analysis (ablation and
  // what-if losses: long evaluations), so a generation never waits behind an ablation. Both
  // take a run's model from one ModelStore and its what-if edit from whatIfs(). A view calls
  // either directly (Executor::call / stream); the calls below are the ones several views or
  // tests share.
  Executor& interactive() { return *interactive_; }
  Executor& analysis() { return *analysis_; }

  // A generation by the run's model (its edited one, unless `trained`), token by token.
  // Cancelling it ends it after its current token with the tokens so far.
  Reply<hsm::GenerationResult> generate(const QString& runDir, const QString& prompt,
                                        const hsm::GenerateOptions& options, bool trained = false);
  // Probe (issue 22): the logit lens and rollout of a prompt, or, with `generated` token ids,
  // of <|endoftext|>, the prompt and those tokens as generate() fed them (the Playground's
  // provenance).
  QFuture<hsm::Probe> probe(const QString& runDir, const QString& prompt, const QVector<int>& generated = {});
  // Importance by ablation (Evaluator::ablate) on the validation split of a corpus, the first
  // maxWindows windows (0: all), of the run's model with its what-if edit; on the analysis
  // thread. Progress through its feed; cancel() stops it between batches (CallFailed,
  // cancelled).
  Reply<hsm::AblationReport> ablate(const QString& runDir, const QString& dataPath, const QString& windows,
                                    int maxWindows);

  // What-if (issue 23), held by whatIfs(): an edited in-memory model of a run
  // (hsm::Model::edited) that every call for the run uses from now on; an empty WhatIf drops
  // it (Reset). The run folder is never written. whatIf() gives it at once; the reply fails
  // when the model refuses the edit (then the run has none, and whatIfChanged() says so).
  QFuture<void> setWhatIf(const QString& runDir, const hsm::WhatIf& edits);
  hsm::WhatIf whatIf(const QString& runDir) const;
  WhatIfs& whatIfs() { return *whatIfs_; }
  // Validation loss on the first maxWindows windows of the trained and the edited model, on
  // the analysis thread; the windows are read once per corpus and reused for every edit. A
  // newer call supersedes it: the one under way stops between batches and one still queued
  // does not start (both fail with CallFailed, cancelled). With evaluateAll, the trained
  // model on every window too (WhatIfEvaluation::evaluation; computed once per checkpoint).
  Reply<WhatIfEvaluation> evaluateWhatIf(const QString& runDir, const QString& dataPath, const QString& windows,
                                         int maxWindows, bool evaluateAll = false);
  // "Save as…": the edited model as a new run folder (refuses a non-empty one); its path.
  QFuture<QString> saveWhatIf(const QString& runDir, const QString& newDir);

  // Device ("auto", "cpu", "cuda", "cuda:N") and CPU threads (0 = the engine's default)
  // for models loaded from now on; the status bar hears back through systemInfo().
  void configure(const QString& device, int threads);

  // Waits (processing events) until training and both executors' calls are done and answered;
  // for tests, the smoke mode and shutdown. Returns false on timeout.
  bool waitIdle(int timeoutMs);

 signals:
  void trainingStarted(const QString& runDir);
  void trainingMetric(const QString& runDir, const hsm::MetricRecord& record);
  void trainingProgress(const QString& stage, double fraction);
  void trainingLog(const QString& line);
  void trainingPaused(bool paused);
  void trainingFinished(const hsm::TrainSummary& summary);
  void trainingFailed(const QString& runDir, const QString& message);
  void trainingStateChanged();
  // The training run's mixer weights at its start and after every validation.
  void trainingWeights(const QString& runDir, qint64 step, const std::vector<hsm::MixerWeights>& layers);

  void systemInfo(const hsm::SystemInfo& info, const QString& deviceDescription);
  void whatIfChanged(const QString& runDir);

 private:
  QThread trainingThread_;
  TrainingWorker* trainer_ = nullptr;
  std::shared_ptr<WhatIfs> whatIfs_;
  Executor* interactive_ = nullptr;
  Executor* analysis_ = nullptr;
  bool training_ = false, paused_ = false;
  QString trainingRunDir_;
  Reply<WhatIfEvaluation> whatIfEvaluation_;  // the newest, superseded by the next
};

}  // namespace studio
