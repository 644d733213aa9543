#pragma once
// The GUI thread's handle on the engine: starts the training and session threads, sends
// them requests (queued calls) and re-emits their results as signals on the GUI thread.
// Nothing here blocks: every call returns at once.
#include <QObject>
#include <QString>
#include <QVector>
#include <QMap>
#include <QThread>

#include "gui/engine_types.h"

namespace studio {

class TrainingWorker;
class SessionWorker;

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

  // Generation (and diagnosis, below): queued on the session thread; the id comes back with the
  // results. cancelGeneration() ends the one in progress after its current token.
  // trained: the run's trained model even when it has a what-if edit (the Playground's compare).
  int generate(const QString& runDir, const QString& prompt, const hsm::GenerateOptions& options,
               bool trained = false);
  void cancelGeneration();
  // Diagnostics and learned weights of a run's model, queued on the session thread like
  // generate(); answered by diagnosed() / weightsReady() or requestFailed().
  int diagnose(const QString& runDir, const QString& prompt);
  int requestWeights(const QString& runDir);
  bool isGenerating() const { return pendingSessionRequests_ > 0; }
  // Probe (issue 22), queued on the session thread like diagnose(): the logit lens and
  // rollout of a prompt, or, with `generated` token ids, of <|endoftext|>, the prompt and
  // those tokens as generate() fed them (the Playground's provenance); answered by probed().
  int probe(const QString& runDir, const QString& prompt, const QVector<int>& generated = {});
  // Importance by ablation on the validation split of a corpus (Session::ablate), the first
  // maxWindows windows (0: all), of the run's model with its what-if edits; on the analysis
  // thread, so generation goes on meanwhile. ablationProgress() while it runs, then ablated().
  // cancelAblation() stops it between batches (requestFailed() with "cancelled").
  int ablate(const QString& runDir, const QString& dataPath, const QString& windows, int maxWindows);
  void cancelAblation();

  // What-if (issue 23): an edited in-memory copy of a run's model (Session::edited). Requests
  // queued after this one (generate, diagnose, requestWeights, probe, ablate) for that run use
  // the copy; an empty WhatIf drops it (Reset). The run folder is never written. Answered by
  // requestFailed() when the engine refuses the edit (then the run has none).
  int setWhatIf(const QString& runDir, const hsm::WhatIf& edits);
  // The edit the run has (empty: none), as the GUI last set it.
  hsm::WhatIf whatIf(const QString& runDir) const;
  // Validation loss on the first maxWindows windows of the trained and the edited model (the
  // run's edits as whatIf() gives them now), on the analysis thread; the windows are read once
  // per corpus and reused for every edit. A newer call supersedes it: an evaluation under way
  // stops between batches and one still queued is skipped (requestFailed() with "cancelled").
  // Answered by whatIfEvaluated() (or requestFailed()).
  int evaluateWhatIf(const QString& runDir, const QString& dataPath, const QString& windows, int maxWindows);
  // "Save as…": the edited model as a new run folder (refuses a non-empty one); whatIfSaved().
  int saveWhatIf(const QString& runDir, const QString& newDir);

  // Device ("auto", "cpu", "cuda", "cuda:N") and CPU threads (0 = the engine's default)
  // for models loaded from now on; the status bar hears back through systemInfo().
  void configure(const QString& device, int threads);

  // Waits (processing events) until training, session and analysis work are done; for tests, the
  // smoke mode and shutdown. Returns false on timeout.
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

  void token(int request, const hsm::GeneratedToken& token);
  void generated(int request, const hsm::GenerationResult& result);
  void requestFailed(int request, const QString& message);
  void diagnosed(int request, const hsm::Diagnosis& diagnosis);
  void weightsReady(int request, const std::vector<hsm::MixerWeights>& layers);
  void systemInfo(const hsm::SystemInfo& info, const QString& deviceDescription);
  void probed(int request, const hsm::Probe& probe);
  void ablationProgress(int request, const QString& stage, double fraction);
  void ablated(int request, const hsm::AblationReport& report);
  void whatIfChanged(const QString& runDir);
  void whatIfEvaluated(int request, const studio::WhatIfEvaluation& evaluation);
  void whatIfSaved(int request, const QString& newDir);

 private:
  int nextSessionRequest();
  void sessionRequestDone();
  int nextAnalysisRequest();
  void analysisRequestDone();

  // Three engine threads: training; the session (generation, diagnosis, probes, weights, the
  // what-if copies they use); analysis (ablation and what-if losses, the long evaluations,
  // which carry the run's edits with them), so a generation never waits behind an ablation.
  QThread trainingThread_, sessionThread_, analysisThread_;
  TrainingWorker* trainer_ = nullptr;
  SessionWorker* session_ = nullptr;
  SessionWorker* analysis_ = nullptr;
  bool training_ = false, paused_ = false;
  QString trainingRunDir_;
  int nextRequest_ = 1;
  int pendingSessionRequests_ = 0;
  int pendingAnalysisRequests_ = 0;
  QMap<QString, hsm::WhatIf> whatIfs_;  // by absolute run folder
  QMap<int, QString> whatIfRequests_;   // setWhatIf requests in flight: their run folder
};

}  // namespace studio
