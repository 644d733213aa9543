#include "gui/engine/engine_host.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>

#include "gui/engine/model_store.h"
#include "gui/engine/session_worker.h"
#include "gui/engine/thread_priority.h"
#include "gui/engine/training_worker.h"

namespace studio {

void register_engine_types() {
  static const bool once = [] {
    qRegisterMetaType<hsm::MetricRecord>();
    qRegisterMetaType<hsm::GeneratedToken>();
    qRegisterMetaType<hsm::GenerationResult>();
    qRegisterMetaType<hsm::TrainSummary>();
    qRegisterMetaType<hsm::RunSpec>();
    qRegisterMetaType<hsm::GenerateOptions>();
    qRegisterMetaType<hsm::SystemInfo>();
    qRegisterMetaType<hsm::Diagnosis>();
    qRegisterMetaType<std::vector<hsm::MixerWeights>>();
    qRegisterMetaType<hsm::Probe>();
    qRegisterMetaType<hsm::AblationReport>();
    qRegisterMetaType<hsm::WhatIf>();
    qRegisterMetaType<studio::WhatIfEvaluation>();
    return true;
  }();
  (void)once;
}

namespace {

// Queues `call` on `worker`'s thread. A lambda the compiler checks: a slot named by a string
// fails only at run time (and leaves the request counted as pending).
template <class Worker, class Call>
void post(Worker* worker, Call call) {
  QMetaObject::invokeMethod(worker, std::move(call), Qt::QueuedConnection);
}

}  // namespace

EngineHost::EngineHost(QObject* parent) : QObject(parent) {
  register_engine_types();
  trainingThread_.setObjectName(QStringLiteral("hsm-training"));
  sessionThread_.setObjectName(QStringLiteral("hsm-session"));
  analysisThread_.setObjectName(QStringLiteral("hsm-analysis"));
  trainer_ = new TrainingWorker;
  // One store for both workers: a run's model is loaded once and shared (model_store.h).
  auto models = std::make_shared<ModelStore>();
  session_ = new SessionWorker(models);
  analysis_ = new SessionWorker(models);
  trainer_->moveToThread(&trainingThread_);
  session_->moveToThread(&sessionThread_);
  analysis_->moveToThread(&analysisThread_);
  connect(&trainingThread_, &QThread::finished, trainer_, &QObject::deleteLater);
  connect(&sessionThread_, &QThread::finished, session_, &QObject::deleteLater);
  connect(&analysisThread_, &QThread::finished, analysis_, &QObject::deleteLater);

  connect(trainer_, &TrainingWorker::started, this, &EngineHost::trainingStarted);
  connect(trainer_, &TrainingWorker::metric, this, &EngineHost::trainingMetric);
  connect(trainer_, &TrainingWorker::progress, this, &EngineHost::trainingProgress);
  connect(trainer_, &TrainingWorker::log, this, &EngineHost::trainingLog);
  connect(trainer_, &TrainingWorker::weights, this, &EngineHost::trainingWeights);
  connect(trainer_, &TrainingWorker::paused, this, [this](bool p) {
    paused_ = p;
    emit trainingPaused(p);
    emit trainingStateChanged();
  });
  connect(trainer_, &TrainingWorker::finished, this, [this](const hsm::TrainSummary& s) {
    training_ = paused_ = false;
    emit trainingFinished(s);
    emit trainingStateChanged();
  });
  connect(trainer_, &TrainingWorker::failed, this, [this](const QString& dir, const QString& message) {
    training_ = paused_ = false;
    emit trainingFailed(dir, message);
    emit trainingStateChanged();
  });

  connect(session_, &SessionWorker::token, this, &EngineHost::token);
  connect(session_, &SessionWorker::generated, this, [this](int id, const hsm::GenerationResult& r) {
    sessionRequestDone();
    emit generated(id, r);
  });
  connect(session_, &SessionWorker::diagnosed, this, [this](int id, const hsm::Diagnosis& d) {
    sessionRequestDone();
    emit diagnosed(id, d);
  });
  connect(session_, &SessionWorker::weights, this, [this](int id, const std::vector<hsm::MixerWeights>& w) {
    sessionRequestDone();
    emit weightsReady(id, w);
  });
  connect(session_, &SessionWorker::failed, this, [this](int id, const QString& message) {
    sessionRequestDone();
    // The engine refused an edit: the run has none now.
    if (const QString dir = whatIfRequests_.take(id); !dir.isEmpty()) {
      whatIfs_.remove(dir);
      emit whatIfChanged(dir);
    }
    emit requestFailed(id, message);
  });
  connect(analysis_, &SessionWorker::failed, this, [this](int id, const QString& message) {
    analysisRequestDone();
    emit requestFailed(id, message);
  });
  connect(session_, &SessionWorker::system, this, &EngineHost::systemInfo);
  connect(session_, &SessionWorker::probed, this, [this](int id, const hsm::Probe& p) {
    sessionRequestDone();
    emit probed(id, p);
  });
  connect(analysis_, &SessionWorker::ablationProgress, this, &EngineHost::ablationProgress);
  connect(analysis_, &SessionWorker::ablated, this, [this](int id, const hsm::AblationReport& r) {
    analysisRequestDone();
    emit ablated(id, r);
  });

  connect(session_, &SessionWorker::whatIfApplied, this, [this](int id) {
    whatIfRequests_.remove(id);
    sessionRequestDone();
  });
  connect(analysis_, &SessionWorker::whatIfEvaluated, this, [this](int id, const WhatIfEvaluation& e) {
    analysisRequestDone();
    emit whatIfEvaluated(id, e);
  });
  connect(session_, &SessionWorker::whatIfSaved, this, [this](int id, const QString& dir) {
    sessionRequestDone();
    emit whatIfSaved(id, dir);
  });

  // The engine threads yield the CPU to the GUI thread (thread_priority.h).
  for (QThread* t : {&trainingThread_, &sessionThread_, &analysisThread_}) {
    connect(t, &QThread::started, t, [] { lower_current_thread_priority(); }, Qt::DirectConnection);
    t->start();
  }
}

EngineHost::~EngineHost() {
  if (training_) trainer_->stop();
  session_->cancel();
  analysis_->cancelAblation();
  analysis_->supersedeWhatIf(-1);  // a what-if evaluation under way stops too
  for (QThread* t : {&trainingThread_, &sessionThread_, &analysisThread_}) t->quit();
  for (QThread* t : {&trainingThread_, &sessionThread_, &analysisThread_}) t->wait();
}

bool EngineHost::startTraining(const hsm::RunSpec& spec) {
  if (training_) return false;
  training_ = true;
  paused_ = false;
  trainingRunDir_ = qstr(spec.run_dir);
  post(trainer_, [w = trainer_, spec] { w->run(spec); });
  emit trainingStateChanged();
  return true;
}

void EngineHost::pauseTraining() {
  if (training_) trainer_->pause();
}

void EngineHost::resumeTraining() {
  if (training_) trainer_->resume();
}

void EngineHost::stopTraining() {
  if (training_) trainer_->stop();
}

int EngineHost::nextSessionRequest() {
  ++pendingSessionRequests_;
  return nextRequest_++;
}

int EngineHost::generate(const QString& runDir, const QString& prompt, const hsm::GenerateOptions& options,
                         bool trained) {
  const int id = nextSessionRequest();
  post(session_, [w = session_, id, runDir, prompt, options, trained] {
    w->generate(id, runDir, prompt, options, trained);
  });
  return id;
}

int EngineHost::setWhatIf(const QString& runDir, const hsm::WhatIf& edits) {
  const QString key = QDir(runDir).absolutePath();
  if (edits.empty())
    whatIfs_.remove(key);
  else
    whatIfs_[key] = edits;
  const int id = nextSessionRequest();
  whatIfRequests_[id] = key;
  post(session_, [w = session_, id, runDir, edits] { w->setWhatIf(id, runDir, edits); });
  emit whatIfChanged(key);
  return id;
}

hsm::WhatIf EngineHost::whatIf(const QString& runDir) const { return whatIfs_.value(QDir(runDir).absolutePath()); }

int EngineHost::evaluateWhatIf(const QString& runDir, const QString& dataPath, const QString& windows,
                               int maxWindows) {
  const int id = nextAnalysisRequest();
  analysis_->supersedeWhatIf(id);  // only the newest edit's loss is wanted
  post(analysis_, [w = analysis_, id, runDir, dataPath, windows, maxWindows, edits = whatIf(runDir)] {
    w->evaluateWhatIf(id, runDir, dataPath, windows, maxWindows, edits);
  });
  return id;
}

int EngineHost::saveWhatIf(const QString& runDir, const QString& newDir) {
  const int id = nextSessionRequest();
  post(session_, [w = session_, id, runDir, newDir] { w->saveWhatIf(id, runDir, newDir); });
  return id;
}

int EngineHost::diagnose(const QString& runDir, const QString& prompt) {
  const int id = nextSessionRequest();
  post(session_, [w = session_, id, runDir, prompt] { w->diagnose(id, runDir, prompt); });
  return id;
}

int EngineHost::requestWeights(const QString& runDir) {
  const int id = nextSessionRequest();
  post(session_, [w = session_, id, runDir] { w->mixerWeights(id, runDir); });
  return id;
}

void EngineHost::cancelGeneration() { session_->cancel(); }

int EngineHost::probe(const QString& runDir, const QString& prompt, const QVector<int>& generated) {
  const int id = nextSessionRequest();
  post(session_, [w = session_, id, runDir, prompt, generated] { w->probe(id, runDir, prompt, generated); });
  return id;
}

int EngineHost::ablate(const QString& runDir, const QString& dataPath, const QString& windows, int maxWindows) {
  const int id = nextAnalysisRequest();
  analysis_->armAblation();
  post(analysis_, [w = analysis_, id, runDir, dataPath, windows, maxWindows, edits = whatIf(runDir)] {
    w->ablate(id, runDir, dataPath, windows, maxWindows, edits);
  });
  return id;
}

void EngineHost::cancelAblation() { analysis_->cancelAblation(); }

void EngineHost::configure(const QString& device, int threads) {
  for (SessionWorker* w : {session_, analysis_}) post(w, [w, device, threads] { w->configure(device, threads); });
  post(session_, [w = session_] { w->querySystem(); });
}

void EngineHost::sessionRequestDone() {
  if (pendingSessionRequests_ > 0) --pendingSessionRequests_;
}

int EngineHost::nextAnalysisRequest() {
  ++pendingAnalysisRequests_;
  return nextRequest_++;
}

void EngineHost::analysisRequestDone() {
  if (pendingAnalysisRequests_ > 0) --pendingAnalysisRequests_;
}

bool EngineHost::waitIdle(int timeoutMs) {
  QElapsedTimer timer;
  timer.start();
  while (training_ || pendingSessionRequests_ > 0 || pendingAnalysisRequests_ > 0) {
    if (timer.elapsed() > timeoutMs) return false;
    QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
    QThread::msleep(2);
  }
  return true;
}

}  // namespace studio
